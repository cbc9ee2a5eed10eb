import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, timestamps } from '#src/db/columns.ts';
import { Tenant } from '#src/tenants/entities.ts';

/**
 * Where a failed payout's settlement goes back to. One active destination per tenant and
 * currency (a partial unique index); replacing one deactivates the old row, which refunds in
 * flight keep as their snapshot. Full account numbers and addresses never leave the service.
 */
export const RefundDestination = defineEntity({
  name: 'RefundDestination',
  tableName: 'refund_destinations',
  indexes: [
    {
      name: 'refund_destinations_active_currency_unique',
      expression:
        'create unique index "refund_destinations_active_currency_unique" on "refund_destinations" ("tenant_id", "currency") where "is_active"',
    },
  ],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant).index(),
    currency: p.enum(['NGN', 'USDT'] as const),
    type: p.enum(['BANK_ACCOUNT', 'CRYPTO_ADDRESS'] as const),
    bankCode: p.string().length(16).nullable(),
    bankName: p.string().length(200).nullable(),
    accountNumber: p.string().length(20).nullable(),
    /** The name the bank confirmed by name enquiry. */
    accountName: p.string().length(200).nullable(),
    network: p.enum(['TRON', 'BSC'] as const).nullable(),
    address: p.string().length(128).nullable(),
    tag: p.string().length(100).nullable(),
    isVerified: p.boolean(),
    isActive: p.boolean(),
    ...timestamps(),
  },
});
export type RefundDestination = InferEntity<typeof RefundDestination>;
