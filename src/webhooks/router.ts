import { z } from 'zod';
import { listName, pageOf, pageQuery, paginate } from '#src/http/pagination.ts';
import { merchantProcedure } from '#src/http/procedures.ts';
import { iso } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import {
  toWebhookConfigOut,
  toWebhookConfigWithSecretOut,
  webhookConfigIn,
  webhookConfigOut,
  webhookConfigWithSecretOut,
  webhookTestOut,
} from './config.schemas.ts';
import {
  acceptWebhookUrl,
  findWebhookConfig,
  queueTestEvent,
  rotateSigningSecret,
  saveWebhookUrl,
} from './config.service.ts';
import { DELIVERY_RECORD_STATUSES, WebhookDeliveryAttempt } from './delivery.entities.ts';
import { deliveryRecordOut, toDeliveryRecord } from './delivery.schemas.ts';
import { WEBHOOK_EVENT_TYPES } from './events.ts';

export const webhooksRouter = router({
  setConfig: merchantProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/v1/webhooks/config',
        operationId: 'setWebhookConfig',
        tags: ['Webhooks'],
        summary: 'Set the webhook URL',
        description:
          'Every successful call returns the signing secret in force in `signing_secret`: the first call issues it, later ' +
          'calls change the URL and keep it. Only rotate-secret replaces it. GET never returns it.',
      },
      scope: 'webhooks:manage',
      idempotent: true,
      errors: ['WEBHOOK_URL_INVALID'],
    })
    .input(webhookConfigIn)
    .output(webhookConfigWithSecretOut)
    .mutation(async ({ ctx, input }) => {
      const url = await acceptWebhookUrl(ctx.deps.config, input.webhook_url);
      const tenantId = ctx.principal.tenant.id;
      // What the transaction returns is the response the Idempotency-Key stores: nothing else.
      let issued = false;
      const out = await ctx.commit(async (em) => {
        const saved = await saveWebhookUrl(em, { tenantId, url, key: ctx.deps.secrets.encryptionKey });
        issued = saved.issued;
        return toWebhookConfigWithSecretOut(saved.row, saved.secret);
      });
      ctx.log.info(
        { tenant_id: tenantId, secret_issued: issued, secret_version: out.secret_version },
        'webhook url set',
      );
      return out;
    }),

  getConfig: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/webhooks/config',
        operationId: 'getWebhookConfig',
        tags: ['Webhooks'],
        summary: 'Read the webhook configuration',
        description: 'Never returns the secret. Without a configuration: webhook_url null, has_secret false.',
      },
      scope: 'webhooks:manage',
    })
    .input(z.strictObject({}))
    .output(webhookConfigOut)
    .query(async ({ ctx }) => toWebhookConfigOut(await findWebhookConfig(ctx.em, ctx.principal.tenant.id))),

  rotateSecret: merchantProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/webhooks/config/rotate-secret',
        operationId: 'rotateWebhookSecret',
        tags: ['Webhooks'],
        summary: 'Rotate the signing secret',
        description:
          'Issues a new secret, returned once; the old one stops verifying at once (no grace window). ' +
          'Without a configuration it issues the first secret (webhook_url stays null).',
      },
      scope: 'webhooks:manage',
      idempotent: true,
    })
    .input(z.strictObject({}).optional())
    .output(webhookConfigWithSecretOut)
    .mutation(async ({ ctx }) => {
      const tenantId = ctx.principal.tenant.id;
      const out = await ctx.commit(async (em) => {
        const { row, secret } = await rotateSigningSecret(em, {
          tenantId,
          key: ctx.deps.secrets.encryptionKey,
          now: ctx.deps.clock.now(),
        });
        return toWebhookConfigWithSecretOut(row, secret);
      });
      ctx.log.info(
        { tenant_id: tenantId, secret_version: out.secret_version },
        'webhook signing secret rotated',
      );
      return out;
    }),

  sendTest: merchantProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/webhooks/config/test',
        operationId: 'sendWebhookTest',
        tags: ['Webhooks'],
        summary: 'Send a test event',
        description:
          'Sends a `webhook.test` event to the configured webhook URL, signed with the secret in force, to check the ' +
          'endpoint and its signature check. It is delivered by the same job as every event, within moments, and ' +
          'retried and recorded like any delivery: follow it in GET /v1/webhooks/deliveries?event_type=webhook.test. ' +
          'Without a webhook URL: 409 WEBHOOK_URL_NOT_SET.',
      },
      scope: 'webhooks:manage',
      idempotent: true,
      successStatus: 201,
      errors: ['WEBHOOK_URL_NOT_SET'],
    })
    .input(z.strictObject({}).optional())
    .output(webhookTestOut)
    .mutation(async ({ ctx }) => {
      const tenantId = ctx.principal.tenant.id;
      const now = ctx.deps.clock.now();
      const out = await ctx.commit(async (em) => {
        const { event, url } = await queueTestEvent(em, { tenantId, now });
        return {
          event_id: event.id,
          event_type: 'webhook.test' as const,
          created_at: iso(now),
          webhook_url: url,
        };
      });
      // Delivered now rather than at the next poll.
      ctx.deps.jobs?.kick('webhooks');
      ctx.log.info({ tenant_id: tenantId, event_id: out.event_id }, 'webhook test event queued');
      return out;
    }),

  deliveries: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/webhooks/deliveries',
        operationId: 'listWebhookDeliveries',
        tags: ['Webhooks'],
        summary: 'Delivery attempts, newest first',
        description:
          'One record per attempt of every event to its URL (the per-payout notification_url or the tenant URL). ' +
          'response_status is 0 when no HTTP response came back; failure_reason then names the transport error. ' +
          'Filters combine; a cursor pages only the filters it was issued with.',
      },
      scope: 'webhooks:read',
    })
    .input(
      pageQuery
        .extend({
          status: z.enum(DELIVERY_RECORD_STATUSES).optional().describe('Only attempts with this outcome.'),
          event_type: z
            .enum(WEBHOOK_EVENT_TYPES)
            .optional()
            .describe('Only attempts to deliver events of this type.'),
          payout_id: z.uuid().optional().describe('Only attempts to deliver events about this payout.'),
        })
        .strict(),
    )
    .output(pageOf(deliveryRecordOut))
    .query(async ({ ctx, input }) => {
      const tenantId = ctx.principal.tenant.id;
      return ctx.deps.reads.read(tenantId, async ({ em }) => {
        const page = await paginate(em, WebhookDeliveryAttempt, {
          where: {
            tenant: tenantId,
            ...(input.status ? { status: input.status } : {}),
            ...(input.event_type ? { eventType: input.event_type } : {}),
            ...(input.payout_id ? { payoutId: input.payout_id.toLowerCase() } : {}),
          },
          list: listName('webhook-deliveries', {
            status: input.status,
            event_type: input.event_type,
            payout_id: input.payout_id?.toLowerCase(),
          }),
          limit: input.limit,
          cursor: input.cursor,
          cursorKey: ctx.deps.secrets.cursorKey,
        });
        return { data: page.items.map(toDeliveryRecord), meta: page.meta };
      });
    }),
});
