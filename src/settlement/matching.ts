import type { InflowStatus } from '#machines/inflow.machine.ts';
import { paymentInstructionMachine } from '#machines/payment-instruction.machine.ts';
import { type Sql, statement, TextArray, toDate } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { step } from '#src/engine/engine.ts';
import { type InstructionWrite, writeInstructionSteps } from '#src/instructions/service.ts';
import { type LedgerTransaction, post } from '#src/ledger/ledger.ts';
import { crashPoint } from '#src/lib/crash-points.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { applyPayoutSteps, type PayoutStep, type TriggeredBy } from '#src/payouts/lifecycle.ts';
import { type LockedPayout, lockPayouts } from '#src/payouts/resource.ts';
import { type InflowMachineRow, type InflowStep, stepInflowOrThrow } from './lifecycle.ts';
import { inflowLedger } from './money.ts';
import { type InstructionFacts, judgeBankInflow, judgeCryptoInflow, settlementTotals } from './rules.ts';

/**
 * Settlement matching (product decisions §2): every CONFIRMED inflow ends MATCHED or HELD against
 * a payout, HELD unattributed, or UNMATCHED. The verdicts are pure (`rules.ts`); this module
 * gathers the facts under row locks and writes the results, a batch of inflows per transaction:
 * inflows, instructions (PAID), and each payout's SETTLEMENT_CONFIRMED with its received total,
 * timeline and outbox rows, in a handful of statements whatever the batch size.
 *
 * Locks: a batch takes shared deposit addresses and then its inflows, both FOR UPDATE SKIP LOCKED
 * (neither ever waits), then instructions (id order), then payouts (id order). A single inflow
 * (the bank callback, a retry) is claimed and then waits for its address (address order), then
 * the same. Instruction generation locks CREATED payouts and then the addresses (address order),
 * instruction expiry locks instructions and then payouts, operators lock the inflow, the
 * instruction and the payout, and a payout's failure locks the payout and then the inflows held
 * against it (which matching writes only under that payout's lock), so none of them can close a
 * cycle with matching.
 */

/** Where one inflow ended. */
export interface MatchOutcome {
  inflowId: string;
  state: 'MATCHED' | 'HELD' | 'UNMATCHED';
  payoutId: string | null;
  /** Why it is where it is, for logs and operators. */
  reason: string;
}

/** What one matching pass did. */
export interface MatchSummary {
  matched: number;
  held: number;
  unmatched: number;
  /** Inflows whose matching threw; they stay CONFIRMED and are tried again by the next pass. */
  failed: number;
  /** Their ids, so that a caller can tell whose money they are. */
  failedInflows: string[];
}

/** Inflows claimed per transaction. */
export const MATCH_BATCH = 500;
/** Batches per pass: a backlog of up to 50,000 inflows is matched before the chains are read again. */
const MAX_MATCH_ROUNDS = 100;
/** How far past a batch's size the oldest money is looked at to choose the addresses a batch takes. */
const DUE_WINDOW = 4;
/** Attempts for one inflow whose facts changed under it (a payout ended meanwhile). */
const MAX_SINGLE_ATTEMPTS = 5;

/** An inflow as matching reads it (numeric and timestamps as PostgreSQL's text). */
interface InflowRow {
  id: string;
  tenant_id: string;
  rail: 'CRYPTO' | 'BANK_TRANSFER';
  amount: string;
  currency: string;
  to_account: string;
  network: string | null;
  state: InflowStatus;
  snapshot: Record<string, unknown>;
  /** When the rail says the money arrived: what every verdict judges it by. */
  arrived_at: string | Date;
}

const INFLOW_COLUMNS =
  'id, tenant_id, rail, network, amount, currency, to_account, state, snapshot, arrived_at';

/**
 * The shared addresses a batch takes, locked FOR UPDATE SKIP LOCKED before its inflows: of the
 * addresses that the oldest CONFIRMED crypto money ($1 inflows, except $2) went to, oldest money
 * first, about as many as hold a batch ($3 inflows) of it, and at least one. Another instance
 * takes the next ones at the same time, so instances match side by side instead of queueing for
 * the same addresses; an address's inflows are still judged by one transaction at a time, oldest
 * first. Neither this lock nor the claim that follows ever waits, so taking the address before
 * its inflows closes no cycle with a single inflow's matching, which claims the inflow and then
 * waits for its address.
 */
const lockDueAddresses = statement(
  'settlement_lock_due_addresses',
  `with oldest as (
     select to_account, created_at from inflows
      where state = 'CONFIRMED' and rail = 'CRYPTO' and id <> all($2::uuid[])
      order by created_at, id limit $1
   ),
   due as (select to_account, min(created_at) as first, count(*) as n from oldest group by to_account)
   select a.address from deposit_addresses a join due d on d.to_account = a.address
    order by d.first, a.address
    limit (select greatest(1, ceil($3::numeric * count(*) / greatest(1, sum(n)))) from due)
    for update of a skip locked`,
);

