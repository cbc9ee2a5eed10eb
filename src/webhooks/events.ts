import { z } from 'zod';
import type { PayoutWebhook } from '#machines/payout.machine.ts';
import type { RefundWebhook } from '#machines/refund.machine.ts';
import { timestampOut } from '#src/http/schemas.ts';
import { payoutOut, payoutStatusSchema } from '#src/payouts/resource.ts';

/**
 * The catalogue of webhook events merchants receive, with when each fires. Typed against the
 * machines' own event unions, so an event a machine emits cannot be missing here (nor one listed
 * that no machine emits); the OpenAPI document's `webhooks` section is built from this list.
 */
const MACHINE_EVENTS = {
  'payout.created': 'The payout was created (status CREATED); its instruction is being generated.',
  'payout.pending_payment':
    'The payment instruction was generated: pay expected_amount to account_unique before expires_at.',
  'payout.underpaid':
    'Less than expected arrived: the payout is held for review (still PENDING_PAYMENT) and not processed partially.',
  'payout.payment_received': 'The settlement covering the instruction arrived (and was confirmed on chain).',
  'payout.processing': 'The processor accepted the payout to the beneficiary.',
  'payout.successful': 'The beneficiary was paid.',
  'payout.failed':
    'The payout failed for good; when money had arrived, payout.refunded and the refund events follow.',
  'payout.expired': 'Nothing arrived before the instruction expired; terminal, no refund.',
  'payout.refunded':
    'A refund was raised against the failed payout (is_refunded true, refund_reference set).',
  'refund.created': 'The refund exists with status PENDING.',
  'refund.processing': 'The refund was dispatched.',
  'refund.successful': 'The money is back with the merchant.',
  'refund.failed': 'The refund could not be delivered and needs attention (a corrected destination).',
} as const satisfies Record<PayoutWebhook | RefundWebhook, string>;

/** The event a merchant asks for to check its endpoint: `POST /v1/webhooks/config/test`. */
export const WEBHOOK_TEST_EVENT = 'webhook.test';

/**
 * Every event type merchants receive: the machines' and the test ping. The OpenAPI document's
 * `webhooks` section is built from this list.
 */
export const WEBHOOK_EVENTS = {
  ...MACHINE_EVENTS,
  [WEBHOOK_TEST_EVENT]:
    'Sent only when asked for with POST /v1/webhooks/config/test, to the configured URL, signed like every event: ' +
    'check your endpoint and its signature check with it. data is {"object": "webhook_test"}; nothing happened to any payout.',
} as const;

/** The event types the machines emit (every type but the test ping). */
export const MACHINE_WEBHOOK_EVENT_TYPES = Object.keys(MACHINE_EVENTS);

export type WebhookEventType = keyof typeof WEBHOOK_EVENTS;

export const WEBHOOK_EVENT_TYPES = Object.keys(WEBHOOK_EVENTS) as [WebhookEventType, ...WebhookEventType[]];

export const webhookEventTypeSchema = z.enum(WEBHOOK_EVENT_TYPES).meta({
  id: 'WebhookEventType',
  description: 'Lowercase and dotted; for refund.* events data is still the payout.',
});

/** The types of the events about a payout and its refunds: every type but the test ping. */
export const payoutEventTypeSchema = z
  .enum(Object.keys(MACHINE_EVENTS) as [keyof typeof MACHINE_EVENTS, ...(keyof typeof MACHINE_EVENTS)[]])
  .meta({
    id: 'PayoutEventType',
    description: 'The event types of PayoutEvent; for refund.* events data is still the payout.',
  });

/** `data` of a payout event: the payout as `GET /v1/payouts/{id}` returns it, plus `object`. */
export const payoutEventDataOut = z.object({ object: z.literal('payout'), ...payoutOut.shape }).meta({
  id: 'PayoutEventData',
  description:
    'The payout as GET /v1/payouts/{id} returns it at the time of the event, with object "payout".',
});

/** The body of every payout and refund event (see `payoutEventPayload`, which writes it). */
export const payoutEventOut = z
  .object({
    event_id: z.string().describe('Stable across retries: the deduplication key.'),
    event_type: payoutEventTypeSchema,
    created_at: timestampOut,
    status: payoutStatusSchema.describe('The payout’s status after the event: the truth for ordering.'),
    data: payoutEventDataOut,
  })
  .meta({
    id: 'PayoutEvent',
    description:
      'A webhook event about a payout. Deliveries may repeat (deduplicate on event_id) and arrive out of order ' +
      '(order on status and the payout’s status_timeline).',
  });

/** The body of a test ping (see `webhookTestPayload`, which writes it). */
export const webhookTestEventOut = z
  .object({
    event_id: z.string().describe('A new id for every test ping.'),
    event_type: z.literal(WEBHOOK_TEST_EVENT),
    created_at: timestampOut,
    data: z.object({ object: z.literal('webhook_test') }),
  })
  .meta({
    id: 'WebhookTestEvent',
    description:
      'A test event, sent on request by POST /v1/webhooks/config/test and signed like every event.',
  });

/** The name of each event type's payload schema in the OpenAPI document. */
export function payloadSchemaName(type: WebhookEventType): 'PayoutEvent' | 'WebhookTestEvent' {
  return type === WEBHOOK_TEST_EVENT ? 'WebhookTestEvent' : 'PayoutEvent';
}

/** The body of a test ping, as delivered: the contract's fields in the contract's order. */
export function webhookTestPayload(eventId: string, createdAt: Date): string {
  return JSON.stringify({
    event_id: eventId,
    event_type: WEBHOOK_TEST_EVENT,
    created_at: createdAt.toISOString(),
    data: { object: 'webhook_test' },
  } satisfies z.output<typeof webhookTestEventOut>);
}

/** The headers of a delivery (see `deliveryHeaders`). */
export const WEBHOOK_HEADERS = {
  'X-Service-Signature': {
    description:
      '`t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" keyed with the signing secret>`. ' +
      'Absent when the tenant has no secret.',
    required: false,
    pattern: '^t=\\d{1,12}(,v1=[0-9a-f]{64})+$',
  },
  'X-Service-Timestamp': {
    description: 'The same unix timestamp as t= in the signature; absent when unsigned.',
    required: false,
    pattern: '^\\d{1,12}$',
  },
  'X-Service-Event': { description: 'The event_type.', required: true, pattern: '^[a-z_]+\\.[a-z_]+$' },
  'X-Service-Delivery': {
    description: 'The delivery job’s id: the same on every attempt of one event to one URL.',
    required: true,
    pattern: '^[0-9a-f-]{36}$',
  },
} as const;
