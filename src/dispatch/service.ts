import {
  type OutflowContext,
  type OutflowEvent,
  type OutflowStatus,
  outflowMachine,
} from '#machines/outflow.machine.ts';
import { type PayoutEvent, payoutMachine, type TriggeredBy } from '#machines/payout.machine.ts';
import { type Sql, statement, TextArray, toDate } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { initialState, restore, step } from '#src/engine/engine.ts';
import { inClaimedBatches } from '#src/jobs/runner.ts';
import {
  type ClaimedTask,
  completeTasks,
  retryTasks,
  type TaskRetry,
  taskBackoffMs,
} from '#src/jobs/tasks.ts';
import { type LedgerTransaction, post } from '#src/ledger/ledger.ts';
import { crashPoint } from '#src/lib/crash-points.ts';
import { isUuid, newId } from '#src/lib/ids.ts';
import type { Logger } from '#src/lib/log.ts';
import { toDecimal } from '#src/lib/money.ts';
import type { PayoutStatus } from '#src/payouts/entities.ts';
import {
  applyPayoutSteps,
  type PayoutStep,
  type StepOutcome,
  type TransitionNote,
} from '#src/payouts/lifecycle.ts';
import { lockPayouts } from '#src/payouts/resource.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import type { ProcessorResult } from '#src/providers/rails.ts';
import { Outflow } from './entities.ts';
import { outflowLedger } from './money.ts';

/**
 * Dispatch: paying the beneficiary through the processor, one outflow row per attempt, a batch
 * of payouts at a time.
 *
 * - A batch's attempts are committed (PENDING rows, each id the processor's idempotency
 *   reference) before the processor hears of them, submitted with no transaction open, and their
 *   outcomes recorded in a second transaction. A crash or a time-out in between leaves a row PENDING; the next dispatcher asks the processor for that
 *   reference and records what it has, or, if it has nothing, submits the same reference again
 *   (the processor answers a repeat with its first result); no second row is created for an
 *   unknown outcome.
 * - Every verdict (our submit's answer, a callback, a status query) goes through the outflow
 *   machine first and reaches the payout machine only when the outflow actually changed, so a
 *   duplicate or late callback for an attempt that is already over changes nothing.
 */

/** What the processor said about one attempt, however the service learned it. */
export type ProcessorVerdict = Omit<ProcessorResult, 'reference'>;

/** How a verdict arrived: the answer to the submit, a signed callback, or a status query. */
export type VerdictSource = 'SUBMIT' | 'CALLBACK' | 'QUERY';

const TRIGGERED_BY = {
  SUBMIT: 'SYSTEM',
  CALLBACK: 'PROCESSOR_WEBHOOK',
  QUERY: 'SYSTEM',
} as const satisfies Record<VerdictSource, TriggeredBy>;

/** Recorded when a processor fails an attempt without saying why (the timeline needs a code). */
export const UNSPECIFIED_FAILURE = 'UNSPECIFIED_FAILURE';

const TERMINAL: ReadonlySet<OutflowStatus> = new Set(['SUCCESSFUL', 'FAILED']);

/** Longest wait between two status queries of an attempt whose outcome is still unknown. */
const QUERY_BACKOFF_CAP_MS = 15 * 60_000;

function unreachable(value: never): never {
  throw new Error(`unexpected value ${JSON.stringify(value)}`);
}

/** The outflow machine's event for a verdict; a refusal in answer to the submit is a REJECTED. */
export function outflowEventOf(verdict: ProcessorVerdict, source: VerdictSource, now: Date): OutflowEvent {
  switch (verdict.status) {
    case 'ACCEPTED':
      return { type: 'ACCEPTED', processorReference: verdict.processorReference, now };
    case 'SUCCESSFUL':
      return { type: 'SUCCEEDED', processorReference: verdict.processorReference, now };
    case 'FAILED': {
      const failure = {
        failureCode: verdict.failureCode ?? UNSPECIFIED_FAILURE,
        failureReason: verdict.failureReason ?? verdict.failureCode ?? 'The processor gave no reason.',
        retryable: verdict.retryable,
      };
      return source === 'SUBMIT'
        ? { type: 'REJECTED', now, ...failure }
        : { type: 'FAILED', now, ...failure };
    }
    default:
      return unreachable(verdict.status);
  }
}

/**
 * The payout events that follow from one outflow transition. An outcome that overtook our record
 * of the acceptance (from PENDING) is, for the payout, first the dispatch then the outcome: a
 * success is DISPATCH_ACCEPTED then PROCESSOR_SUCCEEDED, a failure a DISPATCH_FAILED.
 */
