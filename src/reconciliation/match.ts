import { type Sql, statement } from '#src/db/sql.ts';
import { dayEnd, dayStart } from '#src/lib/days.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import type { BreakKind, ReconRail } from './entities.ts';

/**
 * The comparison of one day of a rail's own record with the ledger, in PostgreSQL, set-based: one
 * statement per run joins the rail's lines of the day with the ledger's entries of the same
 * movements and returns the counts and sums per rail account and the references that did not
 * match. Nothing is brought into the service but those.
 *
 * The ledger's side of a movement is read from its entries, through the object that caused them
 * (the rail's reference is that object's: a bank session id or transaction hash is an inflow's, an
 * outflow id is the processor's reference, `<refund id>:<attempt>` a refund's):
 * - money in (a bank credit, a chain transfer into a deposit address): the entries of the inflow
 *   on its `collection:` account; the amount the ledger received there, `CREDITED`. An inflow
 *   still waiting for its confirmations has no entry yet and is `IN_FLIGHT`; any other inflow
 *   without an entry is missing from the ledger;
 * - money paid out through the processor: the outflow's entries on `world:beneficiaries` (paid:
 *   `SUCCESSFUL`, that amount), else on `transit:processor:…` (still there: `IN_FLIGHT`; sent and
 *   come back: `FAILED`, the amount sent); an outflow that failed before any money moved is
 *   `FAILED` with no amount;
 * - money sent back (a refund at the bank or on a chain): the refund's entries on
 *   `world:merchants:…` (delivered: `SUCCESSFUL`, that amount), else on `transit:refunds:…`, read
 *   as the processor's are.
 * The period of the books is when the movement happened at the rail as the service recorded it
 * (an inflow's arrival, an outflow or refund becoming final), through indexes; a reference the
 * rail lists that the day's books lack is looked up by key.
 */

/** The outcome of one pairing of a rail line with the books. */
export type Outcome = BreakKind | 'MATCHED' | 'IN_FLIGHT' | 'NOT_COUNTED';

/** One reference as the statement paired it (the rail side, the books' side, or both). */
export interface PairRow {
  reference: string;
  outcome: Outcome;
  r_account: string | null;
  r_ledger_account: string | null;
  r_amount: string | null;
  r_currency: string | null;
  r_state: string | null;
  r_in_period: boolean | null;
  b_reference: string | null;
  b_account: string | null;
  b_ledger_account: string | null;
  b_amount: string | null;
  b_currency: string | null;
  b_state: string | null;
  b_in_period: boolean | null;
  tenant_id: string | null;
  payout_id: string | null;
  inflow_id: string | null;
  outflow_id: string | null;
}

/** Counts and sums of one rail account in one currency. */
export interface AccountTotals {
  account: string;
  currency: string;
  matchedCount: number;
  matchedAmount: Decimal;
  ledgerCount: number;
  ledgerAmount: Decimal;
  railCount: number;
  railAmount: Decimal;
  breaks: number;
}

/** What the statement returns. */
export interface DayComparison {
  totals: AccountTotals[];
  /** Every pairing of a reference that did not simply match (all of them, with `only`). */
  rows: PairRow[];
  /** How many lines of the day the rail's record held where the statement ran, and their sum. */
  railLines: number;
  railSum: string;
  /** How many of those lines said returned (a kept processor line changes only by its return). */
  railReturned: number;
}

const UUID_RE = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$';
const REFUND_REF_RE = '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}:[0-9]+$';

// Two statements per rail. The day's statement ($1 the day's start, $2 its end) pairs the rail's
// lines of the day with the ledger's side of the day, counts per rail account in one pass and
// returns the references that did not match. The statement by reference ($3 the references) pairs
// those references alone, the ledger's side looked up by key whatever its day (a reversal of an
// older credit, a return of an older payout, a movement the ledger has on another day), and
// returns every pairing. Entries are found by their cause (ledger_entries_cause_idx); their
// accounts are tested through left(), which no index on the account serves, so that the planner
// never reads every entry of an account kind instead. The processor's day is the exception: its
// paid outflows' entries on world:beneficiaries are read in one pass by account and time, and
// hashed ({@link OUTFLOWS_OF_DAY}).

