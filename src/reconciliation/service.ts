import { reconBreakMachine } from '#machines/recon-break.machine.ts';
import { columnsOf, type Sql, statement } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { initialState } from '#src/engine/engine.ts';
import { AppError } from '#src/http/errors.ts';
import { balances } from '#src/ledger/read.ts';
import { dayBefore, dayOf, dayStart } from '#src/lib/days.ts';
import { newId } from '#src/lib/ids.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { RECON_RAILS, type ReconRail } from './entities.ts';
import {
  type AccountTotals,
  addRows,
  breakOf,
  type CompareArgs,
  compareDay,
  type DayComparison,
  isBreak,
  noTotals,
  type PairRow,
  pairReferences,
} from './match.ts';
import { dayLineCount, type RailRecord, readRail } from './records.ts';

/**
 * Reconciliation runs (`docs/reconciliation.md`): for one UTC day and one rail, what is new in the
 * rail's own record is read (outside any transaction) and kept, the day's kept lines compared with the ledger's entries in
 * PostgreSQL (`./match.ts`), and the result stored in one transaction: the counts and sums per
 * rail account, replaced, and one break per difference, added once (a difference found again
 * keeps its break and its status). One run row per day and rail, leased while a run works on it:
 * running a day again redoes it, and two instances never run the same one at once. The comparison
 * runs where lag-tolerant reads go (the replica, when there is one); whatever did not match there
 * is paired again on the primary before it is stored, so that a replica's lag never becomes a
 * break or an out-of-balance account.
 */

/** How long one run may hold its row before another may take it over (a crashed run). */
const RUN_LEASE_MS = 10 * 60_000;

/** What one run did. */
export interface RunResult {
  runId: string;
  day: string;
  rail: ReconRail;
  matched: number;
  breaksFound: number;
  breaksNew: number;
  railComplete: boolean;
}

// The run's row, created once per (day, rail), then leased: by whoever finds it free.
const claimRun = statement(
  'recon_run_claim',
  `insert into recon_runs (id, day, rail, state, rail_complete, attempts, started_by, started_at,
       lease_token, lease_until, created_at, updated_at)
   values ($1, $2, $3, 'RUNNING', false, 1, $4, $5, $6, $7, $5, $5)
   on conflict (day, rail) do update
      set state = 'RUNNING', attempts = recon_runs.attempts + 1, started_by = $4, started_at = $5,
          finished_at = null, error = null, lease_token = $6, lease_until = $7, updated_at = $5
    where recon_runs.lease_until is null or recon_runs.lease_until < $5
   returning id`,
);

const holdRun = statement(
  'recon_run_hold',
  'select id from recon_runs where id = $1 and lease_token = $2 for update',
);

const finishRun = statement(
  'recon_run_finish',
  `update recon_runs set state = $2, rail_complete = $3, finished_at = $4, error = $5,
          lease_token = null, lease_until = null, updated_at = $4
    where id = $1 and lease_token = $6`,
);

const clearAccounts = statement('recon_accounts_clear', 'delete from recon_accounts where run_id = $1');

const insertAccounts = statement(
  'recon_accounts_insert',
  `insert into recon_accounts (run_id, account, currency, matched_count, matched_amount, ledger_count,
       ledger_amount, rail_count, rail_amount, breaks, rail_balance, ledger_balance)
   select $1, t.account, t.currency, t.matched_count, t.matched_amount, t.ledger_count, t.ledger_amount,
          t.rail_count, t.rail_amount, t.breaks, t.rail_balance, t.ledger_balance
     from unnest($2::text[], $3::text[], $4::int[], $5::numeric[], $6::int[], $7::numeric[], $8::int[],
                 $9::numeric[], $10::int[], $11::numeric[], $12::numeric[])
          as t(account, currency, matched_count, matched_amount, ledger_count, ledger_amount, rail_count,
               rail_amount, breaks, rail_balance, ledger_balance)`,
);

// A difference found before keeps its row, its status and its first run.
const insertBreaks = statement(
  'recon_breaks_insert',
  `insert into recon_breaks (id, run_id, day, rail, account, kind, reference, currency, ledger_amount,
       rail_amount, ledger_state, rail_state, tenant_id, payout_id, inflow_id, outflow_id, summary,
       status, snapshot, created_at, updated_at)
   select t.id, $1, $2, $3, t.account, t.kind, t.reference, t.currency, t.ledger_amount, t.rail_amount,
          t.ledger_state, t.rail_state, t.tenant_id, t.payout_id, t.inflow_id, t.outflow_id, t.summary,
          $4, $5::jsonb, $6, $6
     from unnest($7::uuid[], $8::text[], $9::text[], $10::text[], $11::text[], $12::numeric[],
                 $13::numeric[], $14::text[], $15::text[], $16::uuid[], $17::uuid[], $18::uuid[],
                 $19::uuid[], $20::text[])
          as t(id, account, kind, reference, currency, ledger_amount, rail_amount, ledger_state,
               rail_state, tenant_id, payout_id, inflow_id, outflow_id, summary)
    order by t.id
   on conflict (rail, kind, reference) do nothing
   returning id`,
);

