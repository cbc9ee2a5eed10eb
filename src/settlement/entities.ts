import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, money, timestamps } from '#src/db/columns.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { Payout } from '#src/payouts/entities.ts';
import { Tenant } from '#src/tenants/entities.ts';

/**
 * A settlement received from a merchant, recorded exactly once (unique rail reference). It ends
 * MATCHED to a payout, or stays where operators see it: HELD (underpaid), UNMATCHED (late, or
 * matching nothing). Payer identity is kept for operators and never returned.
 */
export const Inflow = defineEntity({
  name: 'Inflow',
  tableName: 'inflows',
  uniques: [{ properties: ['rail', 'externalRef'] }],
  indexes: [
    { properties: ['tenant', 'createdAt', 'id'] },
    { properties: ['state', 'network'] },
    // Matching reads the money already attributed to the payouts it settles.
    { properties: ['payout'] },
    {
      // Matching's queue: the oldest CONFIRMED inflows, read in order without sorting the backlog.
      name: 'inflows_confirmed_queue_index',
      expression:
        'create index "inflows_confirmed_queue_index" on "inflows" ("created_at", "id") where "state" = \'CONFIRMED\'',
    },
  ],
  properties: {
    id: idColumn(),
    tenant: () => p.manyToOne(Tenant),
    rail: p.enum(['CRYPTO', 'BANK_TRANSFER'] as const),
    providerName: p.string().length(200),
    /** TRON or BSC on the crypto rail. */
    network: p.enum(['TRON', 'BSC'] as const).nullable(),
    amount: money(),
    currency: p.enum(['USDT', 'NGN'] as const),
    /** Transaction hash (crypto) or bank session id: the rail's unique reference. */
    externalRef: p.string().length(128),
    toAccount: p.string().length(128),
    payerName: p.string().length(200).nullable(),
    payerAccount: p.string().length(128).nullable(),
    blockNumber: p.integer().nullable(),
    confirmationsReceived: p.integer().default(0),
    confirmationsRequired: p.integer().default(0),
    /**
     * PENDING_CONFIRMATION → CONFIRMED → MATCHED | HELD | UNMATCHED. Operational state of the
     * money, not a merchant-facing status; operators may move HELD and UNMATCHED on.
     */
    state: p.enum(['PENDING_CONFIRMATION', 'CONFIRMED', 'MATCHED', 'HELD', 'UNMATCHED', 'RETURNED'] as const),
    isMatched: p.boolean().default(false),
    matchedAt: p.datetime().nullable(),
    payout: () => p.manyToOne(Payout).nullable(),
    instruction: () => p.manyToOne(PaymentInstruction).nullable(),
    isUnderpaid: p.boolean().default(false),
    overpaymentAmount: money(),
    ...timestamps(),
  },
});
export type Inflow = InferEntity<typeof Inflow>;

/** How far the service has read each chain's transfers. */
export const ChainCursor = defineEntity({
  name: 'ChainCursor',
  tableName: 'chain_cursors',
  properties: {
    network: p.enum(['TRON', 'BSC'] as const).primary(),
    cursor: p.string().length(200).nullable(),
    tip: p.integer().default(0),
    /** Who is scanning this network right now, and until when: a lease, not a lock held across the call. */
    leaseToken: p.uuid().nullable(),
    leaseUntil: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type ChainCursor = InferEntity<typeof ChainCursor>;
