import { z } from 'zod';
import { proposeMove } from '#src/approvals/service.ts';
import { proposalOut, toProposal } from '#src/approvals/view.ts';
import { pageOf, pageQuery } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { idIn } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { adminInflowOut, toAdminInflow } from './admin.schemas.ts';
import { returnReference, settlementMoves } from './moves.ts';
import { inflowsNeedingAttention } from './operator.ts';

/**
 * `admin.settlement.*`: the operators' view of money that needs a decision, and the decisions
 * (product decisions §7). Unlike the merchant API, it shows payer identity. Amounts are decimal
 * strings: tRPC clients parse JSON numbers into floats. The decisions that move money are
 * proposals (src/approvals): their note stays on the proposal and in the audit trail, never on
 * the merchant's timeline, whose rows name the operator and the approval instead.
 */

const note = z.string().trim().min(1).max(1000);

/** Mounted as `admin.settlement` in `src/router.ts`. */
export const settlementAdminRouter = router({
  /**
   * HELD and UNMATCHED inflows still waiting for a decision, oldest first. `unattributed: true`
   * lists the INFLOWS_UNMATCHED queue (money no payout took); without it, the money held against
   * the payouts of PAYOUTS_HELD_UNDERPAID too.
   */
  inflows: adminProcedure
    .meta({ lagTolerant: true })
    .input(
      pageQuery
        .extend({
          tenant_id: z.uuid().optional(),
          state: z.enum(['HELD', 'UNMATCHED']).optional(),
          unattributed: z.boolean().optional(),
        })
        .strict()
        .default({ limit: 20 }),
    )
    .output(pageOf(adminInflowOut))
    .query(async ({ ctx, input }) => {
      const page = await inflowsNeedingAttention(
        ctx.em,
        { tenantId: input.tenant_id, state: input.state, unattributed: input.unattributed },
        { limit: input.limit, cursor: input.cursor, cursorKey: ctx.deps.secrets.cursorKey },
      );
      return { data: page.items.map((r) => toAdminInflow(r.inflow, r.accountPayoutId)), meta: page.meta };
    }),

  /**
   * Proposes attributing an undecided inflow to a PENDING_PAYMENT payout of the same tenant and
   * currency; it runs once a second operator approves (at once with FOUR_EYES=false).
   */
  attribute: adminProcedure
    .meta({ role: 'operator' })
    .input(
      z.strictObject({
        inflow_id: idIn,
        payout_id: idIn,
        note,
      }),
    )
    .output(proposalOut)
    .mutation(async ({ ctx, input }) => {
      const { note: why, ...args } = input;
      return toProposal(ctx.em, await proposeMove(ctx, settlementMoves['inflow.attribute'], args, why));
    }),

  /**
   * Proposes failing a payout held for review: once approved, the inflows held against it go
   * FOR_REFUND at once, and its refund follows from the refunds job.
   */
  failPayout: adminProcedure
    .meta({ role: 'operator' })
    .input(z.strictObject({ payout_id: idIn, note }))
    .output(proposalOut)
    .mutation(async ({ ctx, input }) => {
      const { note: why, ...args } = input;
      return toProposal(ctx.em, await proposeMove(ctx, settlementMoves['payout.fail'], args, why));
    }),

  /**
   * Proposes recording that undecided money was sent back to the merchant outside the service,
   * with the return's bank reference or transaction hash as evidence, kept on the inflow.
   */
  returnInflow: adminProcedure
    .meta({ role: 'operator' })
    .input(z.strictObject({ inflow_id: idIn, reference: returnReference, note }))
    .output(proposalOut)
    .mutation(async ({ ctx, input }) => {
      const { note: why, ...args } = input;
      return toProposal(ctx.em, await proposeMove(ctx, settlementMoves['inflow.return'], args, why));
    }),
});
