import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, money, timestamps } from '#src/db/columns.ts';
import { Payout } from '#src/payouts/entities.ts';
import { Tenant } from '#src/tenants/entities.ts';

/**
 * One dispatch attempt of a payout to the processor. Its id is the processor's idempotency
 * reference. Immutable once terminal: a retry is a new row with the next attempt number.
 */
export const Outflow = defineEntity({
  name: 'Outflow',
  tableName: 'outflows',
  uniques: [{ properties: ['payout', 'attemptNumber', 'tenant'] }],
  indexes: [
    { properties: ['status', 'dispatchedAt'] },
    {
      // Reconciliation: the outflows that became final on one day (src/reconciliation/).
      name: 'outflows_settled_index',
      expression:
        'create index "outflows_settled_index" on "outflows" ("settled_at") where "status" = \'SUCCESSFUL\'',
    },
    {
      name: 'outflows_failed_index',
      expression:
        'create index "outflows_failed_index" on "outflows" ("updated_at") where "status" = \'FAILED\'',
    },
  ],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    // The foreign key is (tenant_id, payout_id), written by the migrations.
    payout: () => p.manyToOne(Payout).createForeignKeyConstraint(false),
    status: p.enum(['PENDING', 'PROCESSING', 'SUCCESSFUL', 'FAILED'] as const),
    snapshot: p.json<Record<string, unknown>>(),
    processor: p.string().length(100),
    attemptNumber: p.integer(),
    destinationAmount: money(),
    destinationCurrency: p.string().length(8),
    processorReference: p.string().length(128).nullable(),
    failureReason: p.string().length(500).nullable(),
    failureCode: p.string().length(100).nullable(),
    retryable: p.boolean().default(false),
    dispatchedAt: p.datetime().nullable(),
    settledAt: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type Outflow = InferEntity<typeof Outflow>;
