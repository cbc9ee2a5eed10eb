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
  indexes: [{ properties: ['publishedAt', 'createdAt'] }],
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
