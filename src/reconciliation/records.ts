import { NETWORKS } from '#src/corridors/corridors.ts';
import { columnsOf, type Sql, statement, toDate } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { accountName } from '#src/ledger/chart.ts';
import { dayEnd, dayStart } from '#src/lib/days.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import type { SettlementChange } from '#src/providers/rails.ts';
import type { RailSource } from '#src/settlement/entities.ts';
import {
  type RailPage,
  type RailRead,
  type RailReader,
  readRail as readRailFromCursor,
} from '#src/settlement/rail-reader.ts';
import type { ReconRail } from './entities.ts';

/**
 * The rail's own record of one UTC day, read over HTTP outside any transaction. Rail accounts are
 * named as the ledger names them: `collection:bank` for the bank's virtual accounts together,
 * `transit:refunds:BANK` for the refunds the bank sent, `collection:crypto:<network>:<address>`
 * per deposit address, `transit:processor:<name>`.
 *
 * Every rail is read incrementally: each read asks the rail only for what it listed since the
 * last read. The bank's statement and the chains' transfers are kept as lines (`recon_rail_lines`)
 * with each collection account's running total (`recon_rail_totals`); the processor's settlement
 * report as one line per payout in its current state (`recon_processor_lines`), from the
 * processor's listing of report changes, so that a return replaces the line of the success. The
 * comparison with the ledger (`./match.ts`) finds a day's lines there by time. The processor's
 * changes are also read ahead of the runs, by the `reconciliation` job ({@link pullSettlementChanges}).
 */

const PAGE = 500;
/** The processor's largest page of its report changes: a day of 100,000 payouts in 100 requests. */
const CHANGES_PAGE = 1000;

/** What a rail's record says about a day, and whether that day is over at the rail. */
export interface RailRecord {
  /** The processor whose kept report lines a run compares (the processor rail only). */
  processor?: string;
  complete: boolean;
  /**
   * Everything the rail has ever shown arriving on each collection account (its whole record,
   * reversals taken off), by account and currency; empty for the processor.
   */
  balances: Map<string, { currency: string; amount: Decimal }>;
}

/** Where the ledger keeps a bank refund between its sending and its arrival: the rail account of the bank's debits. */
const BANK_REFUNDS = accountName('refundRail', { rail: 'BANK' });

/** Reads the rail's own record of `day`. */
export async function readRail(deps: Deps, rail: ReconRail, day: string): Promise<RailRecord> {
  switch (rail) {
    case 'BANK_TRANSFER':
      return readStatement(deps, day);
    case 'CRYPTO':
      return readChains(deps, day);
    case 'PROCESSOR':
      return readSettlementReport(deps, day);
  }
}

/** A line of a rail's record as kept in `recon_rail_lines`. */
interface KeptLine {
  kind: 'CREDIT' | 'REVERSAL' | 'DEBIT';
  lineId: string;
  reference: string;
  account: string;
  ledgerAccount: string | null;
  amount: Decimal;
  currency: string;
  occurredAt: Date;
}

// Keeps the lines not kept yet and adds them to their collection account's total (a credit
// adds, a reversal takes off; a debit is money sent, no arrival): a page read twice adds nothing.
const keepLines = statement(
  'recon_rail_lines_keep',
  `with added as (
     insert into recon_rail_lines (rail, kind, line_id, reference, account, ledger_account, amount,
         currency, occurred_at)
     select $1, t.kind, t.line_id, t.reference, t.account, t.ledger_account, t.amount, t.currency,
            t.occurred_at
       from unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::numeric[],
                   $8::text[], $9::timestamptz[])
            as t(kind, line_id, reference, account, ledger_account, amount, currency, occurred_at)
     on conflict do nothing
     returning kind, account, amount, currency)
   insert into recon_rail_totals (account, currency, rail, amount)
   select account, currency, $1, sum(case kind when 'CREDIT' then amount else -amount end)
     from added where kind <> 'DEBIT'
    group by account, currency
   on conflict (account, currency) do update set amount = recon_rail_totals.amount + excluded.amount`,
);

