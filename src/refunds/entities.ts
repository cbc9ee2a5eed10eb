import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, money, timestamps } from '#src/db/columns.ts';
import { Payout } from '#src/payouts/entities.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { Tenant } from '#src/tenants/entities.ts';

/**
 * The return of a failed payout's settlement to the merchant, or of the overpayment a successful
 * payout set aside (`kind`). At most one per payout (unique).
 * The destination is a snapshot taken at creation (and again on an operator retry), so a
 * destination replaced later does not redirect money in flight.
 */
export const Refund = defineEntity({
  name: 'Refund',
  tableName: 'refunds',
  uniques: [{ properties: ['payout', 'tenant'] }],
  indexes: [
    { properties: ['tenant', 'createdAt', 'id'] },
    // Live counts per state (`admin.machines`).
    { name: 'refunds_state_index', properties: ['status'] },
    {
      // Reconciliation: the bank refunds that reached the merchant on one day (src/reconciliation/).
      name: 'refunds_bank_settled_index',
      expression:
        'create index "refunds_bank_settled_index" on "refunds" ("settled_at") where "status" = \'SUCCESSFUL\' and "destination_type" = \'BANK_ACCOUNT\'',
    },
    {
      // Reconciliation: the chain refunds that reached the merchant on one day.
      name: 'refunds_crypto_settled_index',
      expression:
        'create index "refunds_crypto_settled_index" on "refunds" ("settled_at") where "status" = \'SUCCESSFUL\' and "destination_type" = \'CRYPTO_ADDRESS\'',
    },
    // Operators' queue (`admin.exceptions`): failed refunds, by when they failed.
    {
      name: 'refunds_failed_index',
      expression:
        'create index "refunds_failed_index" on "refunds" ("updated_at") where "status" = \'FAILED\'',
    },
  ],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    // One per (tenant_id, payout_id); both foreign keys include tenant_id: written by the migrations.
    payout: () => p.oneToOne(Payout).owner().unique(false).createForeignKeyConstraint(false),
    inflow: () => p.manyToOne(Inflow).nullable().createForeignKeyConstraint(false),
    status: p.enum(['PENDING', 'PROCESSING', 'SUCCESSFUL', 'FAILED'] as const),
    /**
     * What it returns: a failed payout's settlement (SETTLEMENT), or the overpayment a successful
     * payout set aside, returned on an operator's approved proposal (OVERPAYMENT).
     */
    kind: p.enum(['SETTLEMENT', 'OVERPAYMENT'] as const).default('SETTLEMENT'),
    snapshot: p.json<Record<string, unknown>>(),
    receivedAmount: money(),
    receivedCurrency: p.enum(['USDT', 'NGN'] as const),
    networkFeeAmount: money(),
    refundAmount: money(),
    destinationId: p.uuid(),
    destinationType: p.enum(['BANK_ACCOUNT', 'CRYPTO_ADDRESS'] as const),
    destinationProviderName: p.string().length(200),
    destinationMasked: p.string().length(128),
    destinationNetwork: p.enum(['TRON', 'BSC'] as const).nullable(),
    destinationBankCode: p.string().length(16).nullable(),
    /** Full account number or address: used to send, never returned. */
    destinationAccount: p.string().length(128),
    destinationAccountName: p.string().length(200).nullable(),
    processorReference: p.string().length(128).nullable(),
    failureReason: p.string().length(500).nullable(),
    attemptNumber: p.integer().default(1),
    dispatchedAt: p.datetime().nullable(),
    settledAt: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type Refund = InferEntity<typeof Refund>;
