import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import type { ReconBreakStatus } from '#machines/recon-break.machine.ts';
import { idColumn, money, timestamps } from '#src/db/columns.ts';

/** The rails a run reconciles, as the CLI names them (`recon run --rail`). */
export const RECON_RAILS = ['BANK_TRANSFER', 'CRYPTO', 'PROCESSOR'] as const;
export type ReconRail = (typeof RECON_RAILS)[number];

/** The kinds of difference a run finds. */
export const BREAK_KINDS = [
  'MISSING_IN_LEDGER',
  'MISSING_ON_RAIL',
  'AMOUNT_DIFFERS',
  'STATE_DIFFERS',
] as const;
export type BreakKind = (typeof BREAK_KINDS)[number];

export const BREAK_STATUSES = ['OPEN', 'RESOLVED'] as const satisfies readonly ReconBreakStatus[];

export const BREAK_RESOLUTIONS = ['EXPLAINED', 'BOOKED_RAIL', 'REFUNDED_RETURN'] as const;

/** What a line of a rail's record is: money in, money taken back, money sent out. */
export const RAIL_LINE_KINDS = ['CREDIT', 'REVERSAL', 'DEBIT'] as const;

/**
 * One line of a rail's own record, kept as reconciliation read it (the bank's statement, the
 * chains' transfers into the deposit addresses): each run reads only what the rail added since
 * the last read (its `RECON_*` cursor in `rail_cursors`) and finds a day's lines here, by time.
 */
export const ReconRailLine = defineEntity({
  name: 'ReconRailLine',
  tableName: 'recon_rail_lines',
  indexes: [
    { name: 'recon_rail_lines_day_index', properties: ['rail', 'occurredAt'] },
    { name: 'recon_rail_lines_reference_index', properties: ['rail', 'reference'] },
  ],
  properties: {
    rail: p.enum(['BANK_TRANSFER', 'CRYPTO'] as const).primary(),
    kind: p.enum(RAIL_LINE_KINDS).primary(),
    /** The rail's own id of the line: a bank session id, a transaction hash. */
    lineId: p.string().length(200).primary(),
    /**
     * What the line is compared under: its own id for a credit, the credit's for a reversal, the
     * service's transfer reference for a debit (a refund sent).
     */
    reference: p.string().length(200),
    /** The rail account a run counts it under (`collection:bank`, `collection:crypto:…`, `transit:refunds:BANK`). */
    account: p.string().length(300),
    /** The ledger's narrower account, when there is one (`collection:bank:<account number>`). */
    ledgerAccount: p.string().length(300).nullable(),
    amount: money(),
    currency: p.string().length(8),
    occurredAt: p.datetime(),
  },
});
export type ReconRailLine = InferEntity<typeof ReconRailLine>;

/** A payout's final state as the processor's settlement report lists it. */
export const PROCESSOR_LINE_STATES = ['SUCCESSFUL', 'FAILED', 'RETURNED'] as const;

/**
 * One payout of the processor's settlement report, kept in its current state: the processor's
 * listing of report changes (read from the `RECON_PROCESSOR` cursor) says each time a payout
 * reaches its final state or is returned, and the line is replaced by the newer one. A day's
 * report is then the lines settled that day and those returned that day.
 */
export const ReconProcessorLine = defineEntity({
  name: 'ReconProcessorLine',
  tableName: 'recon_processor_lines',
  indexes: [
    { name: 'recon_processor_lines_settled_index', properties: ['processor', 'settledAt'] },
    { name: 'recon_processor_lines_returned_index', properties: ['processor', 'returnedAt'] },
  ],
  properties: {
    /** The processor's name, as outflows record it. */
    processor: p.string().length(100).primary(),
    /** The service's reference of the payout: the outflow id. */
    reference: p.string().length(200).primary(),
    processorReference: p.string().length(200).nullable(),
    amount: money(),
    currency: p.string().length(8),
    status: p.enum(PROCESSOR_LINE_STATES),
    failureCode: p.string().length(100).nullable(),
    settledAt: p.datetime(),
    returnedAt: p.datetime().nullable(),
    /** When the processor recorded the change this line is (its own clock). */
    changedAt: p.datetime(),
  },
});
export type ReconProcessorLine = InferEntity<typeof ReconProcessorLine>;

/**
 * Everything a rail has shown arriving on each collection account (reversals taken off), summed
 * as its lines are kept: a run reads the balance here instead of the rail's whole history.
 */
export const ReconRailTotal = defineEntity({
  name: 'ReconRailTotal',
  tableName: 'recon_rail_totals',
  properties: {
    account: p.string().length(300).primary(),
    currency: p.string().length(8).primary(),
    rail: p.enum(['BANK_TRANSFER', 'CRYPTO'] as const),
    amount: money(),
  },
});
export type ReconRailTotal = InferEntity<typeof ReconRailTotal>;

