import { z } from 'zod';
import { findForTenant } from '#src/db/lookup.ts';
import { merchantProcedure } from '#src/http/procedures.ts';
import { idParam } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { Outflow } from './entities.ts';
import { outflowOut, toOutflowResource } from './resource.ts';

export const outflowsRouter = router({
  get: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/outflows/{id}',
        operationId: 'getOutflow',
        tags: ['Payouts'],
        summary: 'One dispatch attempt',
      },
      scope: 'payouts:read',
      errors: ['OUTFLOW_NOT_FOUND'],
    })
    .input(z.strictObject({ id: idParam }))
    .output(outflowOut)
    .query(async ({ ctx, input }) =>
      toOutflowResource(
        await findForTenant(ctx.em, Outflow, {
          id: input.id,
          tenantId: ctx.principal.tenant.id,
          notFound: 'OUTFLOW_NOT_FOUND',
        }),
      ),
    ),
});
