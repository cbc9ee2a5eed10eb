import { setTimeout as sleep } from 'node:timers/promises';
import type { Deps } from '#src/deps.ts';
import {
  type AttemptResult,
  type ClaimRound,
  claimDueDeliveries,
  type FinishedAttempt,
  nextDueAt,
  publishEvents,
  recordAttemptResults,
  type StartedAttempt,
  type TenantScope,
} from './delivery.service.ts';
import { createWebhookSender, type WebhookSender } from './sender.ts';
import { deliveryHeaders } from './signature.ts';
import { type HostResolver, urlPolicyOf } from './url-policy.ts';

/**
 * The webhooks job: turns outbox events into delivery jobs and sends every due attempt, with at
 * most `WEBHOOK_CONCURRENCY` attempts in flight in this worker and at most
 * `WEBHOOK_CONCURRENCY_PER_TARGET` to one receiver across all workers. While attempts are in
 * flight the pass keeps publishing and claiming (after every recorded batch, and every poll
 * interval), so a receiver that hangs until the time-out holds its own slots and nobody else's.
 *
 * Outcomes are recorded in batches: a finished attempt waits until every attempt in flight has
 * finished, `RECORD_BATCH` results wait, or `RECORD_DELAY_MS` passed, whichever comes first; the
 * batch is then the first statement of the next claim round, in its transaction, so that the
 * places it frees are filled at once (and the round's turn lock costs no round trip of its own).
 * An attempt holds its place until its outcome is recorded (the database counts it ATTEMPTING
 * until then, which is what the per-receiver limit counts).
 */

export interface WebhookPassOptions extends TenantScope {
  /** DNS for the send-time URL policy; the system resolver by default. */
  resolve?: HostResolver;
}

export interface WebhookPassSummary {
  published: number;
  attempted: number;
  succeeded: number;
  failed: number;
  abandoned: number;
}

/** Events published per transaction. */
const PUBLISH_BATCH = 1000;

/**
 * How often, at most, the pass looks for new outbox events while it delivers (it always looks at
 * its start and before it ends): one query per interval rather than one per claim round, for at
 * most this much delay of a new event's first attempt during a busy pass.
 */
const PUBLISH_RECHECK_MS = 50;

/** Results that are recorded at once, without waiting for the other attempts in flight. */
const RECORD_BATCH = 64;

/** The longest a finished attempt waits for others before its outcome is recorded. */
const RECORD_DELAY_MS = 5;

/** Room above the time-out (and the policy's DNS bound) before an unanswered attempt counts as abandoned. */
export const WEBHOOK_LEASE_MARGIN_MS = 30_000;

