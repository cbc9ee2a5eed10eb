import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import {
  type OutflowContext,
  type OutflowEvent,
  type OutflowStatus,
  outflowMachine,
} from '#machines/outflow.machine.ts';
import { type PayoutEvent, payoutMachine, type TriggeredBy } from '#machines/payout.machine.ts';
import { emSql } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { applyEvent, initialState, restore, type Transition } from '#src/engine/engine.ts';
import { DONE, type TaskOutcome } from '#src/jobs/runner.ts';
import { type ClaimedTask, completeTask, taskBackoffMs } from '#src/jobs/tasks.ts';
import { postedFlowNames } from '#src/ledger/flows.ts';
import { post } from '#src/ledger/ledger.ts';
import { crashPoint } from '#src/lib/crash-points.ts';
import { isUuid } from '#src/lib/ids.ts';
import type { Logger } from '#src/lib/log.ts';
import { Payout } from '#src/payouts/entities.ts';
import { applyPayoutEvent } from '#src/payouts/lifecycle.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import type { ProcessorResult } from '#src/providers/rails.ts';
import { Outflow } from './entities.ts';
import { outflowLedger } from './money.ts';

/**
 * Dispatch: paying the beneficiary through the processor, one outflow row per attempt.
 *
 * - An attempt is committed (PENDING row, its id the processor's idempotency reference) before
 *   the processor hears of it, and its outcome is recorded in a second transaction. A crash or a
 *   time-out in between leaves the row PENDING; the next dispatcher asks the processor for that
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

/** Whether the payout waits for a (new) dispatch attempt. */
function awaitsDispatch(payout: Payout): boolean {
  if (payout.status === 'PAYMENT_RECEIVED') return true;
  return (
    payout.status === 'PROCESSING' && restore(payoutMachine, payout).matches({ PROCESSING: 'redispatching' })
  );
}

/** The payout's attempt with the highest number, or null before the first. */
export async function latestOutflow(em: EntityManager, payoutId: string): Promise<Outflow | null> {
  return em.findOne(Outflow, { payout: payoutId }, { orderBy: { attemptNumber: 'desc' } });
}

/** What one verdict did: whether the outflow changed, and the payout transitions it caused. */
export interface VerdictRecord {
  outflow: Outflow;
  taken: boolean;
  from: OutflowStatus;
  to: OutflowStatus;
  payout: Transition<Payout, PayoutEvent>[];
}

/**
 * Applies one processor verdict to an outflow inside the caller's transaction, and forwards it to
 * the payout only if the outflow took the transition. Returns what happened; writes nothing for a
 * verdict the outflow absorbs (duplicate, late, contradicting a final outcome).
 */
export async function recordVerdict(
  em: EntityManager,
  args: {
    outflowId: string;
    verdict: ProcessorVerdict;
    source: VerdictSource;
    now: Date;
    maxAttempts: number;
    log: Logger;
  },
): Promise<VerdictRecord> {
  const { verdict, source, now } = args;
  const t = await applyEvent(em, {
    machine: outflowMachine,
    entity: Outflow,
    id: args.outflowId,
    event: outflowEventOf(verdict, source, now),
  });
  const outflow = t.row;
  const from = t.from as OutflowStatus;
  const to = t.to as OutflowStatus;
  if (!t.taken) return { outflow, taken: false, from, to, payout: [] };

  const context = outflow.snapshot.context as OutflowContext;
  outflow.processorReference = context.processorReference?.slice(0, 128) ?? null;
  outflow.failureCode = context.failureCode?.slice(0, 100) ?? null;
  outflow.failureReason = context.failureReason?.slice(0, 500) ?? null;
  outflow.retryable = context.retryable ?? false;
  // dispatched_at: when the processor took the attempt; settled_at: when it paid the beneficiary.
  if (to === 'PROCESSING' || to === 'SUCCESSFUL') outflow.dispatchedAt ??= now;
  if (to === 'SUCCESSFUL') outflow.settledAt = now;
  if (postedFlowNames(t.actions).length > 0) {
    // The price is fixed once the instruction is generated: read without the payout's lock,
    // which the payout's own event takes below.
    const priced = await em.findOneOrFail(Payout, outflow.payout.id);
    await post(
      emSql(em),
      outflowLedger(
        {
          id: outflow.id,
          tenantId: priced.tenant.id,
          payoutId: priced.id,
          processor: outflow.processor,
          settlementCurrency: priced.settlementCurrency,
          converted: priced.settlementAmount.minus(priced.totalFeeAmount),
          destinationAmount: outflow.destinationAmount,
          destinationCurrency: outflow.destinationCurrency,
        },
        t,
        t.event.type,
        now,
      ),
    );
  }

  const events = payoutEventsOf({
    from,
    to,
    context,
    attemptsLeft: outflow.attemptNumber < args.maxAttempts,
    triggeredBy: TRIGGERED_BY[source],
    now,
  });
  const metadata = {
    outflow_id: outflow.id,
    attempt_number: outflow.attemptNumber,
    processor_reference: outflow.processorReference ?? null,
  };
  const payout: Transition<Payout, PayoutEvent>[] = [];
  for (const event of events) {
    const reasonDetail =
      'failureCode' in event
        ? { failure_code: event.failureCode, failure_reason: event.failureReason, retryable: event.retryable }
        : null;
    const pt = await applyPayoutEvent(em, outflow.payout.id, event, { reasonDetail, metadata });
    if (!pt.taken) {
      args.log.warn(
        { payout: outflow.payout.id, outflow: outflow.id, status: pt.from, event: event.type },
        'payout ignored an outcome its outflow took',
      );
    }
    payout.push(pt);
  }
  crashPoint('dispatch.before-commit', [outflow.payout.id]);
  return { outflow, taken: true, from, to, payout };
}