/** The oldest CONFIRMED inflows to the addresses the batch holds ($3) or to virtual accounts. */
const claimOldest = statement(
  'settlement_claim_inflows',
  `select ${INFLOW_COLUMNS} from inflows
    where state = 'CONFIRMED' and (rail = 'BANK_TRANSFER' or to_account = any($3::text[]))
      and id <> all($2::uuid[])
    order by created_at, id limit $1
    for update skip locked`,
);

// The given inflows, `$2` their tenants (the same rows, on those tenants' nodes once sharded).
const claimByIds = statement(
  'settlement_claim_inflows_by_id',
  `select ${INFLOW_COLUMNS} from inflows
    where id = any($1::uuid[]) and tenant_id = any($2::uuid[]) and state = 'CONFIRMED'
    order by created_at, id
    for update skip locked`,
);

// Without a lock: the oldest money, to try one by one when a batch failed before it claimed any.
const peekOldest = statement(
  'settlement_confirmed_inflows',
  `select id, tenant_id from inflows where state = 'CONFIRMED' and id <> all($2::uuid[])
    order by created_at, id limit $1`,
);

// The lock instruction generation takes on a shared address, in the same (address) order: no
// instruction appears on it, and no other inflow to it is judged, until this batch is settled.
const lockAddresses = statement(
  'settlement_lock_deposit_addresses',
  'select id from deposit_addresses where address = any($1::text[]) order by address for update',
);

/** An instruction on a receiving account, locked, with what its verdicts need. */
export interface InstructionRow {
  id: string;
  payout_id: string;
  rail: 'CRYPTO' | 'BANK_TRANSFER';
  account_unique: string;
  tenant_id: string;
  expected_currency: string;
  status: InstructionFacts['status'];
  snapshot: Record<string, unknown>;
  expected_amount: string;
  expires_at: string | Date;
  created_at: string | Date;
  payout_status: string;
  held_total: string;
}

const INSTRUCTION_COLUMNS = `i.id, i.payout_id, i.rail, i.account_unique, i.tenant_id, i.expected_currency, i.status,
       i.snapshot, i.expected_amount, i.expires_at, i.created_at, p.status as payout_status,
       (select coalesce(sum(f.amount), 0) from inflows f where f.payout_id = i.payout_id and f.state = 'HELD')
         as held_total`;

/**
 * The instructions the verdicts of a batch can turn on, locked FOR UPDATE in id order (not their
 * payouts: expiry locks instruction then payout; the chosen payouts are locked afterwards). Per
 * inflow ($1-$7: rail, account, tenant, currency, amount, arrival, arrival − the recent window;
 * $8: its rank among the batch's inflows to the same account):
 *
 * - bank: the account's one instruction (the newest, should an account ever be reused);
 * - crypto, rules 1 and 2: the instructions of exactly its amount, open or closed recently;
 * - crypto, rule 1b: every held open instruction (money attributed, still short) on the address;
 * - crypto, rules 3 to 5, only when no instruction of exactly its amount was open at its arrival
 *   (otherwise rule 1 or 2 decides whatever the batch does): the `rank` largest open ones below
 *   its amount and the `rank` smallest open ones above. Each earlier inflow of the batch to the
 *   address pays at most one of them, so one is left, or these are all there are.
 *
 * Not every instruction of a busy shared address (hundreds are open at once), which is what keeps
 * a batch's locks and reads proportional to its inflows.
 */