export function payoutEventsOf(args: {
  from: OutflowStatus;
  to: OutflowStatus;
  context: OutflowContext;
  attemptsLeft: boolean;
  triggeredBy: TriggeredBy;
  now: Date;
}): PayoutEvent[] {
  const { from, to, context, attemptsLeft, triggeredBy, now } = args;
  const base = { triggeredBy, now };
  switch (to) {
    case 'PENDING':
      return [];
    case 'PROCESSING':
      return [{ type: 'DISPATCH_ACCEPTED', ...base }];
    case 'SUCCESSFUL':
      return from === 'PENDING'
        ? [
            { type: 'DISPATCH_ACCEPTED', ...base },
            { type: 'PROCESSOR_SUCCEEDED', ...base },
          ]
        : [{ type: 'PROCESSOR_SUCCEEDED', ...base }];
    case 'FAILED': {
      const failure = {
        failureCode: context.failureCode ?? UNSPECIFIED_FAILURE,
        failureReason: context.failureReason ?? '',
        retryable: context.retryable ?? false,
        attemptsLeft,
      };
      return [{ type: from === 'PENDING' ? 'DISPATCH_FAILED' : 'PROCESSOR_FAILED', ...failure, ...base }];
    }
    default:
      return unreachable(to);
  }
}

/** A payout as a batch locks it to open its attempt: its machine and what the processor is sent. */
interface DispatchablePayout {
  id: string;
  tenant_id: string;
  status: PayoutStatus;
  snapshot: Record<string, unknown>;
  destination_type: 'MOBILE_MONEY' | 'BANK_ACCOUNT' | 'CRYPTO_WALLET';
  destination_country: string;
  destination_currency: string;
  destination_amount: string;
  destination_account_unique: string;
  destination_provider_code: string | null;
  destination_provider_name: string;
  destination_account_name: string | null;
}

// The claimed payouts, locked in id order, each by id and the tenant its task carries (a task
// scheduled before tasks carried the tenant has none: its payout is found by id alone).
const lockDispatchable = statement(
  'dispatch_lock_payouts',
  `select p.id, p.tenant_id, p.status, p.snapshot, p.destination_type, p.destination_country,
          p.destination_currency, p.destination_amount::text, p.destination_account_unique,
          p.destination_provider_code, p.destination_provider_name, p.destination_account_name
     from payouts p join unnest($1::uuid[], $2::uuid[]) as u(id, tenant_id)
       on p.id = u.id and p.tenant_id = coalesce(u.tenant_id, p.tenant_id)
    order by p.id for update of p`,
);

/** The latest attempt of each payout (one row per payout that has any). */
const latestAttempts = statement(
  'dispatch_latest_attempts',
  `select distinct on (o.payout_id) o.id, o.payout_id, o.status, o.attempt_number, o.destination_amount::text
     from outflows o join unnest($1::uuid[], $2::uuid[]) as u(payout_id, tenant_id)
       on o.payout_id = u.payout_id and o.tenant_id = u.tenant_id
    order by o.payout_id, o.attempt_number desc`,
);

const insertAttempts = statement(
  'dispatch_insert_attempts',
  `insert into outflows (id, tenant_id, payout_id, status, snapshot, processor, attempt_number, destination_amount,
       destination_currency, processor_reference, failure_reason, failure_code, retryable, dispatched_at,
       settled_at, created_at, updated_at)
   select u.id, u.tenant_id, u.payout_id, $7, $8::jsonb, $9, u.attempt_number, u.destination_amount,
          u.destination_currency, null, null, null, false, null, null, $10, $10
     from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::int[], $5::numeric[], $6::text[])
       as u(id, tenant_id, payout_id, attempt_number, destination_amount, destination_currency)`,
);

/** An outflow locked to take a verdict, with the price of its payout (fixed since the instruction). */
interface OutflowRow {
  id: string;
  tenant_id: string;
  payout_id: string;
  status: OutflowStatus;
  snapshot: Record<string, unknown>;
  processor: string;
  attempt_number: number;
  destination_amount: string;
  destination_currency: string;
  processor_reference: string | null;
  failure_code: string | null;
  failure_reason: string | null;
  retryable: boolean;
  dispatched_at: string | Date | null;
  settled_at: string | Date | null;
  settlement_currency: string;
  converted: string;
}