/**
 * One reconciliation of one rail for one UTC day: at most one row per (day, rail), so that running
 * a day again (by the schedule or by hand) redoes that run instead of adding another. The row is
 * leased while a run works on it, so two instances never run the same day and rail at once.
 */
export const ReconRun = defineEntity({
  name: 'ReconRun',
  tableName: 'recon_runs',
  uniques: [{ name: 'recon_runs_day_rail_unique', properties: ['day', 'rail'] }],
  indexes: [{ name: 'recon_runs_created_idx', properties: ['createdAt', 'id'] }],
  properties: {
    id: idColumn(),
    day: p.string().length(10),
    rail: p.enum(RECON_RAILS),
    /** RUNNING while a run works on it; DONE once it stored its counts and breaks; FAILED when the rail could not be read. */
    state: p.enum(['RUNNING', 'DONE', 'FAILED'] as const),
    /** Whether the rail's record of the day was complete (the day over at the rail) when it was read. */
    railComplete: p.boolean().default(false),
    /** How many times the day was run. */
    attempts: p.integer().default(0),
    /** Who started the last attempt: the schedule (null) or an operator. */
    startedBy: p.uuid().nullable(),
    startedAt: p.datetime().nullable(),
    finishedAt: p.datetime().nullable(),
    error: p.text().nullable(),
    leaseToken: p.uuid().nullable(),
    leaseUntil: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type ReconRun = InferEntity<typeof ReconRun>;

/** What one run found on one rail account in one currency: what matched, what each side listed. */
export const ReconAccount = defineEntity({
  name: 'ReconAccount',
  tableName: 'recon_accounts',
  properties: {
    run: () => p.manyToOne(ReconRun).primary(),
    /** The rail account, as the ledger names it (`collection:bank`, `collection:crypto:TRON:T…`, `transit:processor:…`). */
    account: p.string().length(300).primary(),
    currency: p.string().length(8).primary(),
    matchedCount: p.integer(),
    matchedAmount: money(),
    ledgerCount: p.integer(),
    ledgerAmount: money(),
    railCount: p.integer(),
    railAmount: money(),
    breaks: p.integer(),
    /**
     * For a collection account (a deposit address, the virtual accounts together): everything the
     * rail has ever shown arriving on it, as the run read it, and the ledger's balance of it at
     * that moment, signs turned to match (money received is positive on both). Null for the
     * processor. The ledger's invariant `collection_matches_rail` compares them.
     */
    railBalance: money().nullable(),
    ledgerBalance: money().nullable(),
  },
});
export type ReconAccount = InferEntity<typeof ReconAccount>;

/**
 * One difference between the books and a rail, found by a run: one row per (rail, kind,
 * reference) however often runs find it again. Its status is owned by
 * `machines/recon-break.machine.ts` through the engine.
 */
export const ReconBreak = defineEntity({
  name: 'ReconBreak',
  tableName: 'recon_breaks',
  uniques: [{ name: 'recon_breaks_rail_kind_reference_unique', properties: ['rail', 'kind', 'reference'] }],
  indexes: [
    { name: 'recon_breaks_created_idx', properties: ['createdAt', 'id'] },
    {
      // The operators' queue of open breaks (`admin.exceptions`, `recon breaks --open`).
      name: 'recon_breaks_open_index',
      expression:
        'create index "recon_breaks_open_index" on "recon_breaks" ("created_at", "id") where "status" = \'OPEN\'',
    },
  ],
  properties: {
    id: idColumn(),
    /** The run that found it first; later runs that find it again leave it. */
    run: () => p.manyToOne(ReconRun),
    day: p.string().length(10),
    rail: p.enum(RECON_RAILS),
    account: p.string().length(300),
    kind: p.enum(BREAK_KINDS),
    /** The rail's reference of the movement: a bank session id, a transaction hash, an outflow id. */
    reference: p.string().length(200),
    currency: p.string().length(8),
    ledgerAmount: money().nullable(),
    railAmount: money().nullable(),
    ledgerState: p.string().length(40).nullable(),
    railState: p.string().length(40).nullable(),
    tenantId: p.uuid().nullable(),
    payoutId: p.uuid().nullable(),
    inflowId: p.uuid().nullable(),
    outflowId: p.uuid().nullable(),
    /** What the difference is, in plain words, for the operator. */
    summary: p.text(),
    status: p.enum(BREAK_STATUSES),
    snapshot: p.json<Record<string, unknown>>(),
    resolution: p.enum(BREAK_RESOLUTIONS).nullable(),
    resolutionNote: p.text().nullable(),
    resolvedBy: p.uuid().nullable(),
    resolvedAt: p.datetime().nullable(),
    approvalId: p.uuid().nullable(),
    ...timestamps(),
  },
});
export type ReconBreak = InferEntity<typeof ReconBreak>;