const lockCandidates = statement(
  'settlement_lock_instructions',
  `with u as (
     select * from unnest($1::text[], $2::text[], $3::uuid[], $4::text[], $5::numeric[], $6::timestamptz[],
                          $7::timestamptz[], $8::int[])
       as u(rail, account, tenant_id, currency, amount, at, since, rank)
   ),
   crypto as (
     select u.*, not exists (
              select 1 from payment_instructions e
               where e.account_unique = u.account and e.expected_amount = u.amount and e.status = 'UNPAID'
                 and e.tenant_id = u.tenant_id and e.rail = 'CRYPTO' and e.expected_currency = u.currency
                 and e.expires_at > u.at and e.created_at <= u.at) as inexact
       from u where u.rail = 'CRYPTO'
   ),
   candidates as (
     select (select b.id from payment_instructions b
              where b.account_unique = u.account and b.tenant_id = u.tenant_id and b.rail = 'BANK_TRANSFER'
              order by b.created_at desc limit 1) as id
       from u where u.rail = 'BANK_TRANSFER'
     union
     select i.id from crypto c join payment_instructions i
         on i.account_unique = c.account and i.expected_amount = c.amount and i.tenant_id = c.tenant_id
        and i.rail = 'CRYPTO' and i.expected_currency = c.currency
        and (i.status = 'UNPAID' or i.expires_at > c.since)
     union
     select i.id from inflows f join payment_instructions i on i.payout_id = f.payout_id
      where f.state = 'HELD' and i.status = 'UNPAID' and i.rail = 'CRYPTO'
        and (i.account_unique, i.tenant_id, i.expected_currency) in (select account, tenant_id, currency from crypto)
     union
     select b.id from crypto c cross join lateral (
       select i.id from payment_instructions i join payouts p on p.id = i.payout_id
        where i.account_unique = c.account and i.status = 'UNPAID' and i.tenant_id = c.tenant_id
          and i.rail = 'CRYPTO' and i.expected_currency = c.currency and i.expires_at > c.at
          and p.status = 'PENDING_PAYMENT' and i.expected_amount < c.amount
        order by i.expected_amount desc, i.created_at, i.id limit c.rank) b
      where c.inexact
     union
     select a.id from crypto c cross join lateral (
       select i.id from payment_instructions i join payouts p on p.id = i.payout_id
        where i.account_unique = c.account and i.status = 'UNPAID' and i.tenant_id = c.tenant_id
          and i.rail = 'CRYPTO' and i.expected_currency = c.currency and i.expires_at > c.at
          and p.status = 'PENDING_PAYMENT' and i.expected_amount > c.amount
        order by i.expected_amount, i.id limit c.rank) a
      where c.inexact
   )
   select ${INSTRUCTION_COLUMNS}
     from payment_instructions i join payouts p on p.id = i.payout_id
    where i.id in (select id from candidates)
    order by i.id
    for update of i`,
  // Per-inflow subqueries and lateral scans of the instructions: planned for each batch.
  { replan: true },
);

/** Operators name the payout: its instruction, locked. */
const lockInstructionOfPayout = statement(
  'settlement_lock_instruction_of_payout',
  `select ${INSTRUCTION_COLUMNS}
     from payment_instructions i join payouts p on p.id = i.payout_id
    where i.payout_id = $1
    for update of i`,
);

/**
 * Money attributed to the payouts before and held (read after their locks, so that nothing is
 * missed). Only HELD: money that covered a payout (MATCHED) moved it past PENDING_PAYMENT in the
 * same transaction, so a payout that can still take money has none; and the few HELD rows are
 * what the query reads whatever the planner thinks of the many MATCHED ones. `$2` holds the
 * payouts' tenants: the same rows, found on those tenants' nodes alone once sharded.
 */
const earlierInflows = statement(
  'settlement_earlier_inflows',
  `select id, payout_id, amount, state, snapshot from inflows
    where payout_id = any($1::uuid[]) and tenant_id = any($2::uuid[]) and state = 'HELD'
    order by created_at, id`,
);

// Null keeps a column as it is: an inflow moved to HELD or UNMATCHED changes its state and little else.
// The ids are also given as a list: the planner then finds the rows through the primary key
// whatever it thinks of the table's size (joined to the unnest alone, it hashed all of it), each
// row with its tenant. The machine snapshots come as text in binary (`TextArray`), each parsed
// once into its column.
const updateInflows = statement(
  'settlement_update_inflows',
  `update inflows f
      set state = u.state,
          snapshot = u.snapshot::jsonb,
          is_matched = coalesce(u.is_matched, f.is_matched),
          matched_at = coalesce(u.matched_at, f.matched_at),
          is_underpaid = coalesce(u.is_underpaid, f.is_underpaid),
          payout_id = coalesce(u.payout_id, f.payout_id),
          instruction_id = coalesce(u.instruction_id, f.instruction_id),
          overpayment_amount = coalesce(u.overpayment_amount, f.overpayment_amount),
          updated_at = $9
     from unnest($1::uuid[], $2::text[], $3::boolean[], $4::timestamptz[], $5::boolean[], $6::uuid[], $7::uuid[],
                 $8::numeric[], $10::text[], $11::uuid[])
          as u(id, state, is_matched, matched_at, is_underpaid, payout_id, instruction_id, overpayment_amount,
               snapshot, tenant_id)
    where f.id = any($1::uuid[]) and f.id = u.id and f.tenant_id = u.tenant_id`,
);

/** How an inflow came to be attributed, recorded on the payout's timeline. */
export type AttributionRule = 'EXACT' | 'TOP_UP' | 'OVERPAYMENT' | 'ACCOUNT' | 'OPERATOR';

/** The inflow's side of a decision. */
export interface InflowFacts extends InflowMachineRow {
  tenantId: string;
  amount: Decimal;
  currency: string;
  rail: 'CRYPTO' | 'BANK_TRANSFER';
  network: string | null;
  toAccount: string;
}

