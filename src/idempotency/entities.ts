import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, timestamps } from '#src/db/columns.ts';

/**
 * One row per (tenant, Idempotency-Key), written with the exact response by the transaction of
 * the write it answers: a key exists if and only if its write committed.
 */
export const IdempotencyRecord = defineEntity({
  name: 'IdempotencyRecord',
  tableName: 'idempotency_keys',
  uniques: [{ properties: ['tenantId', 'key'] }],
  properties: {
    id: idColumn(),
    tenantId: p.uuid(),
    key: p.uuid(),
    /** SHA-256 of method, route and canonical request body. */
    fingerprint: p.string().length(64),
    responseStatus: p.integer(),
    /** The response body, sealed with AES-256-GCM. */
    responseBody: p.text(),
    ...timestamps(),
  },
});
export type IdempotencyRecord = InferEntity<typeof IdempotencyRecord>;