/**
 * The ledger's balances of the rail's collection accounts (`collection:bank` sums the virtual
 * accounts), as money received: the ledger keeps them negative by what came in.
 */
async function ledgerCollections(
  tx: Sql,
  rail: ReconRail,
): Promise<Map<string, { currency: string; amount: Decimal }>> {
  const prefix =
    rail === 'BANK_TRANSFER' ? 'collection:bank' : rail === 'CRYPTO' ? 'collection:crypto:' : null;
  const out = new Map<string, { currency: string; amount: Decimal }>();
  if (!prefix) return out;
  for (const row of await balances(tx, prefix)) {
    out.set(row.account, { currency: row.currency, amount: toDecimal(row.balance).negated() });
  }
  return out;
}

/**
 * The run's account lines with each collection account's all-time balance on both sides; an
 * account with a balance and no movement that day gets a line of its own.
 */
function withBalances(
  accounts: readonly AccountTotals[],
  rail: RailRecord['balances'],
  ledger: Map<string, { currency: string; amount: Decimal }>,
): (AccountTotals & { railBalance: Decimal | null; ledgerBalance: Decimal | null })[] {
  const collection = new Set([...rail.keys(), ...ledger.keys()]);
  const lines = accounts.map((a) => ({
    ...a,
    railBalance: null as Decimal | null,
    ledgerBalance: null as Decimal | null,
  }));
  for (const account of collection) {
    const currency = rail.get(account)?.currency ?? ledger.get(account)!.currency;
    let line = lines.find((l) => l.account === account && l.currency === currency);
    if (!line) {
      line = { ...noTotals(account, currency), railBalance: null, ledgerBalance: null };
      lines.push(line);
    }
    line.railBalance = rail.get(account)?.amount ?? toDecimal(0);
    line.ledgerBalance = ledger.get(account)?.amount ?? toDecimal(0);
  }
  return lines;
}

/**
 * The day's comparison (made where lag-tolerant reads go) made good on the primary, in the run's
 * transaction: every reference that did not match (a break, a movement still in flight, a
 * reversal, a line of the rail the ledger's day lacks) is paired again by reference, the ledger's
 * side looked up by key whatever its day, and its counts replace the day's. A replica that had not
 * replayed every line of the day the run just kept has the whole day compared on the primary
 * instead, and the collection balances are read again when one differs from the rail's. What the
 * replica had not replayed yet is then no break.
 */
async function settle(
  tx: Sql,
  args: CompareArgs,
  rail: RailRecord,
  seen: {
    comparison: DayComparison;
    collections: Map<string, { currency: string; amount: Decimal }>;
    onReplica: boolean;
  },
): Promise<{
  totals: AccountTotals[];
  rows: PairRow[];
  collections: typeof seen.collections;
}> {
  let day = seen.comparison;
  if (seen.onReplica) {
    const kept = await dayLineCount(tx, args.rail, args.day, args.processor);
    if (
      kept.lines !== day.railLines ||
      !toDecimal(kept.sum).eq(day.railSum) ||
      kept.returned !== day.railReturned
    )
      day = await compareDay(tx, args);
  }
  const totals = day.totals.map((t) => ({ ...t }));
  let rows: PairRow[] = [];
  const doubtful = [...new Set(day.rows.map((r) => r.reference))];
  if (doubtful.length > 0) {
    rows = await pairReferences(tx, args, doubtful);
    addRows(totals, day.rows, -1);
    addRows(totals, rows, 1);
  }
  let collections = seen.collections;
  if (seen.onReplica) {
    const differs = [...rail.balances].some(([account, r]) => {
      const l = seen.collections.get(account);
      return !l || l.currency !== r.currency || !l.amount.eq(r.amount);
    });
    const moreInBooks = [...seen.collections.keys()].some((account) => !rail.balances.has(account));
    if (differs || moreInBooks) collections = await ledgerCollections(tx, args.rail);
  }
  return {
    totals: totals.filter((t) => t.railCount + t.ledgerCount + t.breaks + t.matchedCount > 0),
    rows,
    collections,
  };
}

/** Refuses a day that has not begun yet: its record cannot say anything. */
function checkDay(deps: Deps, day: string): void {
  if (dayStart(day) > deps.clock.now()) {
    throw new AppError('VALIDATION_FAILED', {
      details: [{ field: 'date', issue: 'is in the future; a day can be reconciled once it has begun' }],
    });
  }
}

/**
 * Runs (or runs again) the reconciliation of `rail` for `day`. Null when another instance is
 * running that same day and rail right now.
 */
