import { z } from 'zod';
import { findForTenant } from '#src/db/lookup.ts';
import { booleanFilter, listName, pageOf, pageQuery, paginate } from '#src/http/pagination.ts';
import { merchantProcedure } from '#src/http/procedures.ts';
import { idParam } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { Inflow } from './entities.ts';
import { inflowOut, toInflowResource } from './resource.ts';

export const inflowsRouter = router({
  list: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/inflows',
        operationId: 'listInflows',
        tags: ['Inflows'],
        summary: 'Settlements received, newest first, optionally by is_matched',
        description:
          'is_matched=false lists the money not (yet) matched to a payout: awaiting confirmations, held or unmatched. ' +
          'A cursor pages only the filter it was issued with.',
      },
      scope: 'inflows:read',
    })
    .input(
      pageQuery
        .extend({
          is_matched: booleanFilter
            .optional()
            .describe('Only inflows matched (true) or not matched (false) to a payout.'),
        })
        .strict(),
    )
    .output(pageOf(inflowOut))
    .query(async ({ ctx, input }) => {
      const tenantId = ctx.principal.tenant.id;
      return ctx.deps.reads.read(tenantId, async ({ em }) => {
        const page = await paginate(em, Inflow, {
          where: {
            tenant: tenantId,
            ...(input.is_matched === undefined ? {} : { isMatched: input.is_matched }),
          },
          list: listName('inflows', { is_matched: input.is_matched }),
          limit: input.limit,
          cursor: input.cursor,
          cursorKey: ctx.deps.secrets.cursorKey,
        });
        return { data: page.items.map(toInflowResource), meta: page.meta };
      });
    }),

  get: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/inflows/{id}',
        operationId: 'getInflow',
        tags: ['Inflows'],
        summary: 'One inflow',
      },
      scope: 'inflows:read',
      errors: ['INFLOW_NOT_FOUND'],
    })
    .input(z.strictObject({ id: idParam }))
    .output(inflowOut)
    .query(async ({ ctx, input }) =>
      toInflowResource(
        await findForTenant(ctx.em, Inflow, {
          id: input.id,
          tenantId: ctx.principal.tenant.id,
          notFound: 'INFLOW_NOT_FOUND',
        }),
      ),
    ),
});
