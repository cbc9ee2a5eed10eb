import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import type { InflowStatus } from '#machines/inflow.machine.ts';
import { idColumn, money, timestamps } from '#src/db/columns.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { Payout } from '#src/payouts/entities.ts';
import { Tenant } from '#src/tenants/entities.ts';

/** An inflow's states, as its machine names them (`machines/inflow.machine.ts`). */
export const INFLOW_STATES = [
  'PENDING_CONFIRMATION',
  'CONFIRMED',
  'MATCHED',
  'HELD',
  'UNMATCHED',
  'RETURNED',
  'FOR_REFUND',
] as const satisfies readonly InflowStatus[];

/**
 * A settlement received from a merchant, recorded exactly once (unique rail reference). It ends
 * MATCHED to a payout, FOR_REFUND when the payout it was held against failed, or stays where
 * operators see it: HELD (underpaid), UNMATCHED (late, or matching nothing); its machine is
 * `machines/inflow.machine.ts`. Payer identity is kept for operators and never returned.
 */
export const Inflow = defineEntity({
  name: 'Inflow',
  tableName: 'inflows',
  // A rail's reference belongs to one account, so to one tenant: unique per tenant is unique.
  uniques: [{ properties: ['rail', 'externalRef', 'tenant'] }],
  indexes: [
    { properties: ['tenant', 'createdAt', 'id'] },
    // Reconciliation: one rail's inflows of one day (src/reconciliation/).
    { name: 'inflows_rail_arrived_index', properties: ['rail', 'arrivedAt'] },
    // The merchant's list filtered on is_matched, read in page order.
    { name: 'inflows_is_matched_index', properties: ['tenant', 'isMatched', 'createdAt', 'id'] },
    { properties: ['state', 'network'] },
    // Matching reads the money already attributed to the payouts it settles.
    { properties: ['payout'] },
    {
      // Matching's queue: the oldest CONFIRMED inflows, read in order without sorting the backlog.
      name: 'inflows_confirmed_queue_index',
      expression:
        'create index "inflows_confirmed_queue_index" on "inflows" ("created_at", "id") where "state" = \'CONFIRMED\'',
    },
    {
      // Operators' queue (`admin.exceptions`): money no open instruction took, by when it arrived.
      name: 'inflows_unmatched_index',
      expression:
        'create index "inflows_unmatched_index" on "inflows" ("arrived_at") where "state" = \'UNMATCHED\' or ("state" = \'HELD\' and "payout_id" is null)',
    },
    {
      // Operators' list of money waiting for a decision (`admin.settlement.inflows`), in its page
      // order: every UNMATCHED and HELD inflow (money held against a payout that failed is
      // FOR_REFUND, not HELD: `inflowsNeedingAttention`).
      name: 'inflows_attention_index',
      expression:
        'create index "inflows_attention_index" on "inflows" ("created_at", "id") where "state" in (\'HELD\', \'UNMATCHED\')',
    },
    {
      // The same list for one tenant.
      name: 'inflows_tenant_attention_index',
      expression:
        'create index "inflows_tenant_attention_index" on "inflows" ("tenant_id", "created_at", "id") where "state" in (\'HELD\', \'UNMATCHED\')',
    },
    {
      // The part of that list no payout took (the INFLOWS_UNMATCHED queue), as the console pages it.
      name: 'inflows_unattributed_index',
      expression:
        'create index "inflows_unattributed_index" on "inflows" ("created_at", "id") where "state" in (\'HELD\', \'UNMATCHED\') and "payout_id" is null',
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
     * Where the money is (`machines/inflow.machine.ts`): PENDING_CONFIRMATION → CONFIRMED →
     * MATCHED | HELD | UNMATCHED, RETURNED by an operator, and FOR_REFUND from HELD when its payout
     * fails. Operational, not a merchant-facing status: merchants see is_matched, is_underpaid and
     * payout_id. Written only with `snapshot`.
     */
    state: p.enum(INFLOW_STATES),
    /** The inflow machine's persisted snapshot. */
    snapshot: p.json<Record<string, unknown>>(),
    isMatched: p.boolean().default(false),
    matchedAt: p.datetime().nullable(),
    // Both foreign keys are (tenant_id, …), written by the migrations.
    payout: () => p.manyToOne(Payout).nullable().createForeignKeyConstraint(false),
    instruction: () => p.manyToOne(PaymentInstruction).nullable().createForeignKeyConstraint(false),
    isUnderpaid: p.boolean().default(false),
    overpaymentAmount: money(),
    /**
     * When the rail says the money arrived (the block's time, the bank's credit time; never later
     * than when it was recorded): what matching and expiry judge lateness by, so that money found
     * late (after an outage) is not judged late.
     */
    arrivedAt: p.datetime(),
    /**
     * RETURNED only: the evidence the operator gave that the money went back (the return's bank
     * reference or transaction hash). Null on every other state, and on inflows returned before
     * the service asked for it (their proposal's note says how).
     */
    returnedReference: p.string().length(200).nullable(),
    ...timestamps(),
  },
});
export type Inflow = InferEntity<typeof Inflow>;

/**
 * The rails read from a cursor: each chain by its network, and the bank's statement, by settlement;
 * the same records again by reconciliation (`RECON_*`), which keeps every line it reads.
 */
export const RAIL_SOURCES = [
  'TRON',
  'BSC',
  'BANK',
  'RECON_TRON',
  'RECON_BSC',
  'RECON_BANK',
  'RECON_TRON_SENDS',
  'RECON_BSC_SENDS',
  'RECON_PROCESSOR',
] as const;
export type RailSource = (typeof RAIL_SOURCES)[number];

/** How far the service has read each rail: a chain's transfers, the bank's statement of credits. */
export const RailCursor = defineEntity({
  name: 'RailCursor',
  tableName: 'rail_cursors',
  properties: {
    source: p.enum(RAIL_SOURCES).primary(),
    /** The rail's own opaque position; null before the first read. */
    cursor: p.string().length(200).nullable(),
    /** The chain's latest block at the last read (null for the bank). */
    tip: p.integer().nullable(),
    /**
     * The rail's time before which every transfer or credit has been read and recorded: a
     * chain's scanned block time, the bank statement's. Instructions expire only once their rail
     * has been read past their expires_at.
     */
    readThrough: p.datetime().nullable(),
    /** When the next read is due, for a rail not read on every pass (the bank); null: every pass. */
    dueAt: p.datetime().nullable(),
    /** Who is reading this rail right now, and until when: a lease, not a lock held across the call. */
    leaseToken: p.uuid().nullable(),
    leaseUntil: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type RailCursor = InferEntity<typeof RailCursor>;