type Mode = 'day' | 'refs';
const inDay = (column: string) => `(${column} >= $1 and ${column} < $2)`;

/** The rail's kept lines ($rail: BANK_TRANSFER or CRYPTO); a day's statement leaves reversals to {@link REVERSALS}. */
const keptLines = (mode: Mode, rail: string) => `
  rail as (
    select l.kind, l.reference, l.account, l.ledger_account, l.amount, l.currency,
           case l.kind when 'CREDIT' then 'CREDITED' when 'REVERSAL' then 'REVERSED' else 'SUCCESSFUL' end as state,
           -- A reversal is compared with the credit it takes back; not counted as money of the day.
           l.kind <> 'REVERSAL' as in_period
      from recon_rail_lines l
     where l.rail = ${rail} and ${inDay('l.occurred_at')}
       and ${mode === 'day' ? "l.kind <> 'REVERSAL'" : 'l.reference = any($3::text[])'}
  )`;

/** The reversals of the day: each is paired by reference with the credit it takes back. */
const REVERSALS = (rail: string) => `
  reversals as materialized (
    select l.reference, l.account, l.ledger_account, l.amount, l.currency
      from recon_rail_lines l
     where l.rail = ${rail} and ${inDay('l.occurred_at')} and l.kind = 'REVERSAL'
  )`;

/** Inflows on `rail` with their one entry on a collection account (RECEIVED), as the ledger's side of money in. */
const creditBooks = (mode: Mode, rail: string) => `
    select i.external_ref as reference,
           case when ${rail} = 'BANK_TRANSFER' then 'collection:bank'
                else 'collection:crypto:' || i.network || ':' || i.to_account end as account,
           coalesce(e.account, case when ${rail} = 'BANK_TRANSFER' then 'collection:bank:' || i.to_account end) as ledger_account,
           -e.amount as amount, coalesce(e.currency, i.currency) as currency,
           case when e.id is null then 'IN_FLIGHT' else 'CREDITED' end as state,
           ${inDay('i.arrived_at')} as in_period,
           i.tenant_id, i.payout_id, i.id as inflow_id, null::uuid as outflow_id
      from inflows i
      left join ledger_entries e
        on e.cause_id = i.id and e.cause_object = 'inflow' and left(e.account, 11) = 'collection:'
     where i.rail = ${rail} and ${mode === 'day' ? inDay('i.arrived_at') : 'i.external_ref = any($3::text[])'}
       -- An inflow the ledger has no entry of is missing from it, unless it is still confirming.
       and (e.id is not null or i.state = 'PENDING_CONFIRMATION')`;

/** Refunds to a `destination` with their entries on transit:refunds and world:merchants, as the ledger's side of money sent back. */
const refundBooks = (mode: Mode, destination: 'BANK_ACCOUNT' | 'CRYPTO_ADDRESS') => `
    select r.id::text || ':' || r.attempt_number as reference,
           'transit:refunds:' || case when r.destination_type = 'BANK_ACCOUNT' then 'BANK' else r.destination_network end as account,
           null::text as ledger_account,
           case when e.delivered > 0 then e.delivered when e.in_transit > 0 then e.in_transit
                when e.sent > 0 then e.sent end as amount,
           coalesce(e.currency, r.received_currency) as currency,
           case when e.delivered > 0 then 'SUCCESSFUL' when e.in_transit > 0 then 'IN_FLIGHT'
                when e.sent > 0 or r.status = 'FAILED' then 'FAILED' else 'IN_FLIGHT' end as state,
           (r.status = 'SUCCESSFUL' and ${inDay('r.settled_at')}) as in_period,
           r.tenant_id, r.payout_id, null::uuid as inflow_id, null::uuid as outflow_id
      from refunds r
      left join lateral (
        select min(e.currency) as currency,
               sum(e.amount) filter (where left(e.account, 16) = 'world:merchants:') as delivered,
               sum(e.amount) filter (where left(e.account, 16) = 'transit:refunds:') as in_transit,
               max(e.amount) filter (where left(e.account, 16) = 'transit:refunds:') as sent
          from ledger_entries e
         where e.cause_id = r.id and e.cause_object = 'refund'
           and (left(e.account, 16) = 'transit:refunds:' or left(e.account, 16) = 'world:merchants:')) e on true
     where r.destination_type = '${destination}' and ${
       mode === 'day'
         ? `r.status = 'SUCCESSFUL' and ${inDay('r.settled_at')}`
         : `r.id in (select split_part(x, ':', 1)::uuid from unnest($3::text[]) x where x ~ '${REFUND_REF_RE}')`
     }`;

