import { z } from 'zod';
import { invalidField } from '#src/http/errors.ts';
import { newId } from '#src/lib/ids.ts';
import { Decimal, isCurrency } from '#src/lib/money.ts';
import { MONEY_MOVES } from './entities.ts';
import { moneyMove } from './moves.ts';
import { ApprovalRule, ruleKey, rulesInForce } from './rules.ts';

/** The roles a rule may let approve: four eyes never rest on an operator below approver. */
export const RULE_ROLES = ['approver', 'admin'] as const;

/** What `approval-rule propose` takes. */
export const ruleArgs = z
  .strictObject({
    action: z.enum(MONEY_MOVES),
    above: z
      .string()
      .regex(/^\d{1,15}(\.\d{1,8})?$/, 'must be a decimal amount such as 1000 or 1000.50')
      .nullable()
      .default(null),
    currency: z.string().nullable().default(null),
    approvers: z.number().int().min(1).max(3),
    roles: z.array(z.enum(RULE_ROLES)).min(1).max(2).default(['approver', 'admin']),
  })
  .superRefine((a, ctx) => {
    if ((a.above === null) !== (a.currency === null)) {
      ctx.addIssue({ code: 'custom', path: ['currency'], message: 'goes with above: give both or neither' });
    }
    if (a.currency !== null && !isCurrency(a.currency)) {
      ctx.addIssue({ code: 'custom', path: ['currency'], message: 'is not a currency this service knows' });
    }
  });
export type RuleArgs = z.output<typeof ruleArgs>;

const describeRule = (r: { approvers: number; roles: readonly string[] }) =>
  `${r.approvers} approver${r.approvers === 1 ? '' : 's'} (${r.roles.join(', ')})`;

/**
 * `approval_rule.set`: makes a rule, or changes the one with the same action, currency and
 * threshold. Proposed by an admin, approved by another; it applies to proposals made after it.
 */
export const ruleChanges = {
  'approval_rule.set': moneyMove({
    action: 'approval_rule.set',
    args: ruleArgs as unknown as z.ZodType<RuleArgs>,
    targets: (a) => [ruleKey(a.action, a.above, a.currency)],
    stake: async (em, a) => {
      const key = ruleKey(a.action, a.above, a.currency);
      const current = (await rulesInForce(em, a.action)).find(
        (r) => ruleKey(r.action, r.aboveAmount?.toString() ?? null, r.currency ?? null) === key,
      );
      return {
        tenantId: null,
        amount: a.above,
        currency: a.currency,
        targetState: current ? `in force: ${describeRule(current)}` : 'no such rule yet',
      };
    },
    run: async (em, _deps, { args, actor, now }) => {
      if (args.roles.length !== new Set(args.roles).size) throw invalidField('roles', 'names a role twice');
      const rule = em.create(ApprovalRule, {
        id: newId(),
        action: args.action,
        aboveAmount: args.above === null ? null : new Decimal(args.above),
        currency: args.currency,
        approvers: args.approvers,
        roles: [...args.roles],
        approvalId: actor.approvalId,
        createdAt: now,
      });
      await em.flush();
      return { rule: ruleView(rule) };
    },
  }),
};

/** A rule as `approval-rule list` and the console show it. */
export const ruleOut = z.object({
  id: z.string().nullable(),
  action: z.string(),
  above: z.string().nullable(),
  currency: z.string().nullable(),
  approvers: z.number().int(),
  roles: z.array(z.string()),
  /** The proposal whose approval set it; null for the built-in default. */
  approval_id: z.string().nullable(),
  created_at: z.string().nullable(),
});

export function ruleView(r: ApprovalRule): z.output<typeof ruleOut> {
  return {
    id: r.id,
    action: r.action,
    above: r.aboveAmount ? r.aboveAmount.toFixed() : null,
    currency: r.currency ?? null,
    approvers: r.approvers,
    roles: r.roles,
    approval_id: r.approvalId,
    created_at: r.createdAt.toISOString(),
  };
}