// Outflows first, then their payouts (lockPayouts): the order every verdict locks them in. The
// payout's price is read without its lock.
const lockOutflows = statement(
  'dispatch_lock_outflows',
  `select o.id, o.tenant_id, o.payout_id, o.status, o.snapshot, o.processor, o.attempt_number,
          o.destination_amount::text, o.destination_currency, o.processor_reference, o.failure_code,
          o.failure_reason, o.retryable, o.dispatched_at, o.settled_at, p.settlement_currency,
          (p.settlement_amount - p.total_fee_amount)::text as converted
     from outflows o join payouts p on p.id = o.payout_id and p.tenant_id = o.tenant_id
    where o.id = any($1::uuid[]) order by o.id for update of o`,
);

// The ids are also given as a list, so that the planner reaches the rows through the primary key.
// The machine snapshots come as text in binary (`TextArray`), each parsed once into its column.
const updateOutflows = statement(
  'dispatch_update_outflows',
  `update outflows o
      set status = u.status, snapshot = u.snapshot::jsonb, processor_reference = u.processor_reference,
          failure_code = u.failure_code, failure_reason = u.failure_reason, retryable = u.retryable,
          dispatched_at = u.dispatched_at, settled_at = u.settled_at, updated_at = $11
     from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
                 $8::boolean[], $9::timestamptz[], $10::timestamptz[])
       as u(id, tenant_id, status, snapshot, processor_reference, failure_code, failure_reason, retryable,
            dispatched_at, settled_at)
    where o.id = any($1::uuid[]) and o.id = u.id and o.tenant_id = u.tenant_id`,
);

/** One verdict to record: what the processor said about one attempt, and how it was learned. */
export interface VerdictItem {
  outflowId: string;
  verdict: ProcessorVerdict;
  source: VerdictSource;
}

/** What one verdict did: whether the outflow took it, and the payout transitions it caused. */
export interface VerdictRecord {
  outflowId: string;
  payoutId: string;
  taken: boolean;
  from: OutflowStatus;
  to: OutflowStatus;
  payout: StepOutcome[];
}

/**
 * Applies processor verdicts to their outflows inside the caller's transaction, set-based: the
 * outflows locked in one statement and stepped through their machine in memory, their changes
 * and the money they move written in one statement each, and each verdict an outflow took
 * forwarded to its payout through {@link applyPayoutSteps} (a second round for the payouts told
 * two events). A verdict the outflow absorbs (duplicate, late, contradicting a final outcome)
 * writes nothing. Returns one record per item, in order.
 */
