import { defineEntity, type EntityManager, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, money } from '#src/db/columns.ts';
import { Decimal } from '#src/lib/money.ts';
import type { Role } from '#src/operators/roles.ts';
import type { Stake } from './stakes.ts';

/**
 * Approval rules (issue 25 §2): how many distinct approvers a money move needs, and with which
 * roles, optionally only above an amount in a currency. The strictest rule that matches a proposal
 * applies (the most approvers; among equals, the fewest roles), and it is written onto the
 * proposal when it is made, so a rule changed later applies only to proposals made after it.
 * Without a stored rule, a move needs one approver or admin: the behaviour before rules.
 *
 * A rule is identified by its action, currency and threshold; setting it again supersedes it (the
 * rows are kept: the latest is in force). Rules change only through a proposal another admin
 * approves (`approval_rule.set`).
 *
 * How amounts compare: in the rule's currency. A move's amount in another currency is converted at
 * the locked rate of the payout the money belongs to, when the rule's currency is that payout's
 * destination currency; an amount that cannot be converted so is treated as above the threshold
 * (the rule applies), so a rule is never escaped by a currency it does not name.
 */
export const ApprovalRule = defineEntity({
  name: 'ApprovalRule',
  tableName: 'approval_rules',
  properties: {
    id: idColumn(),
    action: p.string().length(64),
    aboveAmount: money().nullable(),
    currency: p.string().length(8).nullable(),
    approvers: p.integer(),
    roles: p.array().$type<string[]>(),
    /** The proposal whose approval set it. */
    approvalId: p.uuid(),
    createdAt: p.datetime(),
  },
});
export type ApprovalRule = InferEntity<typeof ApprovalRule>;

/** What a proposal needs: how many distinct approvers, of which roles, and the rule that says so. */
export interface Requirement {
  approvers: number;
  roles: Role[];
  ruleId: string | null;
}

/** The behaviour without rules: one approver or admin other than the proposer. */
export const DEFAULT_REQUIREMENT: Requirement = { approvers: 1, roles: ['approver', 'admin'], ruleId: null };

/** Rules in force: the latest of each (action, currency, threshold), by action then threshold. */
export async function rulesInForce(em: EntityManager, action?: string): Promise<ApprovalRule[]> {
  const rows = await em.find(ApprovalRule, action ? { action } : {}, {
    // Read, not managed: the caller's unit of work (a proposal's) holds only what it writes.
    orderBy: { createdAt: 'desc', id: 'desc' },
    disableIdentityMap: true,
  });
  const seen = new Set<string>();
  const latest: ApprovalRule[] = [];
  for (const r of rows) {
    const key = ruleKey(r.action, r.aboveAmount?.toString() ?? null, r.currency ?? null);
    if (seen.has(key)) continue;
    seen.add(key);
    latest.push(r);
  }
  return latest.sort(
    (a, b) => a.action.localeCompare(b.action) || (a.aboveAmount?.comparedTo(b.aboveAmount ?? 0) ?? -1),
  );
}

/** The identity of a rule: what a later rule with the same action, currency and threshold replaces. */
export function ruleKey(action: string, above: string | null, currency: string | null): string {
  return `rule:${action}:${currency ?? '*'}:${above === null ? '*' : new Decimal(above).toFixed()}`;
}

/** `stake.amount` in `currency`, or null when it cannot be converted (see the module's comment). */
function amountIn(stake: Stake, currency: string): Decimal | null {
  if (stake.amount === null || stake.currency === null) return null;
  const amount = new Decimal(stake.amount);
  if (stake.currency === currency) return amount;
  if (stake.rateCurrency === currency && stake.rate) return amount.times(stake.rate);
  return null;
}

/** Whether `rule` applies to a move with `stake`. */
export function ruleMatches(rule: Pick<ApprovalRule, 'aboveAmount' | 'currency'>, stake: Stake): boolean {
  if (!rule.aboveAmount || !rule.currency) return true;
  const amount = amountIn(stake, rule.currency);
  return amount === null || amount.gt(rule.aboveAmount.toString());
}

/** The strictest of the default and the rules of `action` that match `stake`. */
export async function requirementFor(em: EntityManager, action: string, stake: Stake): Promise<Requirement> {
  let strictest = DEFAULT_REQUIREMENT;
  for (const rule of await rulesInForce(em, action)) {
    if (!ruleMatches(rule, stake)) continue;
    const stricter =
      rule.approvers > strictest.approvers ||
      (rule.approvers === strictest.approvers && rule.roles.length < strictest.roles.length);
    if (stricter) strictest = { approvers: rule.approvers, roles: rule.roles as Role[], ruleId: rule.id };
  }
  return strictest;
}
