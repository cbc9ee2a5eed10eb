import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, timestamps } from '#src/db/columns.ts';

/**
 * One row per (tenant, Idempotency-Key). IN_PROGRESS while a request holds the claim; COMPLETE,
 * with the exact response, in the same transaction as the write it answers.
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
    state: p.enum(['IN_PROGRESS', 'COMPLETE'] as const),
    /** Random per claim, so that only the request holding the claim can complete it. */
    claimToken: p.uuid().nullable(),
    lockedUntil: p.datetime().nullable(),
    responseStatus: p.integer().nullable(),
    responseBody: p.text().nullable(),
    ...timestamps(),
  },
});
export type IdempotencyRecord = InferEntity<typeof IdempotencyRecord>;