/**
 * The processor's report of the day, as kept (`$processor` its name): the payouts that reached
 * their final state that day, and those returned that day (compared, not counted as the day's
 * money: they settled on an earlier day), each in its current state.
 */
const reportLines = (mode: Mode, processor: string) => `
  rail as (
    select 'REPORT'::text as kind, l.reference, 'transit:processor:' || l.processor as account,
           null::text as ledger_account, l.amount, l.currency, l.status as state,
           ${inDay('l.settled_at')} as in_period
      from recon_processor_lines l
     where l.processor = ${processor} and (${inDay('l.settled_at')} or ${inDay('l.returned_at')})${
       mode === 'day' ? '' : ' and l.reference = any($3::text[])'
     }
  )`;

/** An outflow `o` with the sums `e` of its entries (currency, paid, in_transit, sent), as the ledger's side of money paid out. */
const outflowBook = `
    select o.id::text as reference, 'transit:processor:' || o.processor as account, null::text as ledger_account,
           case when e.paid > 0 then e.paid when e.in_transit > 0 then e.in_transit when e.sent > 0 then e.sent end as amount,
           coalesce(e.currency, o.destination_currency) as currency,
           case when e.paid > 0 then 'SUCCESSFUL' when e.in_transit > 0 then 'IN_FLIGHT'
                when e.sent > 0 or o.status = 'FAILED' then 'FAILED' else 'IN_FLIGHT' end as state,
           ((o.status = 'SUCCESSFUL' and ${inDay('o.settled_at')})
             or (o.status = 'FAILED' and ${inDay('o.updated_at')})) as in_period,
           o.tenant_id, o.payout_id, null::uuid as inflow_id, o.id as outflow_id`;

/**
 * The sums of outflows' entries `e` on world:beneficiaries and on their processor's transit
 * account (an outflow's entries are on those two and its payout's), currency included.
 */
const OUTFLOW_SUMS = `
        min(e.currency) as currency,
        sum(e.amount) filter (where e.account = 'world:beneficiaries') as paid,
        sum(e.amount) filter (where left(e.account, 18) = 'transit:processor:') as in_transit,
        max(e.amount) filter (where left(e.account, 18) = 'transit:processor:') as sent`;

/** One outflow's entries looked up by cause: for the few outflows a statement reads by key. */
const OUTFLOW_ENTRIES_BY_CAUSE = `
      left join lateral (
        select ${OUTFLOW_SUMS}
          from ledger_entries e
         where e.cause_id = o.id and e.cause_object = 'outflow'
           and (e.account || '' = 'world:beneficiaries' or left(e.account, 18) = 'transit:processor:')) e on true`;

/** The outflows that became final in the day ($1, $2). */
const OUTFLOW_IN_DAY = `((o.status = 'SUCCESSFUL' and ${inDay('o.settled_at')}) or (o.status = 'FAILED' and ${inDay('o.updated_at')}))`;

// An outflow's entries are written by its transitions, each of which updates its row: they lie
// between its creation and its last update, give or take the clocks of the instances that wrote
// them (MARGIN). The day's entries on world:beneficiaries are read once, by account and time
// (ledger_entries_account_idx), over the day and LOOKBACK before it; an outflow of the day
// created earlier than that, or updated after the day, has its entries looked up by cause.
const LOOKBACK = "interval '1 hour'";
const MARGIN = "interval '1 hour'";

