import { z } from 'zod';
import { pageOf, pageQuery } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { iso, moneyJson, moneyOut, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import type { Refund } from './entities.ts';
import { refundOut, toRefundResource } from './resource.ts';
import { listFailedRefunds, listHeldPayouts, raiseRefund, retryRefund } from './service.ts';

/** A refund as operators see it: the merchant's view plus the tenant and the failure context. */
const adminRefundOut = refundOut.extend({ tenant_id: z.string() });
const toAdminRefund = (r: Refund) => ({ ...toRefundResource(r), tenant_id: r.tenant.id });

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

const listInput = pageQuery.extend({ tenant_id: z.uuid().optional() }).strict().default({ limit: 20 });

/** `admin.refunds.*`: the operators' refund tools, used by the admin CLI. */
export const refundAdminRouter = router({
  refunds: router({
    /** Retries a FAILED refund after the merchant corrected its destination (same refund, next attempt). */
    retry: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ refund_id: z.string().min(1).max(64) }))
      .output(adminRefundOut)
      .mutation(async ({ ctx, input }) => toAdminRefund(await retryRefund(ctx.deps, input.refund_id))),

    /** FAILED refunds, oldest first. */
    failed: adminProcedure
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

    /** Raises the refund of a held payout once its tenant has a destination (idempotent). */
    raise: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ payout_id: z.uuid() }))
      .output(
        z.object({
          outcome: z.enum(['RAISED', 'ALREADY_RAISED', 'NO_DESTINATION', 'NOT_ELIGIBLE']),
          refund_id: z.string().nullable(),
          reason: z.string().nullable(),
        }),
      )
      .mutation(async ({ ctx, input }) => {
        const outcome = await raiseRefund(ctx.deps, input.payout_id);
        if (outcome.kind === 'RAISED') ctx.deps.jobs?.kick('refunds');
        return {
          outcome: outcome.kind,
          refund_id:
            outcome.kind === 'RAISED'
              ? outcome.refund.id
              : outcome.kind === 'ALREADY_RAISED'
                ? outcome.refundId
                : null,
          reason: outcome.kind === 'NOT_ELIGIBLE' ? outcome.reason : null,
        };
      }),
  }),
});
