import { z } from 'zod';
import { proposeMove } from '#src/approvals/service.ts';
import { proposalOut, toProposal } from '#src/approvals/view.ts';
import { pageOf, pageQuery } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { idIn, iso, moneyJson, moneyOut, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { adminRefundOut, refundMoves, toAdminRefund } from './moves.ts';
import { listFailedRefunds, listHeldPayouts } from './service.ts';

const heldPayoutOut = z.object({
  payout_id: z.string(),
  tenant_id: z.string(),
  settlement_currency: z.string(),
  received_amount: moneyOut,
  failure_code: z.string().nullable(),
  failed_at: timestampOut,
  /** True when the tenant has registered a destination since: `admin.refunds.raise` can refund it now. */
  refund_destination_active: z.boolean(),
});

const note = z.string().trim().min(1).max(1000);

const listInput = pageQuery.extend({ tenant_id: z.uuid().optional() }).strict().default({ limit: 20 });

/** `admin.refunds.*`: the operators' refund tools, used by the admin CLI. */
export const refundAdminRouter = router({
  refunds: router({
    /**
     * Proposes retrying a FAILED refund after the merchant corrected its destination (same refund,
     * next attempt); it runs once a second operator approves (at once with FOUR_EYES=false).
     */
    retry: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ refund_id: idIn, note }))
      .output(proposalOut)
      .mutation(async ({ ctx, input }) => {
        const { note: why, ...args } = input;
        return toProposal(ctx.em, await proposeMove(ctx, refundMoves['refund.retry'], args, why));
      }),

    /** FAILED refunds, oldest first. */
    failed: adminProcedure
      .meta({ lagTolerant: true })
      .input(listInput)
      .output(pageOf(adminRefundOut))
      .query(async ({ ctx, input }) => {
        const page = await listFailedRefunds(
          ctx.em,
          { tenantId: input.tenant_id },
          { ...input, cursorKey: ctx.deps.secrets.cursorKey },
        );
        return { data: page.items.map(toAdminRefund), meta: page.meta };
      }),

    /** FAILED payouts that received money and hold it without a refund. */
    held: adminProcedure
      .meta({ lagTolerant: true })
      .input(listInput)
      .output(pageOf(heldPayoutOut))
      .query(async ({ ctx, input }) => {
        const page = await listHeldPayouts(
          ctx.em,
          { tenantId: input.tenant_id },
          { ...input, cursorKey: ctx.deps.secrets.cursorKey },
        );
        const data = page.items.map(({ payout, destinationActive }) => ({
          payout_id: payout.id,
          tenant_id: payout.tenant.id,
          settlement_currency: payout.settlementCurrency,
          received_amount: moneyJson(payout.receivedAmount),
          failure_code:
            (payout.snapshot.context as { failure?: { code?: string } | null } | undefined)?.failure?.code ??
            null,
          failed_at: iso(payout.updatedAt),
          refund_destination_active: destinationActive,
        }));
        return { data, meta: page.meta };
      }),

    /**
     * Proposes raising the refund of a held payout (FAILED, money received, no refund) once its
     * tenant has an active destination for the currency; it runs once a second operator approves
     * (at once with FOUR_EYES=false), and the approved proposal's result holds the refund.
     */
    raise: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ payout_id: z.uuid(), note }))
      .output(proposalOut)
      .mutation(async ({ ctx, input }) => {
        const { note: why, ...args } = input;
        return toProposal(ctx.em, await proposeMove(ctx, refundMoves['refund.raise'], args, why));
      }),

    /**
     * Proposes returning the overpayment a SUCCESSFUL payout set aside to the merchant's active
     * refund destination (a refund of kind OVERPAYMENT); it runs once a second operator approves
     * (at once with FOUR_EYES=false), and the approved proposal's result holds the refund.
     */
    returnOverpayment: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ payout_id: z.uuid(), note }))
      .output(proposalOut)
      .mutation(async ({ ctx, input }) => {
        const { note: why, ...args } = input;
        return toProposal(ctx.em, await proposeMove(ctx, refundMoves['overpayment.return'], args, why));
      }),
  }),
});