/** Money attributed to a payout and its instruction, the payout locked and PENDING_PAYMENT. */
interface Attribution {
  inflow: InflowFacts;
  instruction: InstructionRow;
  /** The inflow's payout, of the inflow's tenant. */
  payout: LockedPayout;
  rule: AttributionRule;
  triggeredBy: TriggeredBy;
  /** Extra facts for the payout's timeline row (an operator's: `operator_id`, `approval_id`). */
  metadata?: Record<string, unknown> | null;
}

/** A verdict that attributes the inflow to nobody. */
interface Unattributed {
  inflow: InflowFacts;
  to: 'HELD' | 'UNMATCHED';
  reason: string;
  now: Date;
}

/** One inflow's change, columns left null are kept. */
interface InflowWrite {
  id: string;
  tenantId: string;
  state: InflowStatus;
  snapshot: Record<string, unknown>;
  isMatched: boolean | null;
  matchedAt: Date | null;
  isUnderpaid: boolean | null;
  payoutId: string | null;
  instructionId: string | null;
  overpayment: Decimal | null;
}

/** Everything one transaction writes. */
interface SettlementWrites {
  inflows: InflowWrite[];
  instructions: InstructionWrite[];
  payouts: PayoutStep[];
  /** The money the inflows' transitions move, appended in one statement. */
  ledger: LedgerTransaction[];
  outcomes: MatchOutcome[];
}

const emptyWrites = (): SettlementWrites => ({
  inflows: [],
  instructions: [],
  payouts: [],
  ledger: [],
  outcomes: [],
});

/** An inflow by its primary key. */
export interface InflowKey {
  id: string;
  tenantId: string;
}

/**
 * Matches one CONFIRMED inflow (the bank credit callback): the batch of one. Returns null when
 * there is nothing to do: the inflow is not CONFIRMED (already matched, or still waiting for
 * confirmations) or another instance holds it right now.
 */
export async function matchInflow(deps: Deps, inflow: InflowKey): Promise<MatchOutcome | null> {
  const inflowId = inflow.id;
  for (let attempt = 0; attempt < MAX_SINGLE_ATTEMPTS; attempt++) {
    const batch = await deps.sql.transaction((tx) => matchBatch(deps, tx, { keys: [inflow] }));
    crashPoint('matching.committed', payoutsOf(batch.outcomes));
    if (batch.claimed === 0) return null;
    // Deferred: the payout it was judged for ended meanwhile; judge it again on what is now true.
    if (batch.outcomes[0]) return batch.outcomes[0];
  }
  throw new Error(`inflow ${inflowId}: its facts kept changing under it`);
}

/**
 * Matches every CONFIRMED inflow, oldest first (so that money on a shared address meets the
 * instructions in the order it arrived), a batch per transaction. A batch that fails is matched
 * again one inflow at a time, so that one bad inflow is logged and left for the next pass
 * without holding up the others.
 */
export async function matchConfirmedInflows(
  deps: Deps,
  options: { batchSize?: number } = {},
): Promise<MatchSummary> {
  const batchSize = options.batchSize ?? MATCH_BATCH;
  // Failed in this pass: not claimed again until the next one.
  const failed: string[] = [];
  const summary: MatchSummary = { matched: 0, held: 0, unmatched: 0, failed: 0, failedInflows: failed };
  const tally = (outcomes: readonly MatchOutcome[]) => {
    for (const o of outcomes) {
      if (o.state === 'MATCHED') summary.matched++;
      else if (o.state === 'HELD') summary.held++;
      else summary.unmatched++;
    }
  };
  for (let round = 0; round < MAX_MATCH_ROUNDS; round++) {
    let batch: BatchResult;
    const claim = { keys: [] as InflowKey[] };
    try {
      batch = await deps.sql.transaction((tx) =>
        matchBatch(deps, tx, { oldest: batchSize, excluding: failed, claimed: claim }),
      );
    } catch (err) {
      deps.log.warn({ err }, 'matching a batch of inflows failed; matching them one at a time');
      // The batch's own inflows when it got as far as claiming them, else the oldest.
      const keys =
        claim.keys.length > 0
          ? claim.keys
          : (await deps.sql.rows<{ id: string; tenant_id: string }>(peekOldest, [batchSize, failed])).map(
              (r) => ({ id: r.id, tenantId: r.tenant_id }),
            );
      for (const { id, tenantId } of keys) {
        try {
          const outcome = await matchInflow(deps, { id, tenantId });
          if (outcome) tally([outcome]);
        } catch (error) {
          failed.push(id);
          summary.failed++;
          deps.log.error(
            { err: error, inflow: id },
            'matching an inflow failed; it stays CONFIRMED for the next pass',
          );
        }
      }
      continue;
    }
    crashPoint('matching.committed', payoutsOf(batch.outcomes));
    tally(batch.outcomes);
    // A batch takes only some of the addresses with money due, so a short one does not mean the
    // rest is done: only an empty one does (or one whose addresses all were held elsewhere).
    if (batch.claimed === 0) break;
  }
  return summary;
}

