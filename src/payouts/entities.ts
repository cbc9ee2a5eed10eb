import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, money, timestamps } from '#src/db/columns.ts';
import { PAYEE_CHECKS } from '#src/payees/name-match.ts';
import { Tenant } from '#src/tenants/entities.ts';

export const PAYOUT_STATUSES = [
  'CREATED',
  'PENDING_PAYMENT',
  'PAYMENT_RECEIVED',
  'PROCESSING',
  'SUCCESSFUL',
  'FAILED',
  'EXPIRED',
] as const;
export type PayoutStatus = (typeof PAYOUT_STATUSES)[number];

/**
 * A payout: what the beneficiary receives, what the merchant owes, and where the money is in
 * its life. `status` and `snapshot` belong to `machines/payout.machine.ts` and are written only
 * by the engine.
 */
export const Payout = defineEntity({
  name: 'Payout',
  tableName: 'payouts',
  // The list and its filters read pages in index order: all of a tenant's payouts, those in one
  // status, those with one merchant_reference (only payouts that have one are indexed).
  indexes: [
    { properties: ['tenant', 'createdAt', 'id'] },
    { name: 'payouts_status_index', properties: ['tenant', 'status', 'createdAt', 'id'] },
    {
      name: 'payouts_merchant_reference_index',
      expression:
        'create index "payouts_merchant_reference_index" on "payouts" ("tenant_id", "merchant_reference", "created_at", "id") where "merchant_reference" is not null',
    },
    // Exception queues (`admin.exceptions`): each partial index holds exactly one queue's rows.
    {
      name: 'payouts_held_underpaid_index',
      expression:
        'create index "payouts_held_underpaid_index" on "payouts" ("id") where "status" = \'PENDING_PAYMENT\' and (("snapshot" -> \'value\') ->> \'PENDING_PAYMENT\') = \'held\'',
    },
    {
      name: 'payouts_held_payee_index',
      expression:
        'create index "payouts_held_payee_index" on "payouts" ("created_at", "id") where "status" = \'CREATED\' and (("snapshot" -> \'value\') ->> \'CREATED\') = \'payeeHeld\'',
    },
    {
      name: 'payouts_money_held_index',
      expression:
        'create index "payouts_money_held_index" on "payouts" ("updated_at") where "status" = \'FAILED\' and "is_refunded" = false and "received_amount" > 0',
    },
    // Successful payouts that set an overpayment aside (PAYOUTS_OVERPAYMENT_TO_RETURN: those of
    // them without a refund yet).
    {
      name: 'payouts_overpayment_index',
      expression:
        'create index "payouts_overpayment_index" on "payouts" ("created_at", "id") include ("updated_at", "tenant_id") where "status" = \'SUCCESSFUL\' and "received_amount" > "settlement_amount"',
    },
  ],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    status: p.enum(PAYOUT_STATUSES),
    snapshot: p.json<Record<string, unknown>>(),
    merchantReference: p.string().length(200).nullable(),
    /** The merchant's key-value pairs (`src/payouts/metadata.ts`); `{}` when none. */
    metadata: p.json<Record<string, string>>().default('{}'),
    notificationUrl: p.string().length(2048).nullable(),
    destinationType: p.enum(['MOBILE_MONEY', 'BANK_ACCOUNT', 'CRYPTO_WALLET'] as const),
    destinationCountry: p.string().length(2),
    destinationCurrency: p.string().length(8),
    destinationAmount: money(),
    destinationAccountUnique: p.string().length(128),
    destinationProviderName: p.string().length(200),
    destinationProviderCode: p.string().length(32).nullable(),
    destinationAccountName: p.string().length(200).nullable(),
    /**
     * The payee name check (src/payees): PENDING until the institution answers; null where no
     * check applies (crypto wallets, payouts made before the check existed).
     */
    payeeCheck: p.enum(PAYEE_CHECKS).nullable(),
    /** The name the institution holds for the account, once it answered. */
    payeeInstitutionName: p.string().length(200).nullable(),
    payeeCheckedAt: p.datetime().nullable(),
    settlementCurrency: p.enum(['USDT', 'NGN'] as const),
    /** TRON or BSC on the crypto rail; null on the bank rail. */
    settlementNetwork: p.enum(['TRON', 'BSC'] as const).nullable(),
    /** Zero until instruction generation locks the rate. */
    settlementAmount: money(),
    exchangeRate: money(),
    midMarketRate: money(),
    platformFeeAmount: money(),
    networkFeeAmount: money(),
    totalFeeAmount: money(),
    /** The quote whose price the payout uses, when created with `quote_id`. */
    quoteId: p.uuid().nullable(),
    /** Sum of the settlement inflows attributed to the payout. */
    receivedAmount: money(),
    isRefunded: p.boolean().default(false),
    refundReference: p.uuid().nullable(),
    /** Failed instruction-generation attempts (transient provider failures). */
    instructionAttempts: p.integer().default(0),
    ...timestamps(),
  },
});
export type Payout = InferEntity<typeof Payout>;

/**
 * One row per status change of a payout, oldest first: the authoritative history. Partitioned by
 * month of `created_at`, so its key is (id, created_at); the table's adds tenant_id, as every
 * merchant table's key does (docs/scaling.md, Citus).
 */
export const StatusLog = defineEntity({
  name: 'StatusLog',
  tableName: 'payout_status_timeline',
  indexes: [{ properties: ['payout', 'createdAt'] }],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    // The foreign key is (tenant_id, payout_id), written by the migrations: the ORM cannot say it.
    payout: () => p.manyToOne(Payout).createForeignKeyConstraint(false),
    fromStatus: p.enum(PAYOUT_STATUSES).nullable(),
    toStatus: p.enum(PAYOUT_STATUSES),
    triggeredBy: p.enum(['SYSTEM', 'API', 'PROCESSOR_WEBHOOK', 'ADMIN'] as const),
    reasonCode: p.string().length(100),
    reasonDetail: p.json<Record<string, unknown>>().nullable(),
    metadata: p.json<Record<string, unknown>>().nullable(),
    // Part of the key: the table is partitioned by month of created_at (src/db/partitions.ts).
    createdAt: p.datetime().primary(),
  },
});
export type StatusLog = InferEntity<typeof StatusLog>;
