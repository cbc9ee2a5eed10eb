import { z } from 'zod';
import { pageOf, pageQuery, paginate } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { router } from '#src/http/trpc.ts';
import { WebhookDelivery } from './delivery.entities.ts';
import { deadDeliveryOut, toDeadDelivery } from './delivery.schemas.ts';

/** `admin.webhooks.*`: what operators need to follow up on deliveries that gave up. */
export const webhooksAdminRouter = router({
  webhooks: router({
    /** DEAD delivery jobs (all five attempts failed), newest first, optionally of one tenant. */
    dead: adminProcedure
      .input(pageQuery.extend({ tenant_id: z.uuid().optional() }).strict())
      .output(pageOf(deadDeliveryOut))
      .query(async ({ ctx, input }) => {
        const page = await paginate(ctx.em, WebhookDelivery, {
          where: { status: 'DEAD', ...(input.tenant_id ? { tenant: input.tenant_id } : {}) },
          list: `admin:webhooks:dead:${input.tenant_id ?? '*'}`,
          limit: input.limit,
          cursor: input.cursor,
          cursorKey: ctx.deps.secrets.cursorKey,
        });
        return { data: page.items.map(toDeadDelivery), meta: page.meta };
      }),
  }),
});
