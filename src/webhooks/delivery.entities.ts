import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import type { DeliveryRecordStatus, WebhookDeliveryStatus } from '#machines/webhook-delivery.machine.ts';
import { idColumn, timestamps } from '#src/db/columns.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { Tenant } from '#src/tenants/entities.ts';

export const WEBHOOK_DELIVERY_STATUSES = [
  'PENDING',
  'ATTEMPTING',
  'RETRY_SCHEDULED',
  'SUCCEEDED',
  'DEAD',
] as const satisfies readonly WebhookDeliveryStatus[];

export const DELIVERY_RECORD_STATUSES = [
  'SUCCESS',
  'FAILED',
  'DEAD',
] as const satisfies readonly DeliveryRecordStatus[];

/** The statuses of a delivery job that may still make an attempt. */
export const OPEN_DELIVERY_STATUSES = [
  'PENDING',
  'ATTEMPTING',
  'RETRY_SCHEDULED',
] as const satisfies readonly WebhookDeliveryStatus[];

/**
 * A delivery job: one outbox event to one URL. Its id is the `X-Service-Delivery` header, the
 * same on every attempt. `status` and `snapshot` belong to `machines/webhook-delivery.machine.ts`
 * and are written only by the engine; `due_at` mirrors the machine's due time (next attempt, or
 * the lease of the attempt in progress) so that the job can claim due rows by index.
 *
 * Publishing makes one job per event and URL. An operator's redelivery of a DEAD job is another
 * job of the same event (`redelivery_of` names the DEAD one); an event has at most one open
 * redelivery at a time, which the database enforces, so that two operators (or one twice) asking
 * for the same redelivery get one.
 */
export const WebhookDelivery = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  indexes: [
    {
      name: 'webhook_deliveries_published_unique',
      expression:
        'create unique index "webhook_deliveries_published_unique" on "webhook_deliveries" ("event_id", "target_url", "tenant_id", "event_created_at") where "redelivery_of" is null',
    },
    {
      name: 'webhook_deliveries_open_redelivery_unique',
      expression:
        'create unique index "webhook_deliveries_open_redelivery_unique" on "webhook_deliveries" ("event_id", "tenant_id", "event_created_at") where "redelivery_of" is not null and "status" in (\'PENDING\', \'ATTEMPTING\', \'RETRY_SCHEDULED\')',
    },
    {
      name: 'webhook_deliveries_due_index',
      expression:
        'create index "webhook_deliveries_due_index" on "webhook_deliveries" ("due_at") where "due_at" is not null',
    },
    {
      name: 'webhook_deliveries_dead_index',
      expression:
        'create index "webhook_deliveries_dead_index" on "webhook_deliveries" ("created_at", "id") where "status" = \'DEAD\'',
    },
    // Live counts per state (`admin.machines`).
    { name: 'webhook_deliveries_state_index', properties: ['status'] },
    {
      // Operators' queue (`admin.exceptions`): DEAD deliveries, by when the last attempt failed,
      // with what tells whether the event was sent again since.
      name: 'webhook_deliveries_dead_since_index',
      expression:
        'create index "webhook_deliveries_dead_since_index" on "webhook_deliveries" ("updated_at") include ("event_id", "created_at", "id") where "status" = \'DEAD\'',
    },
    // An event's redeliveries, whatever their status: "recover since" skips events already sent again.
    {
      name: 'webhook_deliveries_redeliveries_index',
      expression:
        'create index "webhook_deliveries_redeliveries_index" on "webhook_deliveries" ("event_id") where "redelivery_of" is not null',
    },
    // One tenant's DEAD jobs in creation order: its list for operators, and "recover since".
    {
      name: 'webhook_deliveries_tenant_dead_index',
      expression:
        'create index "webhook_deliveries_tenant_dead_index" on "webhook_deliveries" ("tenant_id", "created_at", "id") where "status" = \'DEAD\'',
    },
  ],
  properties: {
    // The table's key is (id, tenant_id, event_created_at): a partitioned table's key includes its
    // partition key, and tenant_id keeps it Citus-ready; the entity's leaves tenant_id out, as
    // every merchant entity does (src/db/columns.ts). The id alone is unique (UUID v7).
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    // The foreign key is (tenant_id, event_id), written by the migrations.
    event: () => p.manyToOne(OutboxEvent).createForeignKeyConstraint(false),
    payoutId: p.uuid().nullable(),
    eventType: p.string().length(64),
    /** Where this job sends, fixed when the job is created. */
    targetUrl: p.string().length(2048),
    /** scheme://host:port of the target: concurrency is bounded per receiver, not per path. */
    targetOrigin: p.string().length(512),
    status: p.enum(WEBHOOK_DELIVERY_STATUSES),
    snapshot: p.json<Record<string, unknown>>(),
    attempts: p.integer().default(0),
    dueAt: p.datetime().nullable(),
    /**
     * The DEAD job this one sends again, for an operator; null for a job made by publishing. No
     * foreign key (a partition could not be detached): it is written only from the DEAD job, read
     * in the same transaction, which is of the same event and so in the same partition.
     */
    redeliveryOf: p.uuid().fieldName('redelivery_of').nullable(),
    /**
     * The event's `created_at`: the partition key (by week, src/db/partitions.ts). Every row of one
     * event carries it, so the event's jobs and their attempts share a partition and the unique
     * keys, which include it, hold across partitions.
     */
    eventCreatedAt: p.datetime().primary(),
    ...timestamps(),
  },
});
export type WebhookDelivery = InferEntity<typeof WebhookDelivery>;