// Keeps the processor's report lines in their current state: a later change replaces the line.
const keepProcessorLines = statement(
  'recon_processor_lines_keep',
  `insert into recon_processor_lines as l (processor, reference, processor_reference, amount, currency,
       status, failure_code, settled_at, returned_at, changed_at)
   select $1, t.reference, t.processor_reference, t.amount, t.currency, t.status, t.failure_code,
          t.settled_at, t.returned_at, t.changed_at
     from unnest($2::text[], $3::text[], $4::numeric[], $5::text[], $6::text[], $7::text[],
                 $8::timestamptz[], $9::timestamptz[], $10::timestamptz[])
          as t(reference, processor_reference, amount, currency, status, failure_code, settled_at,
               returned_at, changed_at)
   on conflict (processor, reference) do update
      set processor_reference = excluded.processor_reference, amount = excluded.amount,
          currency = excluded.currency, status = excluded.status, failure_code = excluded.failure_code,
          settled_at = excluded.settled_at, returned_at = excluded.returned_at, changed_at = excluded.changed_at
    where l.changed_at <= excluded.changed_at`,
);

/** How many lines of a day a rail's record holds, their sum, and how many of them say returned. */
export interface DayLines {
  lines: number;
  sum: string;
  returned: number;
}

/** The bank's or the chains' kept lines of the day: `$1` the rail, `$2`, `$3` the day. */
export const railLinesOfDay = statement(
  'recon_rail_lines_of_day',
  `select count(*)::int as lines, coalesce(sum(amount), 0)::text as sum, 0 as returned
     from recon_rail_lines
    where rail = $1 and occurred_at >= $2 and occurred_at < $3`,
);

/** The processor's kept report lines of the day: `$1` the processor, `$2`, `$3` the day. */
export const processorLinesOfDay = statement(
  'recon_processor_lines_of_day',
  `select count(*)::int as lines, coalesce(sum(amount), 0)::text as sum,
          count(*) filter (where status = 'RETURNED')::int as returned
     from recon_processor_lines
    where processor = $1
      and ((settled_at >= $2 and settled_at < $3) or (returned_at >= $2 and returned_at < $3))`,
);

/**
 * How many lines of `day` the primary keeps for `rail` (the processor's: `processor`'s), their
 * sum, and how many say returned: what a replica's comparison must have seen (a kept line of the
 * processor changes only by its return).
 */
export async function dayLineCount(
  sql: Sql,
  rail: ReconRail,
  day: string,
  processor: string | undefined,
): Promise<DayLines> {
  const [found] = await sql.rows<DayLines>(rail === 'PROCESSOR' ? processorLinesOfDay : railLinesOfDay, [
    rail === 'PROCESSOR' ? (processor ?? null) : rail,
    dayStart(day),
    dayEnd(day),
  ]);
  return found!;
}

const railTotals = statement(
  'recon_rail_totals_of_rail',
  'select account, currency, amount::text as amount from recon_rail_totals where rail = $1',
);

const readThrough = statement(
  'recon_rail_read_through',
  'select min(read_through) as read_through from rail_cursors where source = any($1::text[])',
);

/** How often a run asks again for a rail another run is reading right now, and how long between. */
const LEASE_TRIES = 50;
const LEASE_WAIT_MS = 200;

/**
 * Brings what is kept of `source` up to the rail's present: reads only what the rail listed
 * after the cursor of the last read (the leased cursor of `src/settlement/rail-reader.ts`), and
 * saves each page with the cursor in one transaction. When another reader (a run, the job's pull)
 * is reading the same rail, waits for it (what it reads is what this one needs), unless `wait` is
 * false: then returns at once, nothing read.
 */