// An outflow is paid by the one PAID leg of its flows (docs/ledger.md): a single entry on
// world:beneficiaries, the same amount in the same currency as the transit entries of its SENT
// and PAID legs (each in the destination currency). An outflow with one positive entry there is
// SUCCESSFUL with that amount whatever else it has, so the day's pass reads the beneficiaries'
// entries alone, one per paid outflow, as the plain join of the same lines does. The outflows it
// finds unpaid (failed, still in transit) or with more than one such entry are few and have their
// entries on both accounts looked up by cause.

/** The day's outflows with their entries, as the ledger's side of money paid out. */
const OUTFLOWS_OF_DAY = `
  paid_of_day as (
    select e.cause_id, count(*) as entries, min(e.amount) as paid, min(e.currency) as currency
      from ledger_entries e
     where e.account = 'world:beneficiaries'
       and e.created_at >= $1::timestamptz - ${LOOKBACK} - ${MARGIN} and e.created_at < $2::timestamptz + ${MARGIN}
       and e.cause_object = 'outflow'
     group by e.cause_id
  ),
  outflows_of_day as materialized (
    select o.id, o.processor, o.status, o.destination_currency, o.settled_at, o.updated_at, o.tenant_id, o.payout_id,
           case when p.entries = 1 and p.paid > 0 then p.paid end as paid, p.currency as paid_currency
      from outflows o
      left join paid_of_day p
        on p.cause_id = o.id and o.created_at >= $1::timestamptz - ${LOOKBACK} and o.updated_at < $2
     where ${OUTFLOW_IN_DAY}
  ),
  books as (
    ${outflowBook}
      from outflows_of_day o,
           lateral (select o.paid_currency as currency, o.paid, null::numeric as in_transit, null::numeric as sent) e
     where o.paid is not null
    union all
    ${outflowBook}
      from outflows_of_day o ${OUTFLOW_ENTRIES_BY_CAUSE}
     where o.paid is null
  )`;

/** The outflows a statement reads by key ($3 the references), with their entries looked up by cause. */
const OUTFLOWS_BY_REFERENCE = `
  books as (
    ${outflowBook}
      from outflows o ${OUTFLOW_ENTRIES_BY_CAUSE}
     where o.id in (select x::uuid from unnest($3::text[]) x where x ~ '${UUID_RE}')
  )`;

const BREAK_LIST = "('MISSING_IN_LEDGER', 'MISSING_ON_RAIL', 'AMOUNT_DIFFERS', 'STATE_DIFFERS')";

/** The pairing of `rail` with `books` by reference. */
const JOINED = `
  joined as (
    select coalesce(r.reference, b.reference) as reference,
           r.reference as r_reference, r.account as r_account, r.ledger_account as r_ledger_account,
           r.amount as r_amount, r.currency as r_currency, r.state as r_state, r.in_period as r_in_period,
           b.reference as b_reference, b.account as b_account, b.ledger_account as b_ledger_account,
           b.amount as b_amount, b.currency as b_currency, b.state as b_state, b.in_period as b_in_period,
           b.tenant_id, b.payout_id, b.inflow_id, b.outflow_id,
           case when b.reference is null then 'MISSING_IN_LEDGER'
                when r.reference is null then
                  case when b.state = 'IN_FLIGHT' then 'IN_FLIGHT' when b.in_period then 'MISSING_ON_RAIL'
                       else 'NOT_COUNTED' end
                when b.state = 'IN_FLIGHT' and b.amount is null then 'IN_FLIGHT'
                when b.amount is not null and (b.amount <> r.amount or b.currency <> r.currency) then 'AMOUNT_DIFFERS'
                when b.state = 'IN_FLIGHT' then 'IN_FLIGHT'
                when b.state <> r.state then 'STATE_DIFFERS'
                else 'MATCHED' end as outcome
      -- Compared byte by byte (what equality is in every deterministic collation), so sorted and hashed so.
      from rail r full join books b on b.reference = r.reference collate "C"
  )`;

