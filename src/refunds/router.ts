import { z } from 'zod';
import { findForTenant } from '#src/db/lookup.ts';
import { listName, pageOf, pageQuery, paginate } from '#src/http/pagination.ts';
import { merchantProcedure } from '#src/http/procedures.ts';
import { idParam } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { Refund } from './entities.ts';
import { REFUND_STATUSES, refundOut, toRefundResource } from './resource.ts';

export const refundsRouter = router({
  list: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/refunds',
        operationId: 'listRefunds',
        tags: ['Refunds'],
        summary: 'Refunds, newest first, optionally by status',
      },
      scope: 'refunds:read',
    })
    .input(
      pageQuery
        .extend({ status: z.enum(REFUND_STATUSES).optional().describe('Only refunds in this status.') })
        .strict(),
    )
    .output(pageOf(refundOut))
    .query(async ({ ctx, input }) => {
      const tenantId = ctx.principal.tenant.id;
      return ctx.deps.reads.read(tenantId, async ({ em }) => {
        const page = await paginate(em, Refund, {
          where: { tenant: tenantId, ...(input.status ? { status: input.status } : {}) },
          list: listName('refunds', { status: input.status }),
          limit: input.limit,
          cursor: input.cursor,
          cursorKey: ctx.deps.secrets.cursorKey,
        });
        return { data: page.items.map(toRefundResource), meta: page.meta };
      });
    }),

  get: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/refunds/{id}',
        operationId: 'getRefund',
        tags: ['Refunds'],
        summary: 'One refund',
      },
      scope: 'refunds:read',
      errors: ['REFUND_NOT_FOUND'],
    })
    .input(z.strictObject({ id: idParam }))
    .output(refundOut)
    .query(async ({ ctx, input }) =>
      toRefundResource(
        await findForTenant(ctx.em, Refund, {
          id: input.id,
          tenantId: ctx.principal.tenant.id,
          notFound: 'REFUND_NOT_FOUND',
        }),
      ),
    ),
});
