import { z } from 'zod';
import { withChainName } from '#src/corridors/corridors.ts';
import { merchantProcedure } from '#src/http/procedures.ts';
import { router } from '#src/http/trpc.ts';
import { refundDestinationIn, refundDestinationOut, toRefundDestinationOut } from './schemas.ts';
import { listActiveRefundDestinations, prepareDestination, replaceRefundDestination } from './service.ts';

export const refundDestinationsRouter = router({
  set: merchantProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/v1/refund-destinations',
        operationId: 'setRefundDestination',
        tags: ['Refund destinations'],
        summary: 'Set the refund destination of a currency',
        description:
          'NGN: a Nigerian bank account, verified by name enquiry before anything is saved (422 ' +
          'BANK_ACCOUNT_VERIFICATION_FAILED otherwise). USDT: a TRON or BSC address, never verified. ' +
          'Setting again for the same currency replaces the destination.',
      },
      scope: 'refunds:manage',
      idempotent: true,
      // TRC20 and TRON (BEP20 and BSC) are one network: the same request, whichever it names.
      comparable: (raw) => withChainName(raw, 'network'),
      errors: ['BANK_ACCOUNT_VERIFICATION_FAILED', 'UPSTREAM_UNAVAILABLE'],
    })
    .input(refundDestinationIn)
    .output(refundDestinationOut)
    .mutation(async ({ ctx, input }) => {
      const values = await prepareDestination(ctx.deps, input);
      const tenantId = ctx.principal.tenant.id;
      let replacedId: string | null = null;
      const out = await ctx.commit(async (em) => {
        const { destination, replaced } = await replaceRefundDestination(em, tenantId, values);
        replacedId = replaced?.id ?? null;
        return toRefundDestinationOut(destination);
      });
      ctx.log.info(
        {
          tenant_id: tenantId,
          refund_destination_id: out.id,
          currency: out.currency,
          replaced_id: replacedId,
        },
        'refund destination set',
      );
      return out;
    }),

  list: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/refund-destinations',
        operationId: 'listRefundDestinations',
        tags: ['Refund destinations'],
        summary: 'List the active refund destinations',
        description: 'At most one per currency; replaced destinations are not listed. Always masked.',
      },
      scope: 'refunds:read',
    })
    .input(z.strictObject({}))
    .output(z.array(refundDestinationOut))
    .query(async ({ ctx }) => {
      const rows = await listActiveRefundDestinations(ctx.em, ctx.principal.tenant.id);
      return rows.map(toRefundDestinationOut);
    }),
});