async function keepUpWith<T>(
  deps: Deps,
  reader: Pick<RailReader<T>, 'source' | 'list' | 'timeOf'> & {
    keep(tx: Sql, items: readonly T[]): Promise<void>;
  },
  pageSize: number,
  wait = true,
): Promise<RailRead> {
  for (let attempt = 0; ; attempt++) {
    const read = await readRailFromCursor<T>(
      deps,
      {
        source: reader.source,
        intervalMs: null,
        list: reader.list,
        timeOf: reader.timeOf,
        async save(tx, page) {
          if (page.items.length > 0) await reader.keep(tx, page.items);
          return page.items.length;
        },
      },
      { pageSize, maxPages: Number.MAX_SAFE_INTEGER },
    );
    if (read.read || !wait) return read;
    if (attempt >= LEASE_TRIES)
      throw new Error(`the ${reader.source} record is being read by another run; try again`);
    await new Promise((resolve) => setTimeout(resolve, LEASE_WAIT_MS));
  }
}

/** {@link keepUpWith} for a rail whose lines go to `recon_rail_lines`. */
function keepRailLines(
  deps: Deps,
  rail: 'BANK_TRANSFER' | 'CRYPTO',
  source: RailSource,
  list: (cursor: string | null, limit: number) => Promise<RailPage<KeptLine>>,
): Promise<RailRead> {
  return keepUpWith<KeptLine>(
    deps,
    {
      source,
      list,
      timeOf: (line) => line.occurredAt,
      async keep(tx, items) {
        await tx.rows(keepLines, [
          rail,
          ...columnsOf(
            items.map((l) => [
              l.kind,
              l.lineId,
              l.reference,
              l.account,
              l.ledgerAccount,
              l.amount.toFixed(),
              l.currency,
              l.occurredAt,
            ]),
            8,
          ),
        ]);
      },
    },
    PAGE,
  );
}

/** Whether every source has been read past the end of `day` (the rail's own time). */
async function readPast(deps: Deps, sources: readonly RailSource[], day: string): Promise<boolean> {
  const [through] = await deps.sql.rows<{ read_through: Date | null }>(readThrough, [[...sources]]);
  return through?.read_through != null && toDate(through.read_through) >= dayEnd(day);
}

/** The collection totals of `rail`, once its sources are read up to now, and whether `day` is over there. */
async function keptRecord(
  deps: Deps,
  rail: 'BANK_TRANSFER' | 'CRYPTO',
  sources: readonly RailSource[],
  day: string,
): Promise<RailRecord> {
  const balances: RailRecord['balances'] = new Map();
  for (const t of await deps.sql.rows<{ account: string; currency: string; amount: string }>(railTotals, [
    rail,
  ])) {
    balances.set(t.account, { currency: t.currency, amount: toDecimal(t.amount) });
  }
  return { complete: await readPast(deps, sources, day), balances };
}

/**
 * The bank's statement: its credits and debits (refunds sent) of the day, and its reversals of
 * the day (of credits of any day).
 */
async function readStatement(deps: Deps, day: string): Promise<RailRecord> {
  await keepRailLines(deps, 'BANK_TRANSFER', 'RECON_BANK', async (cursor, limit) => {
    const page = await deps.rails.bank.listCredits({ cursor, limit });
    const lines: KeptLine[] = [
      ...page.credits.map(
        (c): KeptLine => ({
          kind: 'CREDIT',
          lineId: c.sessionId,
          reference: c.sessionId,
          account: 'collection:bank',
          ledgerAccount: `collection:bank:${c.accountNumber}`,
          amount: c.amount,
          currency: c.currency,
          occurredAt: c.occurredAt,
        }),
      ),
      ...page.reversals.map(
        (r): KeptLine => ({
          kind: 'REVERSAL',
          lineId: r.sessionId,
          reference: r.reversesSessionId,
          account: 'collection:bank',
          ledgerAccount: `collection:bank:${r.accountNumber}`,
          amount: r.amount,
          currency: r.currency,
          occurredAt: r.occurredAt,
        }),
      ),
      ...page.debits.map(
        (d): KeptLine => ({
          kind: 'DEBIT',
          lineId: d.sessionId,
          reference: d.reference,
          account: BANK_REFUNDS,
          ledgerAccount: null,
          amount: d.amount,
          currency: d.currency,
          occurredAt: d.occurredAt,
        }),
      ),
    ].sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime());
    return { items: lines, nextCursor: page.nextCursor, asOf: page.asOf };
  });
  return keptRecord(deps, 'BANK_TRANSFER', ['RECON_BANK'], day);
}