interface BatchResult {
  /** Inflows claimed (locked) by the batch. */
  claimed: number;
  outcomes: MatchOutcome[];
  /** Claimed but left CONFIRMED for the next batch, which reads their facts afresh. */
  deferred: number;
}

/**
 * Claims CONFIRMED inflows (the oldest, or the given ones) FOR UPDATE SKIP LOCKED and settles them
 * inside `tx`. Each is judged in arrival order against the facts as the earlier ones of the batch
 * leave them (an instruction one inflow pays is closed for the next). An inflow whose verdict
 * rests on something the batch cannot settle on its own (its payout ended after it was read, or
 * another inflow of the batch already went to that payout) is deferred with every later inflow to
 * the same account, so that each account still sees its money in arrival order.
 */
async function matchBatch(
  deps: Deps,
  tx: Sql,
  which:
    | { keys: readonly InflowKey[] }
    | { oldest: number; excluding: readonly string[]; claimed: { keys: InflowKey[] } },
): Promise<BatchResult> {
  const now = deps.clock.now();
  const recentMs = deps.config.PAYMENT_INSTRUCTION_TTL_MS;
  let inflows: InflowRow[];
  if ('keys' in which) {
    inflows = await tx.rows<InflowRow>(claimByIds, [
      which.keys.map((k) => k.id),
      [...new Set(which.keys.map((k) => k.tenantId))],
    ]);
    const addresses = [...new Set(inflows.filter((f) => f.rail === 'CRYPTO').map((f) => f.to_account))];
    if (addresses.length > 0) await tx.rows(lockAddresses, [addresses]);
  } else {
    const held = await tx.rows<{ address: string }>(lockDueAddresses, [
      which.oldest * DUE_WINDOW,
      which.excluding,
      which.oldest,
    ]);
    inflows = await tx.rows<InflowRow>(claimOldest, [
      which.oldest,
      which.excluding,
      held.map((a) => a.address),
    ]);
    // Known to the caller should the batch fail: it then matches these one at a time.
    which.claimed.keys = inflows.map((f) => ({ id: f.id, tenantId: f.tenant_id }));
  }
  if (inflows.length === 0) return { claimed: 0, outcomes: [], deferred: 0 };

  const arrivals = inflows.map((f) => toDate(f.arrived_at));
  const ranks = new Map<string, number>();
  const rank = inflows.map((f) => {
    const n = (ranks.get(accountKey(f)) ?? 0) + 1;
    ranks.set(accountKey(f), n);
    return n;
  });
  const instructions = await tx.rows<InstructionRow>(lockCandidates, [
    inflows.map((f) => f.rail),
    inflows.map((f) => f.to_account),
    inflows.map((f) => f.tenant_id),
    inflows.map((f) => f.currency),
    inflows.map((f) => f.amount),
    arrivals,
    arrivals.map((at) => new Date(at.getTime() - recentMs)),
    rank,
  ]);
  const onAccount = new Map<string, Candidate[]>();
  for (const row of instructions) {
    const key = `${row.rail}|${row.account_unique}|${row.tenant_id}|${row.expected_currency}`;
    const list = onAccount.get(key) ?? [];
    list.push({ row, facts: factsOf(row) });
    onAccount.set(key, list);
  }

  const judged = judgeBatch(inflows, arrivals, onAccount, recentMs);
  const { chosen } = judged;
  let { deferred } = judged;

  const payouts = new Map(
    chosen.size === 0
      ? []
      : (
          await lockPayouts(
            tx,
            [...chosen],
            judged.verdicts.flatMap((v) => ('instruction' in v ? [v.instruction.tenant_id] : [])),
          )
        ).map((p) => [p.id, p] as const),
  );
  const earlier = await readEarlier(tx, [...payouts.values()]);

  const blocked = new Set<string>();
  const writes = emptyWrites();
  for (const verdict of judged.verdicts) {
    const { inflow } = verdict;
    const account = accountKey(inflow);
    if (blocked.has(account)) {
      deferred++;
      continue;
    }
    const facts: InflowFacts = {
      id: inflow.id,
      tenantId: inflow.tenant_id,
      state: inflow.state,
      snapshot: inflow.snapshot,
      amount: toDecimal(inflow.amount),
      currency: inflow.currency,
      rail: inflow.rail,
      network: inflow.network,
      toAccount: inflow.to_account,
    };
    if ('to' in verdict) {
      addUnattributed(writes, { inflow: facts, to: verdict.to, reason: verdict.reason, now });
      continue;
    }
    const payout = payouts.get(verdict.instruction.payout_id);
    if (!payout) throw new Error(`payout ${verdict.instruction.payout_id} does not exist`);
    // An operator ended the payout after its instruction was read: judge again without it.
    if (payout.status !== 'PENDING_PAYMENT') {
      blocked.add(account);
      deferred++;
      continue;
    }
    const attribution: Attribution = {
      inflow: facts,
      instruction: verdict.instruction,
      payout,
      rule: verdict.rule,
      triggeredBy: 'SYSTEM',
    };
    const covers = addAttribution(writes, attribution, earlier.get(payout.id) ?? [], now);
    // A crypto top-up judged on a held total that changed before the payout was locked: later
    // inflows to the address were judged with its instruction paid; they wait for the next batch.
    if (inflow.rail === 'CRYPTO' && !covers) blocked.add(account);
  }
  await writeSettlement(tx, writes, now);
  // One line per inflow only when asked for: a batch is hundreds of them.
  if (deps.log.isLevelEnabled('debug')) {
    for (const o of writes.outcomes) {
      deps.log.debug(
        { inflow: o.inflowId, state: o.state, payout: o.payoutId, reason: o.reason },
        'inflow matched',
      );
    }
  }
  if (writes.outcomes.length > 0 || deferred > 0) {
    deps.log.info(
      { matched: writes.outcomes.length, deferred, claimed: inflows.length },
      'matched a batch of inflows',
    );
  }
  crashPoint('matching.before-commit', payoutsOf(writes.outcomes));
  return { claimed: inflows.length, outcomes: writes.outcomes, deferred };
}

