import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn } from '#src/db/columns.ts';
import { Tenant } from '#src/tenants/entities.ts';

/**
 * The transactional outbox: one row per webhook event, written in the transaction of the state
 * change that caused it, so an event exists if and only if its change committed. The id is the
 * event's `event_id`; `payload` is exactly what merchants receive: the body's JSON text, byte for
 * byte, with the contract's fields in the contract's order.
 *
 * Partitioned by week of `created_at` (Migration20261129051000_partitioned_outbox): the table's key
 * is (id, tenant_id, created_at). The entity stays keyed by id, unique alone, which is what the
 * deliveries' relation to their event names.
 */
export const OutboxEvent = defineEntity({
  name: 'OutboxEvent',
  tableName: 'outbox_events',
  // Only the events still waiting are indexed, in the order they are published: the index stays
  // as small as the backlog, however long the outbox grows, and the publisher's probe and claim
  // read it in order whatever the planner's statistics say about how many rows are waiting.
  indexes: [
    {
      name: 'outbox_events_unpublished_index',
      expression:
        'create index "outbox_events_unpublished_index" on "outbox_events" ("created_at", "id") where "published_at" is null',
    },
  ],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    payoutId: p.uuid().nullable().index(),
    eventType: p.string().length(64),
    /**
     * Text, not jsonb: the service never looks inside a payload, and PostgreSQL would parse every
     * one (2-3 KB) into jsonb only to print it back, reordered, for delivery. Query it as
     * `payload::jsonb`.
     */
    payload: p.text(),
    /** When delivery jobs were created for the event; null while waiting. */
    publishedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
  },
});
export type OutboxEvent = InferEntity<typeof OutboxEvent>;