/**
 * Each chain's mined transfers into the service's deposit addresses, and the mined sends of its
 * hot wallet (refunds sent on the chain, under the service's reference).
 */
async function readChains(deps: Deps, day: string): Promise<RailRecord> {
  const sources: RailSource[] = [];
  for (const network of NETWORKS) {
    const source = `RECON_${network}` as const;
    sources.push(source);
    await keepRailLines(deps, 'CRYPTO', source, async (cursor, limit) => {
      const page = await deps.rails.chains.listTransfers(network, { cursor, limit });
      return {
        items: page.transfers
          .filter((t) => t.blockNumber <= page.tip)
          .map(
            (t): KeptLine => ({
              kind: 'CREDIT',
              lineId: t.txHash,
              reference: t.txHash,
              account: `collection:crypto:${network}:${t.toAddress}`,
              ledgerAccount: null,
              amount: t.amount,
              currency: t.currency,
              occurredAt: t.blockTime,
            }),
          ),
        nextCursor: page.nextCursor,
        asOf: page.tipTime,
        tip: page.tip,
      };
    });
  }
  for (const network of NETWORKS) {
    const source = `RECON_${network}_SENDS` as const;
    sources.push(source);
    await keepRailLines(deps, 'CRYPTO', source, async (cursor, limit) => {
      const page = await deps.rails.chains.listSends(network, { cursor, limit });
      return {
        items: page.sends.map(
          (t): KeptLine => ({
            kind: 'DEBIT',
            lineId: t.txHash,
            reference: t.reference,
            account: accountName('refundRail', { rail: network }),
            ledgerAccount: null,
            amount: t.amount,
            currency: t.currency,
            occurredAt: t.blockTime,
          }),
        ),
        nextCursor: page.nextCursor,
        asOf: page.tipTime,
        tip: page.tip,
      };
    });
  }
  return keptRecord(deps, 'CRYPTO', sources, day);
}

/**
 * Brings the kept lines of the processor's settlement report up to the processor's present: the
 * report changes it listed since the last read (`RECON_PROCESSOR`), each payout's line replaced by
 * its newer state. Run by the `reconciliation` job ahead of the runs, and by each processor run
 * before it compares (then usually a single request that lists nothing new). With `wait` false
 * (the job), a read another instance holds is left to it.
 */
export function pullSettlementChanges(deps: Deps, options: { wait?: boolean } = {}): Promise<RailRead> {
  const processor = deps.rails.processor;
  return keepUpWith<SettlementChange>(
    deps,
    {
      source: 'RECON_PROCESSOR',
      async list(cursor, limit) {
        const page = await processor.settlementChanges({ cursor, limit });
        return { items: page.payouts, nextCursor: page.nextCursor, asOf: page.asOf };
      },
      timeOf: (change) => change.changedAt,
      async keep(tx, items) {
        // A payout listed twice in one page is kept as its later change says.
        const latest = new Map(items.map((c) => [c.reference, c]));
        await tx.rows(keepProcessorLines, [
          processor.name,
          ...columnsOf(
            [...latest.values()].map((c) => [
              c.reference,
              c.processorReference,
              c.amount.toFixed(),
              c.currency,
              c.status,
              c.failureCode,
              c.settledAt,
              c.returnedAt,
              c.changedAt,
            ]),
            9,
          ),
        ]);
      },
    },
    CHANGES_PAGE,
    options.wait ?? true,
  );
}

/**
 * The processor's settlement report of the day, as kept: its changes read up to now first. The
 * day is over at the processor once its changes have been read past the day's end.
 */
async function readSettlementReport(deps: Deps, day: string): Promise<RailRecord> {
  await pullSettlementChanges(deps);
  return {
    processor: deps.rails.processor.name,
    complete: await readPast(deps, ['RECON_PROCESSOR'], day),
    balances: new Map(),
  };
}