const rowJson = (j: string) => `json_build_object(
    'reference', ${j}.reference, 'outcome', ${j}.outcome,
    'r_account', ${j}.r_account, 'r_ledger_account', ${j}.r_ledger_account, 'r_amount', ${j}.r_amount::text,
    'r_currency', ${j}.r_currency, 'r_state', ${j}.r_state, 'r_in_period', ${j}.r_in_period,
    'b_reference', ${j}.b_reference, 'b_account', ${j}.b_account, 'b_ledger_account', ${j}.b_ledger_account,
    'b_amount', ${j}.b_amount::text, 'b_currency', ${j}.b_currency, 'b_state', ${j}.b_state,
    'b_in_period', ${j}.b_in_period, 'tenant_id', ${j}.tenant_id, 'payout_id', ${j}.payout_id,
    'inflow_id', ${j}.inflow_id, 'outflow_id', ${j}.outflow_id)`;

/**
 * One pass over the day's pairings: per rail account and currency, the counts and sums, and the
 * pairings that did not match (and those of every reference a reversal names); the reversals
 * follow as rows of their own, to be paired by reference.
 */
const dayTotals = (withReversals: boolean) => `
  select j.account, j.currency,
         count(*) filter (where j.r_in_period)::int as rail_count,
         coalesce(sum(j.r_amount) filter (where j.r_in_period), 0)::text as rail_amount,
         count(*) filter (where j.r_in_period and j.outcome = 'MATCHED')::int as matched_count,
         coalesce(sum(j.r_amount) filter (where j.r_in_period and j.outcome = 'MATCHED'), 0)::text as matched_amount,
         count(*) filter (where j.b_in_period)::int as ledger_count,
         coalesce(sum(j.b_amount) filter (where j.b_in_period), 0)::text as ledger_amount,
         count(*) filter (where j.outcome in ${BREAK_LIST})::int as breaks,
         count(j.r_reference)::int as rail_lines, coalesce(sum(j.r_amount), 0)::text as rail_sum,
         count(*) filter (where j.r_state = 'RETURNED')::int as rail_returned,
         coalesce(json_agg(j.row) filter (where j.row is not null), '[]'::json) as rows
    -- Only what the counts need, and the row of a pairing to return: narrow rows to group.
    from (select coalesce(p.r_account, p.b_account) as account, coalesce(p.r_currency, p.b_currency) as currency,
                 p.r_reference, p.r_in_period, p.r_amount, p.r_state, p.b_in_period, p.b_amount, p.outcome,
                 case when p.outcome <> 'MATCHED'${
                   withReversals ? ' or p.reference in (select reference from reversals)' : ''
                 } then ${rowJson('p')} end as row
            -- offset 0: projected before grouping, so that the rows grouped are these narrow ones.
            from joined p offset 0) j
   group by j.account, j.currency${
     withReversals
       ? `
  union all
  select null, null, 0, '0', 0, '0', 0, '0', 0, count(*)::int, coalesce(sum(v.amount), 0)::text, 0,
         coalesce(json_agg(json_build_object(
           'reference', v.reference, 'outcome', 'NOT_COUNTED', 'r_account', v.account,
           'r_ledger_account', v.ledger_account, 'r_amount', v.amount::text, 'r_currency', v.currency,
           'r_state', 'REVERSED', 'r_in_period', false)), '[]'::json)
    from reversals v`
       : ''
   }`;

const pairRows = `select coalesce(json_agg(${rowJson('j')}), '[]'::json) as rows from joined j`;

/** The bank's statement (credits, reversals, debits) against inflows and bank refunds: $3 the rail. */
export const bankDay = statement(
  'recon_bank_day',
  `with ${keptLines('day', '$3')}, ${REVERSALS('$3')},
   books as (${creditBooks('day', '$3')} union all ${refundBooks('day', 'BANK_ACCOUNT')}),
   ${JOINED}
   ${dayTotals(true)}`,
);

export const bankPairs = statement(
  'recon_bank_pairs',
  `with ${keptLines('refs', '$4')},
   books as (${creditBooks('refs', '$4')} union all ${refundBooks('refs', 'BANK_ACCOUNT')}),
   ${JOINED}
   ${pairRows}`,
);

/** The chains' transfers into the deposit addresses and out of the hot wallet against crypto inflows and chain refunds: $3 the rail. */
export const chainDay = statement(
  'recon_chain_day',
  `with ${keptLines('day', '$3')}, ${REVERSALS('$3')},
   books as (${creditBooks('day', '$3')} union all ${refundBooks('day', 'CRYPTO_ADDRESS')}),
   ${JOINED}
   ${dayTotals(true)}`,
);

