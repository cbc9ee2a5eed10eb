import { NETWORKS } from '#src/corridors/corridors.ts';
import { columnsOf, statement, toDate } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { accountName } from '#src/ledger/chart.ts';
import { dayEnd, dayStart } from '#src/lib/days.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import type { RailSource } from '#src/settlement/entities.ts';
import { type RailPage, readRail as readRailFromCursor } from '#src/settlement/rail-reader.ts';
import type { ReconRail } from './entities.ts';
import type { ReportLine } from './match.ts';

/**
 * The rail's own record of one UTC day, read over HTTP outside any transaction. Rail accounts are
 * named as the ledger names them: `collection:bank` for the bank's virtual accounts together,
 * `transit:refunds:BANK` for the refunds the bank sent, `collection:crypto:<network>:<address>`
 * per deposit address, `transit:processor:<name>`.
 *
 * The bank's statement and the chains' transfers are read incrementally: each run asks the rail
 * only for what it listed since the last read, keeps those lines (`recon_rail_lines`) and each
 * collection account's running total (`recon_rail_totals`); the comparison with the ledger
 * (`./match.ts`) finds a day's lines there by time. The processor's report is per day already and
 * is handed to the comparison as it was read.
 */

const PAGE = 500;
/** The processor's largest page of its settlement report: a day of 100,000 payouts in 100 requests. */
const REPORT_PAGE = 1000;

/** What a rail's record says about a day, and whether that day is over at the rail. */
export interface RailRecord {
  /** The processor's report of the day (empty for the rails whose lines are kept). */
  report: ReportLine[];
  /** The rail account of the processor's report. */
  processorAccount?: string;
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

/** How many lines of the day the primary keeps for a rail, and their sum: what a replica's comparison must have seen. */
export const dayLineCount = statement(
  'recon_rail_lines_of_day',
  `select count(*)::int as lines, coalesce(sum(amount), 0)::text as sum
     from recon_rail_lines
    where rail = $1 and occurred_at >= $2 and occurred_at < $3`,
);

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
 * Brings the kept lines of `source` up to the rail's present: reads only what the rail listed
 * after the cursor of the last read (the leased cursor of `src/settlement/rail-reader.ts`). When
 * another run is reading the same rail, waits for it: its lines are the ones this run needs.
 */
async function keepUpWith(
  deps: Deps,
  rail: 'BANK_TRANSFER' | 'CRYPTO',
  source: RailSource,
  list: (cursor: string | null, limit: number) => Promise<RailPage<KeptLine>>,
): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const read = await readRailFromCursor<KeptLine>(
      deps,
      {
        source,
        intervalMs: null,
        list,
        timeOf: (line) => line.occurredAt,
        async save(tx, page) {
          if (page.items.length === 0) return 0;
          await tx.rows(keepLines, [
            rail,
            ...columnsOf(
              page.items.map((l) => [
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
          return page.items.length;
        },
      },
      { pageSize: PAGE, maxPages: Number.MAX_SAFE_INTEGER },
    );
    if (read.read) return;
    if (attempt >= LEASE_TRIES)
      throw new Error(`the ${source} record is being read by another run; try again`);
    await new Promise((resolve) => setTimeout(resolve, LEASE_WAIT_MS));
  }
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
  const [through] = await deps.sql.rows<{ read_through: Date | null }>(readThrough, [[...sources]]);
  const complete = through?.read_through != null && toDate(through.read_through) >= dayEnd(day);
  return { report: [], complete, balances };
}

/**
 * The bank's statement: its credits and debits (refunds sent) of the day, and its reversals of
 * the day (of credits of any day).
 */
async function readStatement(deps: Deps, day: string): Promise<RailRecord> {
  await keepUpWith(deps, 'BANK_TRANSFER', 'RECON_BANK', async (cursor, limit) => {
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
    await keepUpWith(deps, 'CRYPTO', source, async (cursor, limit) => {
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
    await keepUpWith(deps, 'CRYPTO', source, async (cursor, limit) => {
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

/** The processor's settlement report of the day. */
async function readSettlementReport(deps: Deps, day: string): Promise<RailRecord> {
  const processor = deps.rails.processor;
  const report: ReportLine[] = [];
  const [from, to] = [dayStart(day).getTime(), dayEnd(day).getTime()];
  let cursor: string | null = null;
  let complete = false;
  for (;;) {
    const page = await processor.settlementReport(day, { cursor, limit: REPORT_PAGE });
    complete = page.complete;
    for (const p of page.payouts) {
      report.push({
        reference: p.reference,
        amount: p.amount,
        currency: p.currency,
        state: p.status,
        // A payout settled earlier and returned today is compared, not counted as today's money.
        inPeriod: p.settledAt.getTime() >= from && p.settledAt.getTime() < to,
      });
    }
    if (page.nextCursor === null) break;
    cursor = page.nextCursor;
  }
  return { report, processorAccount: `transit:processor:${processor.name}`, complete, balances: new Map() };
}