export async function recordVerdicts(
  tx: Sql,
  items: readonly VerdictItem[],
  args: { now: Date; maxAttempts: number; log: Logger },
): Promise<VerdictRecord[]> {
  const { now } = args;
  if (items.length === 0) return [];
  const ids = [...new Set(items.map((i) => i.outflowId))];
  const rows = new Map((await tx.rows<OutflowRow>(lockOutflows, [ids])).map((r) => [r.id, r]));
  const changed = new Map<string, OutflowRow>();
  const ledger: LedgerTransaction[] = [];
  const records: VerdictRecord[] = [];
  /** Per payout, the events its outflows' verdicts tell it, in order, with their timeline notes. */
  const told = new Map<
    string,
    { event: PayoutEvent; note: TransitionNote; record: VerdictRecord; tenantId: string }[]
  >();
  for (const item of items) {
    const row = rows.get(item.outflowId);
    if (!row) throw new Error(`Outflow ${item.outflowId} does not exist`);
    const event = outflowEventOf(item.verdict, item.source, now);
    const done = step(outflowMachine, row, event);
    const from = done.from as OutflowStatus;
    const to = done.to as OutflowStatus;
    const record: VerdictRecord = {
      outflowId: row.id,
      payoutId: row.payout_id,
      taken: done.taken,
      from,
      to,
      payout: [],
    };
    records.push(record);
    if (!done.taken) continue;

    const context = done.snapshot.context as OutflowContext;
    row.status = to;
    row.snapshot = done.snapshot;
    row.processor_reference = context.processorReference?.slice(0, 128) ?? null;
    row.failure_code = context.failureCode?.slice(0, 100) ?? null;
    row.failure_reason = context.failureReason?.slice(0, 500) ?? null;
    row.retryable = context.retryable ?? false;
    // dispatched_at: when the processor took the attempt; settled_at: when it paid the beneficiary.
    if (to === 'PROCESSING' || to === 'SUCCESSFUL') row.dispatched_at ??= now;
    if (to === 'SUCCESSFUL') row.settled_at = now;
    changed.set(row.id, row);
    ledger.push(
      ...outflowLedger(
        {
          id: row.id,
          tenantId: row.tenant_id,
          payoutId: row.payout_id,
          processor: row.processor,
          settlementCurrency: row.settlement_currency,
          converted: toDecimal(row.converted),
          destinationAmount: toDecimal(row.destination_amount),
          destinationCurrency: row.destination_currency,
        },
        done,
        event.type,
        now,
      ),
    );

    const events = payoutEventsOf({
      from,
      to,
      context,
      attemptsLeft: row.attempt_number < args.maxAttempts,
      triggeredBy: TRIGGERED_BY[item.source],
      now,
    });
    const metadata = {
      outflow_id: row.id,
      attempt_number: row.attempt_number,
      processor_reference: row.processor_reference,
    };
    const list = told.get(row.payout_id) ?? [];
    for (const e of events) {
      const reasonDetail =
        'failureCode' in e
          ? { failure_code: e.failureCode, failure_reason: e.failureReason, retryable: e.retryable }
          : null;
      list.push({ event: e, note: { reasonDetail, metadata }, record, tenantId: row.tenant_id });
    }
    told.set(row.payout_id, list);
  }

  if (changed.size > 0) {
    const w = [...changed.values()];
    await tx.rows(updateOutflows, [
      w.map((o) => o.id),
      w.map((o) => o.tenant_id),
      w.map((o) => o.status),
      new TextArray(w.map((o) => JSON.stringify(o.snapshot))),
      w.map((o) => o.processor_reference),
      w.map((o) => o.failure_code),
      w.map((o) => o.failure_reason),
      w.map((o) => o.retryable),
      w.map((o) => (o.dispatched_at === null ? null : toDate(o.dispatched_at))),
      w.map((o) => (o.settled_at === null ? null : toDate(o.settled_at))),
      now,
    ]);
  }
  await post(tx, ledger);

  // A payout takes one event per round of applyPayoutSteps: its first events, then its second...
  for (let round = 0; ; round++) {
    const due = [...told].flatMap(([payoutId, list]) =>
      list[round] ? [[payoutId, list[round]!] as const] : [],
    );
    if (due.length === 0) break;
    const locked = new Map(
      (
        await lockPayouts(
          tx,
          due.map(([id]) => id),
          due.map(([, t]) => t.tenantId),
        )
      ).map((p) => [p.id, p]),
    );
    const steps: PayoutStep[] = due.map(([payoutId, t]) => {
      const payout = locked.get(payoutId);
      if (!payout) throw new Error(`payout ${payoutId} does not exist`);
      return { payout, event: t.event, note: t.note };
    });
    const outcomes = await applyPayoutSteps(tx, steps);
    for (const [i, outcome] of outcomes.entries()) {
      const [payoutId, t] = due[i]!;
      if (!outcome.taken) {
        args.log.warn(
          { payout: payoutId, outflow: t.record.outflowId, status: outcome.from, event: t.event.type },
          'payout ignored an outcome its outflow took',
        );
      }
      t.record.payout.push(outcome);
    }
  }
  const moved = records.filter((r) => r.taken).map((r) => r.payoutId);
  if (moved.length > 0) crashPoint('dispatch.before-commit', moved);
  return records;
}

/** Applies verdicts in a transaction of their own. */
async function recordInOwnTransaction(
  deps: Deps,
  items: readonly VerdictItem[],
  log: Logger = deps.log,
): Promise<VerdictRecord[]> {
  const now = deps.clock.now();
  return deps.sql.transaction((tx) =>
    recordVerdicts(tx, items, { now, maxAttempts: deps.config.DISPATCH_MAX_ATTEMPTS, log }),
  );
}

/** DISPATCH tasks claimed per batch: a batch is opened in one transaction and recorded in another. */
export const DISPATCH_BATCH = 250;
/** QUERY_OUTFLOW tasks claimed per batch. */
const QUERY_BATCH = 250;
/** Submits (or status queries) of one batch in flight at once. */
const SUBMIT_CONCURRENCY = 4;
/** How long a claim holds a task: a batch whose dispatcher died is picked up again after this. */
const LEASE_MS = 60_000;
/** Batches per run; the next run carries on from there. */
const MAX_ROUNDS = 100;

/** One attempt of a batch, committed PENDING, with what the processor is sent. */
interface OpenAttempt {
  task: ClaimedTask;
  payout: DispatchablePayout;
  outflowId: string;
  attemptNumber: number;
  destinationAmount: string;
  /** Committed earlier with an unknown outcome: it may already be at the processor. */
  resumed: boolean;
}

