import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, money, timestamps } from '#src/db/columns.ts';
import { Payout } from '#src/payouts/entities.ts';
import { Tenant } from '#src/tenants/entities.ts';

/**
 * What the merchant must pay, where and by when. One per payout. While UNPAID, no two
 * instructions share (account, expected amount): a partial unique index keeps crypto matching
 * on a shared address unambiguous.
 */
export const PaymentInstruction = defineEntity({
  name: 'PaymentInstruction',
  tableName: 'payment_instructions',
  uniques: [{ properties: ['payout', 'tenant'] }],
  indexes: [
    { properties: ['status', 'expiresAt'] },
    // Matching looks up an amount on an account whatever the status (late money for a closed instruction).
    { properties: ['accountUnique', 'expectedAmount'] },
    {
      name: 'payment_instructions_open_amount_unique',
      expression:
        'create unique index "payment_instructions_open_amount_unique" on "payment_instructions" ("account_unique", "expected_amount", "tenant_id") where "status" = \'UNPAID\'',
    },
  ],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    // Unique per (tenant_id, payout_id), the foreign key on both: written by the migrations.
    payout: () => p.oneToOne(Payout).owner().unique(false).createForeignKeyConstraint(false),
    status: p.enum(['UNPAID', 'PAID', 'EXPIRED'] as const),
    snapshot: p.json<Record<string, unknown>>(),
    rail: p.enum(['CRYPTO', 'BANK_TRANSFER'] as const),
    accountUnique: p.string().length(128),
    providerName: p.string().length(200),
    /** Network label shown to merchants (TRC20, BEP20); null on the bank rail. */
    network: p.string().length(16).nullable(),
    /** TRON or BSC; null on the bank rail. */
    chain: p.enum(['TRON', 'BSC'] as const).nullable(),
    expectedAmount: money(),
    expectedCurrency: p.enum(['USDT', 'NGN'] as const),
    expiresAt: p.datetime(),
    paidAt: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type PaymentInstruction = InferEntity<typeof PaymentInstruction>;

/** The receiving address of a tenant on one network, shared by all its open crypto instructions. */
export const DepositAddress = defineEntity({
  name: 'DepositAddress',
  tableName: 'deposit_addresses',
  uniques: [{ properties: ['tenant', 'network'] }],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    network: p.enum(['TRON', 'BSC'] as const),
    address: p.string().length(128).unique(),
    ...timestamps(),
  },
});
export type DepositAddress = InferEntity<typeof DepositAddress>;