/** The payouts that outcomes attributed money to. */
function payoutsOf(outcomes: readonly MatchOutcome[]): string[] {
  return outcomes.flatMap((o) => (o.payoutId ? [o.payoutId] : []));
}

type Candidate = { row: InstructionRow; facts: InstructionFacts };

type Verdict = { inflow: InflowRow } & (
  | { instruction: InstructionRow; rule: AttributionRule }
  | { to: 'HELD' | 'UNMATCHED'; reason: string }
);

/**
 * Judges a batch's inflows in arrival order with the pure rules, the facts in memory changing as
 * the batch decides. Returns the verdicts, the payouts they attribute money to, and how many
 * inflows were deferred (with every later one to the same account).
 */
function judgeBatch(
  inflows: readonly InflowRow[],
  arrivals: readonly Date[],
  onAccount: ReadonlyMap<string, Candidate[]>,
  recentMs: number,
): { verdicts: Verdict[]; chosen: Set<string>; deferred: number } {
  const blocked = new Set<string>();
  const chosen = new Set<string>();
  const factsOn = new Map<string, InstructionFacts[]>();
  const verdicts: Verdict[] = [];
  let deferred = 0;
  for (const [i, inflow] of inflows.entries()) {
    const account = accountKey(inflow);
    const at = arrivals[i]!;
    const candidates = onAccount.get(account) ?? [];
    if (blocked.has(account)) {
      deferred++;
      continue;
    }
    let attributed: { id: string; rule: AttributionRule } | null = null;
    if (inflow.rail === 'CRYPTO') {
      let facts = factsOn.get(account);
      if (!facts) {
        // The same objects as the candidates': what an earlier inflow changed, the next one sees.
        facts = candidates.map((c) => c.facts);
        factsOn.set(account, facts);
      }
      const verdict = judgeCryptoInflow(toDecimal(inflow.amount), at, facts, recentMs);
      if (verdict.outcome === 'ATTRIBUTE') attributed = { id: verdict.instructionId, rule: verdict.rule };
      else if (verdict.outcome === 'HELD') {
        verdicts.push({ inflow, to: 'HELD', reason: 'BELOW_EVERY_OPEN_INSTRUCTION' });
      } else verdicts.push({ inflow, to: 'UNMATCHED', reason: verdict.reason });
    } else {
      const [own] = candidates;
      if (own && judgeBankInflow(at, own.facts).outcome === 'ATTRIBUTE') {
        attributed = { id: own.row.id, rule: 'ACCOUNT' };
      } else verdicts.push({ inflow, to: 'UNMATCHED', reason: 'INSTRUCTION_CLOSED' });
    }
    if (!attributed) continue;
    const candidate = candidates.find((c) => c.row.id === attributed.id)!;
    // A second attribution to one payout in one batch would need two transitions of it at once.
    if (chosen.has(candidate.row.payout_id)) {
      blocked.add(account);
      deferred++;
      continue;
    }
    chosen.add(candidate.row.payout_id);
    // Crypto money always covers what it is attributed to (exact, top-up or overpayment): the
    // instruction is paid for every later inflow of the batch. Checked against the totals later.
    if (inflow.rail === 'CRYPTO') candidate.facts.status = 'PAID';
    verdicts.push({ inflow, instruction: candidate.row, rule: attributed.rule });
  }
  return { verdicts, chosen, deferred };
}