/** Whether the payout waits for a (new) dispatch attempt. */
function awaitsDispatch(payout: DispatchablePayout): boolean {
  if (payout.status === 'PAYMENT_RECEIVED') return true;
  return (
    payout.status === 'PROCESSING' && restore(payoutMachine, payout).matches({ PROCESSING: 'redispatching' })
  );
}

const errorText = (err: unknown) => (err instanceof Error ? `${err.name}: ${err.message}` : String(err));

/**
 * Opens the attempts of a batch of claimed DISPATCH tasks in one transaction: the payouts locked
 * (the lock serialises dispatchers, so two never both create attempt n + 1), their latest
 * attempts read, the new PENDING rows inserted in one statement. A payout with a PENDING attempt
 * resumes it (submitted again under the same reference once the processor, asked, lacks it).
 * Tasks whose payout needs no dispatch are completed here; one whose payout cannot be read is
 * put back with its error.
 */
async function openAttempts(deps: Deps, tasks: readonly ClaimedTask[]): Promise<OpenAttempt[]> {
  const now = deps.clock.now();
  const max = deps.config.DISPATCH_MAX_ATTEMPTS;
  return deps.sql.transaction(async (tx) => {
    const payouts = new Map(
      (
        await tx.rows<DispatchablePayout>(lockDispatchable, [
          tasks.map((t) => t.subjectId),
          tasks.map((t) => t.tenantId),
        ])
      ).map((p) => [p.id, p]),
    );
    const done: ClaimedTask[] = [];
    const retries: TaskRetry[] = [];
    const waiting: { task: ClaimedTask; payout: DispatchablePayout }[] = [];
    for (const task of tasks) {
      const payout = payouts.get(task.subjectId);
      try {
        if (payout && awaitsDispatch(payout)) waiting.push({ task, payout });
        else done.push(task);
      } catch (err) {
        deps.log.warn({ err, task: task.id, payout: task.subjectId }, 'dispatch task failed; will retry');
        retries.push({
          task,
          dueAt: new Date(now.getTime() + taskBackoffMs(task.attempts)),
          error: errorText(err),
        });
      }
    }
    const latest = new Map(
      waiting.length === 0
        ? []
        : (
            await tx.rows<{
              id: string;
              payout_id: string;
              status: OutflowStatus;
              attempt_number: number;
              destination_amount: string;
            }>(latestAttempts, [waiting.map((w) => w.payout.id), waiting.map((w) => w.payout.tenant_id)])
          ).map((o) => [o.payout_id, o]),
    );
    const open: OpenAttempt[] = [];
    const fresh: OpenAttempt[] = [];
    for (const { task, payout } of waiting) {
      const last = latest.get(payout.id);
      if (last?.status === 'PENDING') {
        open.push({
          task,
          payout,
          outflowId: last.id,
          attemptNumber: last.attempt_number,
          destinationAmount: last.destination_amount,
          resumed: true,
        });
        continue;
      }
      if (last && last.status !== 'FAILED') {
        deps.log.error(
          { payout: payout.id, outflow: last.id, outflow_status: last.status, payout_status: payout.status },
          'payout awaits dispatch but its last attempt is not over; not dispatching',
        );
        done.push(task);
        continue;
      }
      const attemptNumber = (last?.attempt_number ?? 0) + 1;
      if (attemptNumber > max) {
        deps.log.error({ payout: payout.id, attemptNumber }, 'dispatch attempts exhausted; not dispatching');
        done.push(task);
        continue;
      }
      fresh.push({
        task,
        payout,
        outflowId: newId(),
        attemptNumber,
        destinationAmount: payout.destination_amount,
        resumed: false,
      });
    }
    if (fresh.length > 0) {
      const initial = initialState(outflowMachine, {});
      await tx.rows(insertAttempts, [
        fresh.map((a) => a.outflowId),
        fresh.map((a) => a.payout.tenant_id),
        fresh.map((a) => a.payout.id),
        fresh.map((a) => a.attemptNumber),
        fresh.map((a) => a.destinationAmount),
        fresh.map((a) => a.payout.destination_currency),
        initial.status,
        JSON.stringify(initial.snapshot),
        deps.rails.processor.name,
        now,
      ]);
    }
    await completeTasks(tx, done, now);
    await retryTasks(tx, retries, now);
    return [...open, ...fresh];
  });
}