export async function runReconciliation(
  deps: Deps,
  args: { day: string; rail: ReconRail; operatorId?: string | null },
): Promise<RunResult | null> {
  checkDay(deps, args.day);
  const now = deps.clock.now();
  const token = newId();
  const [claimed] = await deps.sql.rows<{ id: string }>(claimRun, [
    newId(),
    args.day,
    args.rail,
    args.operatorId ?? null,
    now,
    token,
    new Date(now.getTime() + RUN_LEASE_MS),
  ]);
  if (!claimed) return null;
  const runId = claimed.id;
  try {
    const rail = await readRail(deps, args.rail, args.day);
    const compareArgs: CompareArgs = { rail: args.rail, day: args.day, processor: rail.processor };
    const seen = await deps.reads.read(null, async ({ sql }) => {
      // Two reads at once, each on a connection of its own: the day's comparison is the long one.
      const [comparison, collections] = await Promise.all([
        compareDay(sql, compareArgs),
        ledgerCollections(sql, args.rail),
      ]);
      return { comparison, collections, onReplica: sql !== deps.sql };
    });
    return await deps.sql.transaction(async (tx) => {
      const [held] = await tx.rows(holdRun, [runId, token]);
      if (!held) throw new Error(`reconciliation run ${runId} lost its lease`);
      const result = await settle(tx, compareArgs, rail, seen);
      const found = result.rows.filter(isBreak);
      const accounts = withBalances(result.totals, rail.balances, result.collections);
      await tx.rows(clearAccounts, [runId]);
      if (accounts.length > 0) {
        await tx.rows(insertAccounts, [
          runId,
          ...columnsOf(
            accounts.map((a) => [
              a.account,
              a.currency,
              a.matchedCount,
              a.matchedAmount.toFixed(),
              a.ledgerCount,
              a.ledgerAmount.toFixed(),
              a.railCount,
              a.railAmount.toFixed(),
              a.breaks,
              a.railBalance?.toFixed() ?? null,
              a.ledgerBalance?.toFixed() ?? null,
            ]),
            11,
          ),
        ]);
      }
      let inserted: { id: string }[] = [];
      if (found.length > 0) {
        const start = initialState(reconBreakMachine, undefined as never);
        const finishedAt = deps.clock.now();
        inserted = await tx.rows<{ id: string }>(insertBreaks, [
          runId,
          args.day,
          args.rail,
          start.status,
          JSON.stringify(start.snapshot),
          finishedAt,
          ...columnsOf(
            found.map((b) => {
              const { account, summary } = breakOf(b);
              return [
                newId(),
                account,
                b.outcome,
                b.reference,
                b.r_currency ?? b.b_currency,
                b.b_amount === null ? null : toDecimal(b.b_amount).toFixed(),
                b.r_amount === null ? null : toDecimal(b.r_amount).toFixed(),
                b.b_state,
                b.r_state,
                b.tenant_id,
                b.payout_id,
                b.inflow_id,
                b.outflow_id,
                summary,
              ];
            }),
            14,
          ),
        ]);
      }
      await tx.rows(finishRun, [runId, 'DONE', rail.complete, deps.clock.now(), null, token]);
      if (inserted.length > 0) {
        deps.log.warn(
          { run: runId, day: args.day, rail: args.rail, breaks: inserted.length },
          'reconciliation found new breaks',
        );
      }
      return {
        runId,
        day: args.day,
        rail: args.rail,
        matched: result.totals.reduce((n, a) => n + a.matchedCount, 0),
        breaksFound: found.length,
        breaksNew: inserted.length,
        railComplete: rail.complete,
      };
    });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    await deps.sql.rows(finishRun, [runId, 'FAILED', false, deps.clock.now(), message.slice(0, 1000), token]);
    throw err;
  }
}

const runExists = statement('recon_run_exists', 'select rail from recon_runs where day = $1 and state = $2');

/**
 * The `reconciliation` job's pass: once the day's run time (RECON_RUN_AT, UTC) has passed, runs
 * yesterday's reconciliation of every rail that has no finished run of that day yet. Instances
 * side by side take different rails, or find them leased and move on.
 */
export async function runDueReconciliations(deps: Deps): Promise<{ ran: RunResult[] }> {
  const now = deps.clock.now();
  const [hours, minutes] = deps.config.RECON_RUN_AT.split(':').map(Number) as [number, number];
  const today = dayOf(now);
  const dueAt = new Date(dayStart(today).getTime() + (hours * 60 + minutes) * 60_000);
  if (now < dueAt) return { ran: [] };
  const day = dayBefore(today);
  const done = new Set((await deps.sql.rows<{ rail: string }>(runExists, [day, 'DONE'])).map((r) => r.rail));
  const ran: RunResult[] = [];
  for (const rail of RECON_RAILS) {
    if (done.has(rail)) continue;
    try {
      const result = await runReconciliation(deps, { day, rail });
      if (result) ran.push(result);
    } catch (err) {
      // One rail that cannot be read now does not stop the others; the next pass tries again.
      deps.log.error({ err, day, rail }, 'reconciliation run failed');
    }
  }
  return { ran };
}