/** One pass: publish, then deliver until nothing is due and nothing is in flight. */
export async function runWebhooksOnce(
  deps: Deps,
  options: WebhookPassOptions = {},
): Promise<WebhookPassSummary> {
  const { config } = deps;
  const send = createWebhookSender({
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    policy: urlPolicyOf(config),
    resolve: options.resolve,
  });
  const summary: WebhookPassSummary = { published: 0, attempted: 0, succeeded: 0, failed: 0, abandoned: 0 };
  const recorder = createRecorder(deps, summary);
  const sends = new Set<Promise<void>>();
  let lastPublish = Number.NEGATIVE_INFINITY;
  let backlog = false;
  // While nothing is due and nothing in flight: when (performance.now()) the next retry is due.
  let idleUntil: number | null = null;
  // The clock when the last claim round looked for due jobs: what became due since, it did not see.
  let lookedAt = deps.clock.now();

  try {
    for (;;) {
      let publishedNow = false;
      let publishedAny = false;
      if (backlog || performance.now() - lastPublish >= PUBLISH_RECHECK_MS) {
        const batch = await publishEvents(deps.sql, {
          now: deps.clock.now(),
          limit: PUBLISH_BATCH,
          tenantIds: options.tenantIds,
        });
        summary.published += batch.published;
        backlog = batch.published === PUBLISH_BATCH;
        publishedAny = batch.jobs > 0;
        lastPublish = performance.now();
        publishedNow = true;
      }
      const finished = recorder.take();
      const slots = config.WEBHOOK_CONCURRENCY - recorder.outstanding + finished.length;
      let more = false;
      let started: StartedAttempt[] = [];
      // While waiting for a retry, only new events or the retry's due time call for a round.
      const waitingForRetry = idleUntil !== null && performance.now() < idleUntil && !publishedAny;
      if (slots > 0 && !(waitingForRetry && finished.length === 0)) {
        let round: ClaimRound;
        lookedAt = deps.clock.now();
        try {
          round = await claimDueDeliveries(deps.sql, deps, {
            now: lookedAt,
            slots,
            perTarget: config.WEBHOOK_CONCURRENCY_PER_TARGET,
            leaseMs: config.WEBHOOK_TIMEOUT_MS + WEBHOOK_LEASE_MARGIN_MS,
            backoffBaseMs: config.WEBHOOK_BACKOFF_BASE_MS,
            tenantIds: options.tenantIds,
            finished,
          });
        } catch (err) {
          recorder.settle(finished, null, err);
          throw err;
        }
        recorder.settle(finished, round.settled);
        started = round.started;
        more = round.more || round.abandoned > 0;
        summary.abandoned += round.abandoned;
        if (round.abandoned > 0) deps.metrics.webhookAttempts.inc({ outcome: 'abandoned' }, round.abandoned);
      }
      for (const attempt of started) {
        summary.attempted++;
        recorder.started();
        const running = attemptOnce(deps, send, attempt).then((result) => {
          sends.delete(running);
          recorder.finished({ attempt, result });
        });
        sends.add(running);
      }
      if (started.length > 0) idleUntil = null;
      if (more || backlog) continue;
      if (recorder.outstanding === 0) {
        if (started.length === 0) {
          if (!publishedNow) {
            // Look at the outbox once more before deciding there is nothing to do.
            lastPublish = Number.NEGATIVE_INFINITY;
            continue;
          }
          // Nothing due and nothing in flight. A retry due before the next pass would start is
          // waited for here, once, so that it goes out on time rather than a poll interval late;
          // new events are still looked for meanwhile. Should the retry still not be due when
          // the wait is over (a clock that does not move), the pass ends.
          if (idleUntil === null) {
            const wait = await untilNextDue(deps, options, lookedAt);
            if (wait === null) break;
            idleUntil = performance.now() + wait;
          } else if (performance.now() >= idleUntil) break;
          await sleep(Math.max(0, Math.min(idleUntil - performance.now(), PUBLISH_RECHECK_MS)));
          lastPublish = Number.NEGATIVE_INFINITY;
        }
        continue;
      }
      if (recorder.ready) continue;
      const poll = new AbortController();
      await Promise.race([
        recorder.nextReady(),
        sleep(config.WORKER_POLL_INTERVAL_MS, undefined, { signal: poll.signal }).catch(() => undefined),
      ]);
      poll.abort();
    }
  } finally {
    // A failed claim or publish must not leave attempts running or unrecorded past the pass.
    await Promise.all(sends);
    await recorder.drain();
  }
  return summary;
}

/**
 * Milliseconds until the next job becomes due, when that is within a poll interval; else null.
 * Jobs that became due after the last claim round looked (`lookedAt`) count too, with no wait:
 * a retry falling due between that round and this question is still sent in this pass.
 */
async function untilNextDue(deps: Deps, scope: TenantScope, lookedAt: Date): Promise<number | null> {
  const next = await nextDueAt(deps.sql, { now: lookedAt, ...scope });
  if (!next) return null;
  const wait = next.getTime() - deps.clock.now().getTime();
  return wait <= deps.config.WORKER_POLL_INTERVAL_MS ? Math.max(0, wait) : null;
}

/** Sends one started attempt; never throws (a crash while sending is a failed attempt). */
async function attemptOnce(deps: Deps, send: WebhookSender, attempt: StartedAttempt): Promise<AttemptResult> {
  try {
    const headers = deliveryHeaders({
      body: attempt.body,
      eventType: attempt.eventType,
      deliveryId: attempt.deliveryId,
      secret: attempt.signing?.secret ?? null,
      now: deps.clock.now(),
    });
    const outcome = await send({ url: attempt.url, body: attempt.body, headers });
    deps.metrics.webhookAttempts.inc({
      outcome: outcome.ok ? 'success' : outcome.responseStatus === null ? 'error' : 'failure',
    });
    return outcome.ok
      ? {
          ok: true,
          responseStatus: outcome.responseStatus,
          failureReason: null,
          durationMs: outcome.durationMs,
        }
      : outcome;
  } catch (err) {
    deps.log.error({ err, delivery: attempt.deliveryId }, 'webhook attempt crashed');
    deps.metrics.webhookAttempts.inc({ outcome: 'error' });
    return {
      ok: false,
      responseStatus: null,
      failureReason: 'internal error while sending',
      durationMs: null,
    };
  }
}

