import { z } from 'zod';
import { proposeMove } from '#src/approvals/service.ts';
import { proposalOut, toProposal } from '#src/approvals/view.ts';
import {
  type OverpaymentToReturnRow,
  overpaymentsToReturnPage,
  queuePage,
} from '#src/compliance/exceptions.ts';
import { toDate } from '#src/db/sql.ts';
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

/** A successful payout whose overpayment is set aside, owed back to its merchant (PAYOUTS_OVERPAYMENT_TO_RETURN). */
const overpaymentToReturnOut = z.object({
  payout_id: z.string(),
  tenant_id: z.string(),
  settlement_currency: z.string(),
  settlement_network: z.string().nullable(),
  /** What the merchant was told to pay. */
  settlement_amount: moneyOut,
  /** What it paid. */
  received_amount: moneyOut,
  /** The excess set aside when the payout succeeded: what `admin.refunds.returnOverpayment` returns, less the rail's refund fee. */
  overpayment_amount: moneyOut,
  created_at: timestampOut,
  /** When the payout succeeded and set the excess aside: since when it is owed. */
  succeeded_at: timestampOut,
  /** True when the tenant has an active refund destination for the currency: the return can be proposed now. */
  refund_destination_active: z.boolean(),
});

const toOverpaymentToReturn = (r: OverpaymentToReturnRow): z.output<typeof overpaymentToReturnOut> => ({
  payout_id: r.id,
  tenant_id: r.tenant_id,
  settlement_currency: r.settlement_currency,
  settlement_network: r.settlement_network,
  settlement_amount: moneyJson(r.settlement_amount),
  received_amount: moneyJson(r.received_amount),
  overpayment_amount: moneyJson(r.overpayment_amount),
  created_at: iso(toDate(r.created_at)),
  succeeded_at: iso(toDate(r.succeeded_at)),
  refund_destination_active: r.refund_destination_active,
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

    /**
     * Successful payouts whose overpayment is still set aside, owed back to the merchant, oldest
     * first, one row per payout: the Exceptions queue PAYOUTS_OVERPAYMENT_TO_RETURN, read in page
     * order from its partial index.
     */
    overpayments: adminProcedure
      .meta({ role: 'viewer', lagTolerant: true })
      .input(pageQuery.strict().default({ limit: 20 }))
      .output(pageOf(overpaymentToReturnOut))
      .query(async ({ ctx, input }) => {
        const page = await queuePage<OverpaymentToReturnRow>(
          ctx.deps,
          overpaymentsToReturnPage,
          { list: 'admin:refunds:overpayments:asc', ...input },
          ctx.readSql,
        );
        return { data: page.items.map(toOverpaymentToReturn), meta: page.meta };
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