export const chainPairs = statement(
  'recon_chain_pairs',
  `with ${keptLines('refs', '$4')},
   books as (${creditBooks('refs', '$4')} union all ${refundBooks('refs', 'CRYPTO_ADDRESS')}),
   ${JOINED}
   ${pairRows}`,
);

/** The processor's kept settlement report against outflows: $3 (or $4) the processor. */
export const processorDay = statement(
  'recon_processor_day',
  `with ${reportLines('day', '$3')}, ${OUTFLOWS_OF_DAY}, ${JOINED} ${dayTotals(false)}`,
);

export const processorPairs = statement(
  'recon_processor_pairs',
  `with ${reportLines('refs', '$4')}, ${OUTFLOWS_BY_REFERENCE}, ${JOINED} ${pairRows}`,
);

interface DayRow {
  account: string | null;
  currency: string | null;
  matched_count: number;
  matched_amount: string;
  ledger_count: number;
  ledger_amount: string;
  rail_count: number;
  rail_amount: string;
  breaks: number;
  rail_lines: number;
  rail_sum: string;
  rail_returned: number;
  rows: PairRow[];
}

/** What a run compares: the rail and its day, and for the processor rail, whose report. */
export interface CompareArgs {
  rail: ReconRail;
  day: string;
  processor?: string | undefined;
}

/** The parameter after the common ones: the rail, or the processor whose kept report is compared. */
const railParam = (args: CompareArgs) => (args.rail === 'PROCESSOR' ? args.processor : args.rail);

/** The statements of a rail: its day's, and its pairing by reference. */
function statementsOf(rail: ReconRail) {
  switch (rail) {
    case 'BANK_TRANSFER':
      return { day: bankDay, pairs: bankPairs };
    case 'CRYPTO':
      return { day: chainDay, pairs: chainPairs };
    case 'PROCESSOR':
      return { day: processorDay, pairs: processorPairs };
  }
}

// The day's statement hashes and groups a whole day of both sides at once: given the memory to do
// it without spilling to disk (a day of 100,000 movements a side needs some 30 MB), for its
// transaction only. Run once per day, it is not compiled (JIT): its estimated cost, far above the
// thresholds, would have PostgreSQL spend more time compiling than the statement takes to run.
const dayMemory = statement(
  'recon_day_memory',
  "select set_config('work_mem', '64MB', true), set_config('jit', 'off', true)",
);

/** Pairs one day of `args.rail` with the ledger on `sql`: counts per rail account, and what did not match. */
export async function compareDay(sql: Sql, args: CompareArgs): Promise<DayComparison> {
  const window = [dayStart(args.day), dayEnd(args.day)];
  const found = await sql.transaction(async (tx) => {
    await tx.rows(dayMemory);
    return await tx.rows<DayRow>(statementsOf(args.rail).day, [...window, railParam(args)]);
  });
  const out: DayComparison = { totals: [], rows: [], railLines: 0, railSum: '0', railReturned: 0 };
  let railSum = toDecimal(0);
  for (const row of found) {
    out.rows.push(...row.rows);
    out.railLines += row.rail_lines;
    out.railReturned += row.rail_returned;
    railSum = railSum.plus(row.rail_sum);
    if (row.account === null || row.currency === null) continue;
    out.totals.push({
      account: row.account,
      currency: row.currency,
      matchedCount: row.matched_count,
      matchedAmount: toDecimal(row.matched_amount),
      ledgerCount: row.ledger_count,
      ledgerAmount: toDecimal(row.ledger_amount),
      railCount: row.rail_count,
      railAmount: toDecimal(row.rail_amount),
      breaks: row.breaks,
    });
  }
  out.railSum = railSum.toFixed();
  return out;
}

/** Pairs the `references` of one day of `args.rail` alone, the ledger's side looked up by key: every pairing. */
export async function pairReferences(
  sql: Sql,
  args: CompareArgs,
  references: readonly string[],
): Promise<PairRow[]> {
  const [found] = await sql.rows<{ rows: PairRow[] }>(statementsOf(args.rail).pairs, [
    dayStart(args.day),
    dayEnd(args.day),
    [...references],
    railParam(args),
  ]);
  return found!.rows;
}

