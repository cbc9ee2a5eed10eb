import { z } from 'zod';
import { WEBHOOK_MAX_ATTEMPTS } from '#machines/webhook-delivery.machine.ts';
import { documentedAs, iso, timestampOut } from '#src/http/schemas.ts';
import {
  DELIVERY_RECORD_STATUSES,
  WEBHOOK_DELIVERY_STATUSES,
  type WebhookDelivery,
  type WebhookDeliveryAttempt,
} from './delivery.entities.ts';
import type { Redelivery } from './redelivery.service.ts';

/** The contract's webhook delivery record: one attempt of one event to one URL. */
export const deliveryRecordOut = z
  .object({
    id: z.string(),
    payout_id: z.string().nullable().describe('The payout the event is about.'),
    event_id: z.string().describe('The event delivered; the deduplication key, the same on every attempt.'),
    event_type: documentedAs('WebhookEventType'),
    attempt_number: z.number().int().describe(`1 to ${WEBHOOK_MAX_ATTEMPTS}.`),
    target_url: z.string(),
    response_status: z
      .number()
      .int()
      .describe('The HTTP status the endpoint answered; 0 when no response came back (see failure_reason).'),
    status: z
      .enum(DELIVERY_RECORD_STATUSES)
      .meta({ id: 'WebhookDeliveryStatus' })
      .describe(
        'SUCCESS: 2xx. FAILED: this attempt failed and a retry is scheduled. DEAD: the last attempt failed.',
      ),
    failure_reason: z
      .string()
      .nullable()
      .describe(
        'Null on success; otherwise the HTTP status or the transport error (timeout, DNS, TLS, connection refused).',
      ),
    created_at: timestampOut,
  })
  .meta({ id: 'WebhookDelivery', description: 'One attempt to deliver one event to one URL.' });
export type DeliveryRecordOut = z.infer<typeof deliveryRecordOut>;

/** A delivery record as the API shows it. */
export function toDeliveryRecord(r: WebhookDeliveryAttempt): DeliveryRecordOut {
  return {
    id: r.id,
    payout_id: r.payoutId ?? null,
    event_id: r.eventId,
    event_type: r.eventType,
    attempt_number: r.attemptNumber,
    target_url: r.targetUrl,
    // The contract types the field as an integer, never null: 0 stands for "no response".
    response_status: r.responseStatus ?? 0,
    status: r.status,
    failure_reason: r.failureReason ?? null,
    created_at: iso(r.createdAt),
  };
}

/** A DEAD delivery job, for operators. */
export const deadDeliveryOut = z.object({
  delivery_id: z.string(),
  tenant_id: z.string(),
  event_id: z.string(),
  event_type: z.string(),
  payout_id: z.string().nullable(),
  target_url: z.string(),
  attempts: z.number().int(),
  last_response_status: z.number().int().nullable(),
  last_failure_reason: z.string().nullable(),
  created_at: timestampOut,
  dead_at: timestampOut,
});
export type DeadDeliveryOut = z.infer<typeof deadDeliveryOut>;

/** A DEAD job with its last failure, read from the machine's snapshot. */
export function toDeadDelivery(row: WebhookDelivery): DeadDeliveryOut {
  const context = (
    row.snapshot as { context?: { lastResponseStatus?: number | null; lastFailureReason?: string | null } }
  ).context;
  return {
    delivery_id: row.id,
    tenant_id: row.tenant.id,
    event_id: row.event.id,
    event_type: row.eventType,
    payout_id: row.payoutId ?? null,
    target_url: row.targetUrl,
    attempts: row.attempts,
    last_response_status: context?.lastResponseStatus ?? null,
    last_failure_reason: context?.lastFailureReason ?? null,
    created_at: iso(row.createdAt),
    dead_at: iso(row.updatedAt),
  };
}

/** A redelivery job: the DEAD job's event sent again, with its own attempts. */
export const redeliveryOut = z.object({
  delivery_id: z.string().describe('The new job: X-Service-Delivery of its attempts.'),
  redelivery_of: z.string().describe('The DEAD job it sends again, which stays DEAD.'),
  tenant_id: z.string(),
  event_id: z.string().describe('The same event, so the same event_id.'),
  event_type: z.string(),
  payout_id: z.string().nullable(),
  target_url: z.string(),
  status: z.enum(WEBHOOK_DELIVERY_STATUSES),
  created_at: timestampOut,
  created: z
    .boolean()
    .describe(
      'False when an open redelivery of the event already existed: that one is shown, no other made.',
    ),
});

/** What a redelivery call did. */
export const redeliverOut = z.object({
  redelivered: z.array(redeliveryOut),
  has_more: z
    .boolean()
    .describe('Recovering a range: more DEAD deliveries remain in it; the same call again continues.'),
});

/** A redelivery as operators see it. */
export function toRedelivery(r: Redelivery): z.output<typeof redeliveryOut> {
  return {
    delivery_id: r.deliveryId,
    redelivery_of: r.redeliveryOf,
    tenant_id: r.tenantId,
    event_id: r.eventId,
    event_type: r.eventType,
    payout_id: r.payoutId,
    target_url: r.targetUrl,
    status: r.status as (typeof WEBHOOK_DELIVERY_STATUSES)[number],
    created_at: iso(r.createdAt),
    created: r.created,
  };
}