interface Attempt {
  outflow: Outflow;
  payout: Payout;
  /** An attempt committed earlier whose outcome is unknown: it may already be at the processor. */
  resumed: boolean;
}

/**
 * Commits the attempt to submit for a payout that awaits dispatch: the PENDING row of an attempt
 * whose outcome is unknown (submitted again under the same reference), else a new row with the
 * next attempt number. Null when the payout needs no dispatch.
 */
async function commitAttempt(deps: Deps, task: ClaimedTask): Promise<Attempt | null> {
  const payoutId = task.subjectId;
  const em = deps.orm.em.fork();
  return em.transactional(async (tx) => {
    // The payout lock serialises dispatchers: two of them never both create attempt n + 1.
    const payout = await tx.findOne(Payout, payoutId, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!payout || !awaitsDispatch(payout)) {
      await completeTask(tx, task, deps.clock.now());
      return null;
    }
    const latest = await latestOutflow(tx, payoutId);
    if (latest?.status === 'PENDING') return { outflow: latest, payout, resumed: true };
    if (latest && latest.status !== 'FAILED') {
      deps.log.error(
        { payout: payoutId, outflow: latest.id, outflow_status: latest.status, payout_status: payout.status },
        'payout awaits dispatch but its last attempt is not over; not dispatching',
      );
      return null;
    }
    const attemptNumber = (latest?.attemptNumber ?? 0) + 1;
    if (attemptNumber > deps.config.DISPATCH_MAX_ATTEMPTS) {
      deps.log.error({ payout: payoutId, attemptNumber }, 'dispatch attempts exhausted; not dispatching');
      return null;
    }
    const initial = initialState(outflowMachine, {});
    const outflow = tx.create(Outflow, {
      tenant: payout.tenant,
      payout,
      status: initial.status as OutflowStatus,
      snapshot: initial.snapshot,
      processor: deps.rails.processor.name,
      attemptNumber,
      destinationAmount: payout.destinationAmount,
      destinationCurrency: payout.destinationCurrency,
      processorReference: null,
      failureReason: null,
      failureCode: null,
      retryable: false,
      dispatchedAt: null,
      settledAt: null,
    });
    return { outflow, payout, resumed: false };
  });
}

/** Applies a verdict in its own transaction; the payout is locked only after the outflow. */
async function recordInOwnTransaction(
  deps: Deps,
  outflowId: string,
  verdict: ProcessorVerdict,
  source: VerdictSource,
  log: Logger = deps.log,
): Promise<VerdictRecord> {
  const now = deps.clock.now();
  return deps.orm.em.fork().transactional((tx) =>
    recordVerdict(tx, {
      outflowId,
      verdict,
      source,
      now,
      maxAttempts: deps.config.DISPATCH_MAX_ATTEMPTS,
      log,
    }),
  );
}

/**
 * The DISPATCH task of one payout: commit the attempt, submit it, record the answer. A transport
 * failure keeps the task (and the PENDING row) for another submit of the same reference, made
 * only if the processor, asked first, does not have it.
 */