/** Collects finished attempts into batches for the claim rounds to record. */
interface Recorder {
  /** Attempts started and not yet recorded (or given up on): the places they hold. */
  readonly outstanding: number;
  /** A batch waits to be recorded. */
  readonly ready: boolean;
  started(): void;
  finished(attempt: FinishedAttempt): void;
  /** The batch to record in the next claim round, once one is ready; else nothing. */
  take(): FinishedAttempt[];
  /** Accounts for a batch the round recorded (`settled`), or failed to record (null). */
  settle(batch: readonly FinishedAttempt[], settled: (string | null)[] | null, err?: unknown): void;
  /** Resolves when a batch is ready. */
  nextReady(): Promise<void>;
  /** Records whatever waits on its own, at the end of the pass. */
  drain(): Promise<void>;
}

function createRecorder(deps: Deps, summary: WebhookPassSummary): Recorder {
  let outstanding = 0;
  let sending = 0;
  let pending: FinishedAttempt[] = [];
  let ready = false;
  let timer: NodeJS.Timeout | undefined;
  const waiters: (() => void)[] = [];

  const markReady = (): void => {
    clearTimeout(timer);
    timer = undefined;
    if (pending.length === 0) return;
    ready = true;
    for (const wake of waiters.splice(0)) wake();
  };

  const recorder: Recorder = {
    get outstanding() {
      return outstanding;
    },
    get ready() {
      return ready;
    },
    started() {
      outstanding++;
      sending++;
    },
    finished(attempt) {
      sending--;
      pending.push(attempt);
      if (pending.length >= RECORD_BATCH || sending === 0) markReady();
      else timer ??= setTimeout(markReady, RECORD_DELAY_MS);
    },
    take() {
      if (!ready) return [];
      ready = false;
      clearTimeout(timer);
      timer = undefined;
      const batch = pending;
      pending = [];
      return batch;
    },
    settle(batch, settled, err) {
      outstanding -= batch.length;
      if (batch.length > 0) report(deps, summary, batch, settled, err);
    },
    nextReady: () => new Promise<void>((resolve) => waiters.push(resolve)),
    async drain() {
      clearTimeout(timer);
      const batch = pending;
      pending = [];
      ready = false;
      if (batch.length === 0) return;
      try {
        const settled = await recordAttemptResults(deps.sql, batch, {
          backoffBaseMs: deps.config.WEBHOOK_BACKOFF_BASE_MS,
          now: deps.clock.now(),
        });
        recorder.settle(batch, settled);
      } catch (err) {
        recorder.settle(batch, null, err);
      }
    },
  };
  return recorder;
}

/**
 * Counts and logs a batch of outcomes. One that was not recorded leaves its job ATTEMPTING until
 * its lease runs out and a later pass abandons it: a duplicate delivery, never a lost one.
 */
function report(
  deps: Deps,
  summary: WebhookPassSummary,
  batch: readonly FinishedAttempt[],
  settled: (string | null)[] | null,
  err: unknown,
): void {
  if (settled === null) {
    deps.log.error(
      { err, deliveries: batch.map((f) => f.attempt.deliveryId) },
      'webhook attempt outcomes not recorded; they are retried after their lease',
    );
    return;
  }
  const debug = deps.log.isLevelEnabled('debug');
  batch.forEach(({ attempt, result }, i) => {
    if (result.ok) summary.succeeded++;
    else summary.failed++;
    // A DEAD delivery needs a person (admin.webhooks.dead lists them); the others are routine.
    const dead = settled[i] === 'DEAD';
    if (!dead && !debug) return;
    const line = {
      delivery: attempt.deliveryId,
      tenant_id: attempt.tenantId,
      attempt: attempt.attempt,
      origin: attempt.origin,
      status: result.responseStatus,
      failure: result.failureReason,
      ms: result.durationMs,
    };
    if (dead) deps.log.warn(line, 'webhook delivery dead after its last attempt');
    else deps.log.debug(line, 'webhook attempt');
  });
}
