import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn } from '#src/db/columns.ts';
import { Tenant } from '#src/tenants/entities.ts';

/**
 * The transactional outbox: one row per webhook event, written in the transaction of the state
 * change that caused it, so an event exists if and only if its change committed. The id is the
 * event's `event_id`; `payload` is exactly what merchants receive.
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
    payload: p.json<Record<string, unknown>>(),
    /** When delivery jobs were created for the event; null while waiting. */
    publishedAt: p.datetime().nullable(),
    createdAt: p.datetime(),
  },
});
export type OutboxEvent = InferEntity<typeof OutboxEvent>;