/** Runs `work` over `items` with at most `limit` of them in flight at once. */
async function inLanes<T>(
  items: readonly T[],
  limit: number,
  work: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await work(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
}

/** What became of one task's attempt: a verdict to record, the task to put back, or nothing left to do. */
type Heard = { task: ClaimedTask; payoutId: string } & (
  | { item: VerdictItem }
  | { retry: TaskRetry }
  | { done: true }
);

/**
 * Sends one open attempt to the processor, outside any transaction. A resumed attempt (its outcome
 * unknown: a dispatcher crashed, timed out, or lost its lease while the processor had it) is first
 * asked for: one the processor already has is recorded from its answer and not sent twice; one it
 * does not know, or that cannot be asked about, is submitted again under the same reference. A
 * transport failure keeps the PENDING row and puts the task back for another submit.
 */
async function submitAttempt(deps: Deps, attempt: OpenAttempt): Promise<Heard> {
  const { payout, task } = attempt;
  const retry = (error: string, retryInMs = taskBackoffMs(task.attempts)): Heard => ({
    task,
    payoutId: payout.id,
    retry: { task, dueAt: new Date(deps.clock.now().getTime() + retryInMs), error },
  });
  try {
    if (attempt.resumed) {
      const known = await askProcessor(deps, attempt.outflowId);
      if (known) {
        return {
          task,
          payoutId: payout.id,
          item: { outflowId: attempt.outflowId, verdict: known, source: 'QUERY' },
        };
      }
    }
    let result: ProcessorResult;
    try {
      result = await deps.rails.processor.submit({
        reference: attempt.outflowId,
        attempt: attempt.attemptNumber,
        destinationType: payout.destination_type,
        country: payout.destination_country,
        currency: payout.destination_currency,
        amount: toDecimal(attempt.destinationAmount),
        accountUnique: payout.destination_account_unique,
        providerCode: payout.destination_provider_code ?? null,
        providerName: payout.destination_provider_name,
        accountName: payout.destination_account_name ?? null,
        callbackUrl: `${deps.callbackBaseUrl}/callbacks/processor`,
      });
    } catch (err) {
      if (!(err instanceof ProviderUnavailableError)) throw err;
      return retry(
        `attempt ${attempt.attemptNumber} (${attempt.outflowId}) outcome unknown: ${err.message}; resubmitting the same reference`,
      );
    }
    crashPoint('dispatch.submitted', [payout.id]);
    return {
      task,
      payoutId: payout.id,
      item: { outflowId: attempt.outflowId, verdict: result, source: 'SUBMIT' },
    };
  } catch (err) {
    deps.log.warn({ err, task: task.id, payout: payout.id }, 'dispatch task failed; will retry');
    return retry(errorText(err));
  }
}

/** The processor's answer for a reference; null when it does not know it or cannot be asked. */
async function askProcessor(deps: Deps, reference: string): Promise<ProcessorResult | null> {
  try {
    return await deps.rails.processor.query(reference);
  } catch (err) {
    if (!(err instanceof ProviderUnavailableError)) throw err;
    return null;
  }
}

/**
 * Records what the processor said about a batch's attempts, and ends or puts back their tasks, in
 * one transaction: a task whose verdict was recorded is done unless `after` puts it back. Should
 * that transaction fail, each verdict is recorded in a transaction of its own, so that one bad
 * row is left for its task's retry without holding up the others.
 */
async function recordHeard(
  deps: Deps,
  heard: readonly Heard[],
  after: (record: VerdictRecord, task: ClaimedTask, now: Date) => TaskRetry | null = () => null,
): Promise<void> {
  const end = async (tx: Sql, some: readonly Heard[], records: readonly VerdictRecord[], now: Date) => {
    const done: ClaimedTask[] = [];
    const retries: TaskRetry[] = [];
    let r = 0;
    for (const h of some) {
      if ('retry' in h) {
        retries.push(h.retry);
        continue;
      }
      if ('done' in h) {
        done.push(h.task);
        continue;
      }
      const again = after(records[r++]!, h.task, now);
      if (again) retries.push(again);
      else done.push(h.task);
    }
    // A next attempt made due meanwhile (a retryable refusal, or a failure callback that raced the
    // submit) bumped its open task's generation: completing it leaves it open and due at once, so
    // the next batch carries that attempt.
    await completeTasks(tx, done, now);
    await retryTasks(tx, retries, now);
  };
  const record = (tx: Sql, some: readonly Heard[], now: Date) =>
    recordVerdicts(
      tx,
      some.flatMap((h) => ('item' in h ? [h.item] : [])),
      { now, maxAttempts: deps.config.DISPATCH_MAX_ATTEMPTS, log: deps.log },
    );
  try {
    await deps.sql.transaction(async (tx) => {
      const now = deps.clock.now();
      await end(tx, heard, await record(tx, heard, now), now);
    });
    return;
  } catch (err) {
    deps.log.warn({ err }, 'recording a batch of processor answers failed; recording them one at a time');
  }
  for (const h of heard) {
    try {
      await deps.sql.transaction(async (tx) => {
        const now = deps.clock.now();
        await end(tx, [h], await record(tx, [h], now), now);
      });
    } catch (err) {
      deps.log.warn(
        { err, task: h.task.id, payout: h.payoutId },
        'recording a processor answer failed; will retry',
      );
      const now = deps.clock.now();
      const dueAt = new Date(now.getTime() + taskBackoffMs(h.task.attempts));
      await retryTasks(deps.sql, [{ task: h.task, dueAt, error: errorText(err) }], now);
    }
  }
}

/**
 * Dispatches every due attempt (new payouts, retries after a retryable failure, resubmits of
 * attempts whose outcome is unknown), a batch of claimed DISPATCH tasks at a time: the batch's
 * attempts committed PENDING in one transaction (each attempt's id is the processor's
 * idempotency reference), then submitted to the processor over HTTP with no transaction open, a
 * few at a time, then their answers recorded in one transaction. A crash or a time-out in between
 * leaves an attempt PENDING, and its task's next claim asks the processor before sending it
 * again. Returns how many tasks were handled.
 */
export async function dispatchDue(deps: Deps, options: { batch?: number } = {}): Promise<number> {
  const batch = options.batch ?? DISPATCH_BATCH;
  const limits = { batch, leaseMs: LEASE_MS, maxRounds: MAX_ROUNDS };
  return inClaimedBatches(deps, 'DISPATCH', limits, async (tasks) => {
    const open = await openAttempts(deps, tasks);
    if (open.length === 0) return;
    crashPoint(
      'dispatch.attempt-committed',
      open.map((a) => a.payout.id),
    );
    const heard: Heard[] = [];
    await inLanes(open, SUBMIT_CONCURRENCY, async (attempt) => {
      heard.push(await submitAttempt(deps, attempt));
    });
    await recordHeard(deps, heard);
  });
}

interface InFlight {
  payout_id: string;
  payout_status: PayoutStatus | null;
  id: string | null;
  status: OutflowStatus | null;
  dispatched_at: string | Date | null;
  created_at: string | Date | null;
}

// The tasks' payouts, by id and tenant (as the dispatch batch finds them), each with its latest attempt.
const attemptsInFlight = statement(
  'dispatch_attempts_in_flight',
  `select p.id as payout_id, p.status as payout_status, o.id, o.status, o.dispatched_at, o.created_at
     from payouts p
     join unnest($1::uuid[], $2::uuid[]) as u(id, tenant_id)
       on p.id = u.id and p.tenant_id = coalesce(u.tenant_id, p.tenant_id)
     left join lateral (
       select o.id, o.status, o.dispatched_at, o.created_at from outflows o
        where o.payout_id = p.id and o.tenant_id = p.tenant_id
        order by o.attempt_number desc limit 1) o on true`,
);

/**
 * The QUERY_OUTFLOW tasks, open for as long as their payout is PROCESSING, a batch at a time: once
 * the attempt in flight is older than OUTFLOW_QUERY_GRACE_MS, ask the processor and apply its
 * answer as a callback would (triggered_by SYSTEM); an outcome still unknown is asked again with
 * backoff. The batch's payouts and attempts are read in one statement, the answers recorded and
 * the tasks ended or put back in one transaction. Returns how many tasks were handled.
 */
export async function queryDue(deps: Deps, options: { batch?: number } = {}): Promise<number> {
  const batch = options.batch ?? QUERY_BATCH;
  const grace = deps.config.OUTFLOW_QUERY_GRACE_MS;
  const limits = { batch, leaseMs: LEASE_MS, maxRounds: MAX_ROUNDS };
  return inClaimedBatches(deps, 'QUERY_OUTFLOW', limits, async (tasks) => {
    const rows = new Map(
      (
        await deps.sql.rows<InFlight>(attemptsInFlight, [
          tasks.map((t) => t.subjectId),
          tasks.map((t) => t.tenantId),
        ])
      ).map((r) => [r.payout_id, r]),
    );
    const backoff = (task: ClaimedTask) =>
      taskBackoffMs(task.attempts, Math.max(grace, 1000), QUERY_BACKOFF_CAP_MS);
    const later = (task: ClaimedTask, error: string, retryInMs = backoff(task)): TaskRetry => ({
      task,
      error,
      dueAt: new Date(deps.clock.now().getTime() + retryInMs),
    });
    const heard: Heard[] = [];
    const asking: { task: ClaimedTask; row: InFlight & { id: string; status: OutflowStatus } }[] = [];
    const now = deps.clock.now().getTime();
    for (const task of tasks) {
      const row = rows.get(task.subjectId);
      const payoutId = task.subjectId;
      if (row?.payout_status !== 'PROCESSING') heard.push({ task, payoutId, done: true });
      // Between two attempts: the DISPATCH task owns the next one; look again later.
      else if (row.id === null || row.status === null || TERMINAL.has(row.status)) {
        heard.push({ task, payoutId, retry: later(task, 'between attempts', Math.max(grace, 1000)) });
      } else {
        const age = now - toDate(row.dispatched_at ?? row.created_at ?? new Date(now)).getTime();
        if (age < grace)
          heard.push({ task, payoutId, retry: later(task, 'within the grace period', grace - age) });
        else asking.push({ task, row: { ...row, id: row.id, status: row.status } });
      }
    }
    await inLanes(asking, SUBMIT_CONCURRENCY, async ({ task, row }) => {
      const payoutId = row.payout_id;
      let result: ProcessorResult | null;
      try {
        result = await deps.rails.processor.query(row.id);
      } catch (err) {
        if (!(err instanceof ProviderUnavailableError)) {
          deps.log.warn({ err, task: task.id, payout: payoutId }, 'status query failed; will retry');
        }
        heard.push({ task, payoutId, retry: later(task, `status query failed: ${errorText(err)}`) });
        return;
      }
      if (!result) {
        // The processor never received it: the DISPATCH task still owns a PENDING attempt and will
        // submit it; an accepted one it does not know is for operators to look at.
        if (row.status === 'PROCESSING') {
          deps.log.error(
            { payout: payoutId, outflow: row.id },
            'processor does not know an accepted attempt',
          );
        }
        heard.push({ task, payoutId, retry: later(task, 'the processor does not know the attempt') });
      } else if (result.status === 'ACCEPTED' && row.status === 'PROCESSING') {
        heard.push({ task, payoutId, retry: later(task, 'still processing') });
      } else heard.push({ task, payoutId, item: { outflowId: row.id, verdict: result, source: 'QUERY' } });
    });
    await recordHeard(deps, heard, (record, task) =>
      (record.payout.at(-1)?.to ?? 'PROCESSING') === 'PROCESSING'
        ? later(task, 'outcome recorded; the payout is still processing')
        : null,
    );
  });
}

/** A processor callback (`POST /callbacks/processor`) after its signature was verified. */
export interface ProcessorReport extends ProcessorVerdict {
  reference: string;
  occurredAt: string | null;
}

/**
 * Applies a processor callback to its outflow (and through it to the payout, triggered_by
 * PROCESSOR_WEBHOOK). An unknown reference is logged and acknowledged: answering an error would
 * only make the processor retry a callback that can never apply.
 */
export async function handleProcessorReport(deps: Deps, report: ProcessorReport, log: Logger): Promise<void> {
  const context = { reference: report.reference, status: report.status, occurred_at: report.occurredAt };
  const exists =
    isUuid(report.reference) && (await deps.orm.em.fork().count(Outflow, { id: report.reference })) > 0;
  if (!exists) {
    log.warn(context, 'processor callback for an unknown reference; acknowledged and ignored');
    return;
  }
  const [record] = await recordInOwnTransaction(
    deps,
    [{ outflowId: report.reference, verdict: report, source: 'CALLBACK' }],
    log,
  );
  if (!record) throw new Error(`no record of the callback for ${report.reference}`);
  if (!record.taken) {
    const contradicts = TERMINAL.has(record.to) && !sameOutcome(record.to, report.status);
    if (contradicts) {
      log.warn(
        { ...context, outflow_status: record.to, failure_code: report.failureCode },
        'processor callback contradicts the recorded outcome; ignored',
      );
    } else {
      log.info({ ...context, outflow_status: record.to }, 'duplicate or stale processor callback; ignored');
    }
    return;
  }
  // Work the callback made due (another attempt, a refund) starts now rather than at the next poll.
  deps.jobs?.kick('dispatch');
  deps.jobs?.kick('refunds');
}

function sameOutcome(outflow: OutflowStatus, reported: ProcessorVerdict['status']): boolean {
  return (
    (outflow === 'SUCCESSFUL' && reported === 'SUCCESSFUL') || (outflow === 'FAILED' && reported === 'FAILED')
  );
}
