import { z } from 'zod';
import { AppError } from '#src/http/errors.ts';
import { listName, pageOf, pageQuery } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { idIn } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { isUuid } from '#src/lib/ids.ts';
import { roleChanges } from '#src/operators/role-change.ts';
import { payeeMoves } from '#src/payees/moves.ts';
import { reconMoves } from '#src/reconciliation/breaks.ts';
import { refundMoves } from '#src/refunds/moves.ts';
import { settlementMoves } from '#src/settlement/moves.ts';
import {
  APPROVAL_ACTIONS,
  APPROVAL_STATUSES,
  Approval,
  type ApprovalAction,
  MONEY_MOVES,
} from './entities.ts';
import type { MoneyMoveDef } from './moves.ts';
import { RULE_ROLES, ruleChanges, ruleOut, ruleView } from './rule-changes.ts';
import { DEFAULT_REQUIREMENT, rulesInForce } from './rules.ts';
import { approveMove, listApprovals, proposeMove, rejectMove } from './service.ts';
import { approvalOut, proposalOut, toApprovalViews, toProposal } from './view.ts';

/** Everything a proposal can be of (money moves, rule changes, role raises), by the name proposals carry. */
export const MONEY_MOVE_DEFS: Readonly<Record<ApprovalAction, MoneyMoveDef>> = {
  ...settlementMoves,
  ...refundMoves,
  ...reconMoves,
  ...payeeMoves,
  ...ruleChanges,
  ...roleChanges,
};

const approvalId = z.string().min(1).max(64);
const note = z.string().trim().min(1).max(1000);

/**
 * `admin.approvals.*`: proposals of money moves (four eyes). Anyone may read them; an approver
 * or admin other than the proposer approves (the move runs then) or rejects them.
 */
export const approvalsAdminRouter = router({
  approvals: router({
    /**
     * Proposals, newest first; `state: 'PENDING'` is the queue of decisions waiting, `decided`
     * true every proposal no longer pending, `proposer_id` one operator's proposals.
     */
    list: adminProcedure
      .meta({ lagTolerant: true })
      .input(
        pageQuery
          .extend({
            state: z.enum(APPROVAL_STATUSES).optional(),
            action: z.enum(APPROVAL_ACTIONS).optional(),
            target_id: idIn.optional(),
            decided: z.boolean().optional(),
            proposer_id: z.uuid().optional(),
          })
          .strict()
          .default({ limit: 20 }),
      )
      .output(pageOf(approvalOut))
      .query(async ({ ctx, input }) => {
        const filter = {
          state: input.state,
          decided: input.decided,
          action: input.action,
          targetId: input.target_id,
          proposerId: input.proposer_id,
        };
        const page = await listApprovals(ctx.em, filter, {
          list: listName('admin:approvals', filter),
          limit: input.limit,
          cursor: input.cursor,
          cursorKey: ctx.deps.secrets.cursorKey,
        });
        return { data: await toApprovalViews(ctx.em, page.items), meta: page.meta };
      }),

    /** One proposal. */
    get: adminProcedure
      .input(z.strictObject({ approval_id: approvalId }))
      .output(approvalOut)
      .query(async ({ ctx, input }) => {
        const approval = isUuid(input.approval_id) ? await ctx.em.findOne(Approval, input.approval_id) : null;
        if (!approval) throw new AppError('APPROVAL_NOT_FOUND');
        return (await toApprovalViews(ctx.em, [approval]))[0]!;
      }),

    /**
     * Approves another operator's proposal: its move runs now, in this transaction, with every
     * check it has. Refused moves answer APPROVAL_ACTION_FAILED and leave the proposal FAILED.
     */
    approve: adminProcedure
      .meta({ role: 'approver' })
      .input(z.strictObject({ approval_id: approvalId, note: note.optional() }))
      .output(approvalOut)
      .mutation(async ({ ctx, input }) => {
        const approved = await approveMove(ctx, MONEY_MOVE_DEFS, input.approval_id, input.note);
        return (await toApprovalViews(ctx.em, [approved]))[0]!;
      }),

    /**
     * Rejects a proposal, with a note saying why; nothing moves. An approver or admin other than
     * the proposer rejects it; its proposer, whatever the role, may withdraw it this way.
     */
    reject: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ approval_id: approvalId, note }))
      .output(approvalOut)
      .mutation(async ({ ctx, input }) => {
        const rejected = await rejectMove(ctx, input.approval_id, input.note);
        return (await toApprovalViews(ctx.em, [rejected]))[0]!;
      }),
  }),

  approvalRules: router({
    /**
     * The approval rules in force, by action then threshold, after the built-in default of each
     * action (one approver or admin; `id` null). The strictest rule matching a proposal applies.
     */
    list: adminProcedure
      .meta({ role: 'viewer', lagTolerant: true })
      .input(z.strictObject({ action: z.enum(MONEY_MOVES).optional() }).default({}))
      .output(z.object({ data: z.array(ruleOut) }))
      .query(async ({ ctx, input }) => {
        const defaults = MONEY_MOVES.filter((a) => !input.action || a === input.action).map((action) => ({
          id: null,
          action,
          above: null,
          currency: null,
          approvers: DEFAULT_REQUIREMENT.approvers,
          roles: [...DEFAULT_REQUIREMENT.roles],
          approval_id: null,
          created_at: null,
        }));
        return { data: [...defaults, ...(await rulesInForce(ctx.em, input.action)).map(ruleView)] };
      }),

    /**
     * Proposes a rule, or a change of the rule with the same action, currency and threshold: a
     * proposal (`approval_rule.set`) another admin approves. It applies to proposals made after.
     */
    propose: adminProcedure
      .meta({ role: 'admin' })
      .input(
        z.strictObject({
          action: z.enum(MONEY_MOVES),
          above: z.string().max(32).optional(),
          currency: z.string().max(8).optional(),
          approvers: z.number().int().min(1).max(3),
          roles: z.array(z.enum(RULE_ROLES)).min(1).max(2).optional(),
          note: note.optional(),
        }),
      )
      .output(proposalOut)
      .mutation(async ({ ctx, input }) => {
        const { note: why, ...rule } = input;
        const args = {
          action: rule.action,
          above: rule.above ?? null,
          currency: rule.currency?.toUpperCase() ?? null,
          approvers: rule.approvers,
          roles: rule.roles ?? ['approver', 'admin'],
        };
        const said =
          why ??
          `approval rule: ${rule.action}${args.above ? ` above ${args.above} ${args.currency}` : ''} needs ${rule.approvers} approver(s)`;
        return toProposal(ctx.em, await proposeMove(ctx, ruleChanges['approval_rule.set'], args, said));
      }),
  }),
});