/**
 * One attempt of a delivery job: the delivery record merchants read in
 * `GET /v1/webhooks/deliveries`. Written once, in the transaction that records the attempt's
 * outcome, and never changed.
 */
export const WebhookDeliveryAttempt = defineEntity({
  name: 'WebhookDeliveryAttempt',
  tableName: 'webhook_delivery_attempts',
  uniques: [
    {
      name: 'webhook_delivery_attempts_delivery_attempt_unique',
      properties: ['deliveryId', 'attemptNumber', 'tenant', 'eventCreatedAt'],
    },
  ],
  // The merchant's list, and the list filtered on each of its filters, read in page order.
  indexes: [
    { properties: ['tenant', 'createdAt', 'id'] },
    { name: 'webhook_delivery_attempts_status_index', properties: ['tenant', 'status', 'createdAt', 'id'] },
    {
      name: 'webhook_delivery_attempts_event_type_index',
      properties: ['tenant', 'eventType', 'createdAt', 'id'],
    },
    { name: 'webhook_delivery_attempts_payout_index', properties: ['tenant', 'payoutId', 'createdAt', 'id'] },
  ],
  properties: {
    // The table's key is (id, tenant_id, event_created_at), as its delivery's.
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    // The foreign key is (tenant_id, delivery_id, event_created_at), written by the migrations.
    deliveryId: p.uuid(),
    eventId: p.uuid(),
    payoutId: p.uuid().nullable(),
    eventType: p.string().length(64),
    attemptNumber: p.integer(),
    targetUrl: p.string().length(2048),
    status: p.enum(DELIVERY_RECORD_STATUSES),
    /** Null when no HTTP response came back (time-out, transport error, refused target). */
    responseStatus: p.integer().nullable(),
    failureReason: p.string().length(500).nullable(),
    /** Which signing secret signed the attempt; null when it went unsigned. */
    secretVersion: p.integer().nullable(),
    durationMs: p.integer().nullable(),
    createdAt: p.datetime(),
    /** Its delivery's `eventCreatedAt`: the partition key, the same week as its delivery's. */
    eventCreatedAt: p.datetime().primary(),
  },
});
export type WebhookDeliveryAttempt = InferEntity<typeof WebhookDeliveryAttempt>;

/**
 * Per receiver (a delivery's `target_origin`), how many deliveries are ATTEMPTING: what
 * `WEBHOOK_CONCURRENCY_PER_TARGET` limits. The statement that moves deliveries into or out of
 * ATTEMPTING updates it in the same transaction (src/webhooks/delivery.service.ts); the claim
 * reads it rather than counting deliveries. `webhook_origins_recount()` sets it from the
 * deliveries (Migration20261129110000_webhook_origins_in_flight).
 */
export const WebhookOriginInFlight = defineEntity({
  name: 'WebhookOriginInFlight',
  tableName: 'webhook_origins_in_flight',
  properties: {
    targetOrigin: p.string().length(512).primary(),
    attempting: p.integer(),
  },
});
export type WebhookOriginInFlight = InferEntity<typeof WebhookOriginInFlight>;
