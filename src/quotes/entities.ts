import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, money, timestamps } from '#src/db/columns.ts';
import { Tenant } from '#src/tenants/entities.ts';

/**
 * A frozen price: rate, spread and every fee, valid until `expiresAt`. Status changes go through
 * `machines/quote.machine.ts`; `snapshot` is that machine's persisted snapshot.
 */
export const Quote = defineEntity({
  name: 'Quote',
  tableName: 'quotes',
  indexes: [
    { properties: ['tenant', 'createdAt'] },
    // Live counts per state (`admin.machines`).
    { name: 'quotes_state_index', properties: ['status'] },
  ],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    rail: p.enum(['CRYPTO', 'BANK_TRANSFER'] as const),
    status: p.enum(['PENDING', 'ACCEPTED', 'USED', 'EXPIRED'] as const),
    snapshot: p.json<Record<string, unknown>>(),
    settlementCurrency: p.string().length(8),
    destinationCurrency: p.string().length(8),
    destinationAmount: money(),
    settlementAmount: money(),
    exchangeRate: money(),
    midMarketRate: money(),
    spread: money(),
    platformFeeAmount: money(),
    networkFeeAmount: money(),
    totalFeeAmount: money(),
    provider: p.string().length(100),
    expiresAt: p.datetime(),
    /** The payout that used the quote, once USED. */
    usedByPayoutId: p.uuid().nullable(),
    ...timestamps(),
  },
});
export type Quote = InferEntity<typeof Quote>;