const BREAKS: readonly string[] = ['MISSING_IN_LEDGER', 'MISSING_ON_RAIL', 'AMOUNT_DIFFERS', 'STATE_DIFFERS'];

/** Whether a pairing is a break. */
export const isBreak = (row: PairRow): row is PairRow & { outcome: BreakKind } =>
  BREAKS.includes(row.outcome);

/** The totals of an account with nothing counted yet. */
export function noTotals(account: string, currency: string): AccountTotals {
  const zero = toDecimal(0);
  return {
    account,
    currency,
    matchedCount: 0,
    matchedAmount: zero,
    ledgerCount: 0,
    ledgerAmount: zero,
    railCount: 0,
    railAmount: zero,
    breaks: 0,
  };
}

/**
 * Adds (`sign` 1) or takes off (-1) what `rows` count in `totals`: the rail's lines of the day,
 * the matched ones and the breaks under the rail's account, each book of the day once under its own.
 */
export function addRows(totals: AccountTotals[], rows: readonly PairRow[], sign: 1 | -1): void {
  const total = (account: string, currency: string): AccountTotals => {
    let t = totals.find((x) => x.account === account && x.currency === currency);
    if (!t) {
      t = noTotals(account, currency);
      totals.push(t);
    }
    return t;
  };
  const books = new Set<string>();
  for (const row of rows) {
    if (row.r_account && row.r_currency && row.r_in_period) {
      const t = total(row.r_account, row.r_currency);
      t.railCount += sign;
      t.railAmount = t.railAmount.plus(toDecimal(row.r_amount!).times(sign));
      if (row.outcome === 'MATCHED') {
        t.matchedCount += sign;
        t.matchedAmount = t.matchedAmount.plus(toDecimal(row.r_amount!).times(sign));
      }
    }
    if (isBreak(row))
      total((row.r_account ?? row.b_account)!, (row.r_currency ?? row.b_currency)!).breaks += sign;
    if (row.b_reference && row.b_in_period && !books.has(row.b_reference)) {
      books.add(row.b_reference);
      const t = total(row.b_account!, row.b_currency!);
      t.ledgerCount += sign;
      if (row.b_amount !== null) t.ledgerAmount = t.ledgerAmount.plus(toDecimal(row.b_amount).times(sign));
    }
  }
}

const STATE_WORDS: Record<string, string> = {
  SUCCESSFUL: 'paid',
  FAILED: 'failed',
  RETURNED: 'returned after it was paid',
  REVERSED: 'reversed by the bank',
  CREDITED: 'received',
};

const words = (state: string) => STATE_WORDS[state] ?? state.toLowerCase();

/** The break's account and its sentence, for the operator. */
export function breakOf(row: PairRow & { outcome: BreakKind }): { account: string; summary: string } {
  const account = (row.b_ledger_account ?? row.r_ledger_account ?? row.r_account ?? row.b_account)!;
  const ref = row.reference;
  const rail = `${toDecimal(row.r_amount ?? 0).toFixed()} ${row.r_currency}`;
  const books = `${toDecimal(row.b_amount ?? 0).toFixed()} ${row.b_currency}`;
  switch (row.outcome) {
    case 'MISSING_IN_LEDGER':
      return {
        account,
        summary: `The rail shows ${rail} ${words(row.r_state!)} under ${ref}; the ledger has nothing under that reference.`,
      };
    case 'MISSING_ON_RAIL':
      return {
        account,
        summary: `The ledger has ${books} ${words(row.b_state!)} under ${ref}; the rail's record of the day does not list it.`,
      };
    case 'AMOUNT_DIFFERS':
      return { account, summary: `The ledger has ${books} under ${ref}; the rail shows ${rail}.` };
    case 'STATE_DIFFERS':
      return {
        account,
        summary: `The ledger says ${ref} was ${words(row.b_state!)}; the rail says ${words(row.r_state!)}.`,
      };
  }
}
