import { z } from 'zod';
import { AppError } from '#src/http/errors.ts';
import { listName, pageOf, pageQuery } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { idIn } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { isUuid } from '#src/lib/ids.ts';
import { payeeMoves } from '#src/payees/moves.ts';
import { reconMoves } from '#src/reconciliation/breaks.ts';
import { refundMoves } from '#src/refunds/moves.ts';
import { settlementMoves } from '#src/settlement/moves.ts';
import { APPROVAL_STATUSES, Approval, MONEY_MOVES, type MoneyMove } from './entities.ts';
import type { MoneyMoveDef } from './moves.ts';
import { approveMove, listApprovals, rejectMove } from './service.ts';
import { approvalOut, toApprovalViews } from './view.ts';

/** Every money move that needs four eyes, by the name proposals carry. */
export const MONEY_MOVE_DEFS: Readonly<Record<MoneyMove, MoneyMoveDef>> = {
  ...settlementMoves,
  ...refundMoves,
  ...reconMoves,
  ...payeeMoves,
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
            action: z.enum(MONEY_MOVES).optional(),
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
});
