import { z } from 'zod';
import { emSql } from '#src/db/sql.ts';
import { createdAtFilter, pageOf, pageQuery, paginate } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { router } from '#src/http/trpc.ts';
import { WebhookDelivery } from './delivery.entities.ts';
import { deadDeliveryOut, redeliverOut, toDeadDelivery, toRedelivery } from './delivery.schemas.ts';
import { redeliverOne, redeliverRange } from './redelivery.service.ts';

/** Most DEAD deliveries one "recover since" call sends again; the same call again continues. */
export const REDELIVER_RANGE_MAX = 1000;

const redeliverIn = z.union([
  z.strictObject({ delivery_id: z.uuid() }),
  z.strictObject({
    tenant_id: z.uuid(),
    since: createdAtFilter,
    until: createdAtFilter.optional(),
    limit: z.number().int().min(1).max(REDELIVER_RANGE_MAX).default(REDELIVER_RANGE_MAX),
  }),
]);

/** `admin.webhooks.*`: what operators need to follow up on deliveries that gave up. */
export const webhooksAdminRouter = router({
  webhooks: router({
    /** DEAD delivery jobs (all five attempts failed), newest first, optionally of one tenant. */
    dead: adminProcedure
      .meta({ lagTolerant: true })
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

    /**
     * Sends DEAD deliveries again: one by `delivery_id`, or a tenant's created in [since, until)
     * ("recover since"; until defaults to now). Each becomes a new delivery of the same event with
     * its own attempts (see `redelivery.service.ts`); asking again while one is open makes no other.
     */
    redeliver: adminProcedure
      .meta({ role: 'operator' })
      .input(redeliverIn)
      .output(redeliverOut)
      .mutation(async ({ ctx, input }) => {
        const now = ctx.deps.clock.now();
        const out = await ctx.commit(async (em) => {
          const sql = emSql(em);
          const done =
            'delivery_id' in input
              ? {
                  redelivered: [
                    await redeliverOne(sql, { deliveryId: input.delivery_id.toLowerCase(), now }),
                  ],
                  hasMore: false,
                }
              : await redeliverRange(sql, {
                  tenantId: input.tenant_id.toLowerCase(),
                  since: input.since,
                  until: input.until ?? now,
                  limit: input.limit,
                  now,
                });
          // The call's audit row, written by ctx.commit after this, names the new deliveries, the
          // DEAD ones and their events; a call that created none changed nothing and leaves none.
          for (const r of done.redelivered) ctx.audit.target(r.deliveryId, r.redeliveryOf, r.eventId);
          if (done.redelivered.every((r) => !r.created)) ctx.audit.unchanged();
          return done;
        });
        ctx.log.info(
          {
            operator_id: ctx.operator.id,
            deliveries: out.redelivered.map((r) => ({
              delivery_id: r.deliveryId,
              redelivery_of: r.redeliveryOf,
              created: r.created,
            })),
          },
          'webhook deliveries redelivered',
        );
        return { redelivered: out.redelivered.map(toRedelivery), has_more: out.hasMore };
      }),
  }),
});