/** Inflows to one account of one tenant in one currency see the same instructions. */
function accountKey(f: InflowRow): string {
  return `${f.rail}|${f.to_account}|${f.tenant_id}|${f.currency}`;
}

function factsOf(r: InstructionRow): InstructionFacts {
  return {
    id: r.id,
    status: r.status,
    expectedAmount: toDecimal(r.expected_amount),
    expiresAt: toDate(r.expires_at),
    createdAt: toDate(r.created_at),
    payoutStatus: r.payout_status,
    heldTotal: toDecimal(r.held_total),
  };
}

type EarlierInflow = InflowMachineRow & { payout_id: string; amount: string };

/** The HELD inflows of `payouts`, by payout; `payouts` are locked, each read with its tenant. */
async function readEarlier(
  tx: Sql,
  payouts: readonly Pick<LockedPayout, 'id' | 'tenant_id'>[],
): Promise<Map<string, EarlierInflow[]>> {
  const byPayout = new Map<string, EarlierInflow[]>();
  if (payouts.length === 0) return byPayout;
  const args = [payouts.map((p) => p.id), [...new Set(payouts.map((p) => p.tenant_id))]];
  for (const row of await tx.rows<EarlierInflow>(earlierInflows, args)) {
    const list = byPayout.get(row.payout_id) ?? [];
    list.push(row);
    byPayout.set(row.payout_id, list);
  }
  return byPayout;
}

function addUnattributed(writes: SettlementWrites, args: Unattributed): void {
  const { inflow, to } = args;
  const done = stepInflowOrThrow(inflow, {
    type: to === 'HELD' ? 'BELOW_EVERY_OPEN_INSTRUCTION' : 'NO_OPEN_INSTRUCTION',
    now: args.now,
  });
  writes.inflows.push({
    id: inflow.id,
    tenantId: inflow.tenantId,
    state: done.to,
    snapshot: done.snapshot,
    isMatched: null,
    matchedAt: null,
    isUnderpaid: to === 'HELD' ? true : null,
    payoutId: null,
    instructionId: null,
    overpayment: null,
  });
  writes.outcomes.push({ inflowId: inflow.id, state: to, payoutId: null, reason: args.reason });
}

/**
 * Adds what attributing the inflow to its payout writes. The payout's total is everything
 * attributed to it so far (`earlier`) plus this inflow: covering the expected amount, the
 * instruction becomes PAID (if still UNPAID: a held payout whose instruction lapsed can still be
 * paid by an operator, the instruction stays EXPIRED) and this inflow and every earlier held one
 * MATCHED, the overpayment (total − expected) on this inflow; short of it, this inflow is HELD
 * against the payout. Either way the payout gets SETTLEMENT_CONFIRMED with the total, and its
 * timeline row carries the inflow and the overpayment. Returns whether the total covers.
 */
function addAttribution(
  writes: SettlementWrites,
  a: Attribution,
  earlier: readonly EarlierInflow[],
  now: Date,
): boolean {
  const { inflow, instruction, payout } = a;
  const others = earlier.filter((e) => e.id !== inflow.id);
  const expected = toDecimal(instruction.expected_amount);
  const totals = settlementTotals(
    others.map((e) => toDecimal(e.amount)),
    inflow.amount,
    expected,
  );
  let view = payout.instruction;
  if (totals.covers) {
    if (instruction.status === 'UNPAID') {
      const paid = step(paymentInstructionMachine, instruction, { type: 'PAYMENT_MATCHED', now });
      if (!paid.taken) throw new Error(`instruction ${instruction.id} ignored PAYMENT_MATCHED`);
      writes.instructions.push({
        id: instruction.id,
        tenantId: instruction.tenant_id,
        status: paid.to,
        snapshot: paid.snapshot,
        paidAt: now,
      });
      if (view) view = { ...view, status: paid.to as InstructionFacts['status'], paid_at: now };
    }
    for (const held of others.filter((e) => e.state === 'HELD')) {
      writes.inflows.push(
        matchedWrite(stepInflowOrThrow(held, { type: 'PAYOUT_COVERED', now }), held.id, a, now, null),
      );
    }
  }
  const event = a.triggeredBy === 'ADMIN' ? 'OPERATOR_ATTRIBUTE' : 'ATTRIBUTED';
  const done = stepInflowOrThrow(inflow, { type: event, payoutId: payout.id, covers: totals.covers, now });
  writes.ledger.push(
    ...inflowLedger(
      { ...inflow, tenantId: payout.tenant_id, payoutId: payout.id },
      done,
      event,
      now,
      typeof a.metadata?.approval_id === 'string' ? a.metadata.approval_id : null,
    ),
  );
  if (done.to === 'MATCHED') {
    writes.inflows.push(matchedWrite(done, inflow.id, a, now, totals.overpayment));
  } else {
    writes.inflows.push({
      id: inflow.id,
      tenantId: inflow.tenantId,
      state: done.to,
      snapshot: done.snapshot,
      isMatched: false,
      matchedAt: null,
      isUnderpaid: true,
      payoutId: payout.id,
      instructionId: instruction.id,
      overpayment: null,
    });
  }
  writes.payouts.push({
    payout,
    event: {
      type: 'SETTLEMENT_CONFIRMED',
      receivedTotal: totals.total.toFixed(),
      expected: expected.toFixed(),
      triggeredBy: a.triggeredBy,
      now,
    },
    note: {
      reasonDetail: {
        inflow_id: inflow.id,
        match_rule: a.rule,
        received_total: totals.total.toFixed(),
        expected_amount: expected.toFixed(),
        overpayment_amount: totals.overpayment.toFixed(),
        currency: inflow.currency,
      },
      metadata: a.metadata ?? null,
    },
    set: { receivedAmount: totals.total },
    ...(view ? { instruction: view } : {}),
  });
  writes.outcomes.push({
    inflowId: inflow.id,
    state: totals.covers ? 'MATCHED' : 'HELD',
    payoutId: payout.id,
    reason: totals.covers ? `${a.rule}_MATCH` : 'UNDERPAID',
  });
  return totals.covers;
}