export async function dispatchPayout(deps: Deps, task: ClaimedTask): Promise<TaskOutcome> {
  const attempt = await commitAttempt(deps, task);
  if (!attempt) return DONE;
  const { outflow, payout } = attempt;
  crashPoint('dispatch.attempt-committed', [payout.id]);
  if (attempt.resumed && (await answeredByQuery(deps, outflow))) return DONE;
  let result: ProcessorResult;
  try {
    result = await deps.rails.processor.submit({
      reference: outflow.id,
      attempt: outflow.attemptNumber,
      destinationType: payout.destinationType,
      country: payout.destinationCountry,
      currency: payout.destinationCurrency,
      amount: outflow.destinationAmount,
      accountUnique: payout.destinationAccountUnique,
      providerCode: payout.destinationProviderCode ?? null,
      providerName: payout.destinationProviderName,
      accountName: payout.destinationAccountName ?? null,
      callbackUrl: `${deps.callbackBaseUrl}/callbacks/processor`,
    });
  } catch (err) {
    if (!(err instanceof ProviderUnavailableError)) throw err;
    return {
      done: false,
      error: `attempt ${outflow.attemptNumber} (${outflow.id}) outcome unknown: ${err.message}; resubmitting the same reference`,
    };
  }
  crashPoint('dispatch.submitted', [payout.id]);
  await recordInOwnTransaction(deps, outflow.id, result, 'SUBMIT');

  // A next attempt made due meanwhile (a retryable refusal, or a failure callback that raced this
  // submit) re-scheduled this open task: completing it then leaves it open and due at once
  // (the task's generation moved), so the next pass carries that attempt.
  return DONE;
}

/**
 * Before an attempt of unknown outcome is submitted again (a dispatcher crashed, timed out, or
 * lost its lease while the processor had it), asks the processor for it: one it already has is
 * recorded from its answer and not sent twice. True when it was; false when the processor does
 * not know the reference or cannot be asked, and the same reference is to be submitted.
 */
async function answeredByQuery(deps: Deps, outflow: Outflow): Promise<boolean> {
  let known: ProcessorResult | null;
  try {
    known = await deps.rails.processor.query(outflow.id);
  } catch (err) {
    if (!(err instanceof ProviderUnavailableError)) throw err;
    return false;
  }
  if (!known) return false;
  await recordInOwnTransaction(deps, outflow.id, known, 'QUERY');
  return true;
}

/**
 * The QUERY_OUTFLOW task of one payout, open for as long as the payout is PROCESSING: once the
 * attempt in flight is older than OUTFLOW_QUERY_GRACE_MS, ask the processor and apply its answer
 * as a callback would (triggered_by SYSTEM); an outcome still unknown is asked again with backoff.
 */
export async function queryOutflow(deps: Deps, task: ClaimedTask): Promise<TaskOutcome> {
  const grace = deps.config.OUTFLOW_QUERY_GRACE_MS;
  const later = (
    error: string,
    retryInMs = taskBackoffMs(task.attempts, Math.max(grace, 1000), QUERY_BACKOFF_CAP_MS),
  ) => ({ done: false, error, retryInMs }) as const;
  const em = deps.orm.em.fork();
  const payout = await em.findOne(Payout, task.subjectId);
  if (payout?.status !== 'PROCESSING') return DONE;
  const outflow = await latestOutflow(em, payout.id);
  // Between two attempts: the DISPATCH task owns the next one; look again later.
  if (!outflow || TERMINAL.has(outflow.status)) return later('between attempts', Math.max(grace, 1000));
  const age = deps.clock.now().getTime() - (outflow.dispatchedAt ?? outflow.createdAt).getTime();
  if (age < grace) return later('within the grace period', grace - age);

  let result: ProcessorResult | null;
  try {
    result = await deps.rails.processor.query(outflow.id);
  } catch (err) {
    if (!(err instanceof ProviderUnavailableError)) throw err;
    return later(`status query failed: ${err.message}`);
  }
  if (!result) {
    // The processor never received it: the DISPATCH task still owns a PENDING attempt and will
    // submit it; an accepted one it does not know is for operators to look at.
    if (outflow.status === 'PROCESSING') {
      deps.log.error(
        { payout: payout.id, outflow: outflow.id },
        'processor does not know an accepted attempt',
      );
    }
    return later('the processor does not know the attempt');
  }
  if (result.status === 'ACCEPTED' && outflow.status === 'PROCESSING') return later('still processing');
  const record = await recordInOwnTransaction(deps, outflow.id, result, 'QUERY');
  const status = record.payout.at(-1)?.to ?? payout.status;
  return status === 'PROCESSING' ? later('outcome recorded; the payout is still processing') : DONE;
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
  const record = await recordInOwnTransaction(deps, report.reference, report, 'CALLBACK', log);
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