function matchedWrite(
  done: InflowStep,
  id: string,
  a: Attribution,
  now: Date,
  overpayment: Decimal | null,
): InflowWrite {
  return {
    id,
    tenantId: a.payout.tenant_id,
    state: done.to,
    snapshot: done.snapshot,
    isMatched: true,
    matchedAt: now,
    isUnderpaid: false,
    payoutId: a.payout.id,
    instructionId: a.instruction.id,
    overpayment,
  };
}

/**
 * Writes a settlement: inflows and instructions in one statement each, the payouts' transitions
 * through {@link applyPayoutSteps}. Every attribution adds money to a PENDING_PAYMENT payout,
 * which the machine always takes; an ignored event means the facts read under lock were wrong,
 * so the transaction is abandoned.
 */
async function writeSettlement(tx: Sql, writes: SettlementWrites, now: Date): Promise<void> {
  if (writes.inflows.length > 0) {
    const w = writes.inflows;
    await tx.rows(updateInflows, [
      w.map((i) => i.id),
      w.map((i) => i.state),
      w.map((i) => i.isMatched),
      w.map((i) => i.matchedAt),
      w.map((i) => i.isUnderpaid),
      w.map((i) => i.payoutId),
      w.map((i) => i.instructionId),
      w.map((i) => (i.overpayment === null ? null : i.overpayment.toFixed())),
      now,
      new TextArray(w.map((i) => JSON.stringify(i.snapshot))),
      w.map((i) => i.tenantId),
    ]);
  }
  await writeInstructionSteps(tx, writes.instructions, now);
  await post(tx, writes.ledger);
  if (writes.payouts.length === 0) return;
  const outcomes = await applyPayoutSteps(tx, writes.payouts);
  const ignored = outcomes.find((o) => !o.taken);
  if (ignored) {
    throw new Error(`payout ${ignored.payoutId} (${ignored.from}) ignored SETTLEMENT_CONFIRMED`);
  }
}

/** The payout an operator names and its instruction, locked in the order matching locks them (null when missing). */
export async function lockAttributionTarget(
  tx: Sql,
  payoutId: string,
): Promise<{ instruction: InstructionRow | null; payout: LockedPayout | null }> {
  const [instruction] = await tx.rows<InstructionRow>(lockInstructionOfPayout, [payoutId]);
  const [payout] = await lockPayouts(tx, [payoutId]);
  return { instruction: instruction ?? null, payout: payout ?? null };
}

/**
 * Attributes an inflow to a payout and its instruction, both locked by the caller with the
 * payout PENDING_PAYMENT, inside the caller's transaction: the writes of matching for a batch of
 * one (an operator's attribution, triggered_by ADMIN).
 */
export async function attributeLocked(
  tx: Sql,
  args: {
    inflow: InflowFacts;
    instruction: InstructionRow;
    payout: LockedPayout;
    rule: AttributionRule;
    triggeredBy: TriggeredBy;
    metadata?: Record<string, unknown> | null;
    now: Date;
  },
): Promise<MatchOutcome> {
  const earlier = await readEarlier(tx, [args.payout]);
  const writes = emptyWrites();
  addAttribution(writes, args, earlier.get(args.payout.id) ?? [], args.now);
  await writeSettlement(tx, writes, args.now);
  return writes.outcomes[0]!;
}
