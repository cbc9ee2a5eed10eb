import { setTimeout as sleep } from 'node:timers/promises';
import type { Deps } from '#src/deps.ts';
import {
  type AttemptResult,
  claimDueDeliveries,
  publishEvents,
  recordAttemptResult,
  type StartedAttempt,
  type TenantScope,
} from './delivery.service.ts';
import { createWebhookSender, type WebhookSender } from './sender.ts';
import { deliveryHeaders } from './signature.ts';
import type { HostResolver } from './url-policy.ts';

/**
 * The webhooks job: turns outbox events into delivery jobs and sends every due attempt, with at
 * most `WEBHOOK_CONCURRENCY` attempts in flight in this worker and at most
 * `WEBHOOK_CONCURRENCY_PER_TARGET` to one receiver across all workers. While attempts are in
 * flight the pass keeps publishing and claiming (every completion, and every poll interval), so a
 * receiver that hangs until the time-out holds its own slots and nobody else's.
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

const PUBLISH_BATCH = 200;

/** Room above the time-out (and the policy's DNS bound) before an unanswered attempt counts as abandoned. */
const LEASE_MARGIN_MS = 30_000;

/** One pass: publish, then deliver until nothing is due and nothing is in flight. */
export async function runWebhooksOnce(
  deps: Deps,
  options: WebhookPassOptions = {},
): Promise<WebhookPassSummary> {
  const { config } = deps;
  const send = createWebhookSender({
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    allowPrivate: config.WEBHOOK_ALLOW_PRIVATE_URLS,
    resolve: options.resolve,
  });
  const summary: WebhookPassSummary = { published: 0, attempted: 0, succeeded: 0, failed: 0, abandoned: 0 };
  const inFlight = new Set<Promise<void>>();

  try {
    for (;;) {
      summary.published += await publishAll(deps, options);
      const slots = config.WEBHOOK_CONCURRENCY - inFlight.size;
      let more = false;
      let started: StartedAttempt[] = [];
      if (slots > 0) {
        const round = await deps.orm.em.fork().transactional((tx) =>
          claimDueDeliveries(tx, deps, {
            now: deps.clock.now(),
            slots,
            perTarget: config.WEBHOOK_CONCURRENCY_PER_TARGET,
            leaseMs: config.WEBHOOK_TIMEOUT_MS + LEASE_MARGIN_MS,
            backoffBaseMs: config.WEBHOOK_BACKOFF_BASE_MS,
            tenantIds: options.tenantIds,
          }),
        );
        started = round.started;
        more = round.more || round.abandoned > 0;
        summary.abandoned += round.abandoned;
      }
      for (const attempt of started) {
        summary.attempted++;
        const running = deliver(deps, send, attempt).then((ok) => {
          if (ok === true) summary.succeeded++;
          else if (ok === false) summary.failed++;
          inFlight.delete(running);
        });
        inFlight.add(running);
      }
      if (more) continue;
      if (inFlight.size === 0) {
        if (started.length === 0) break;
        continue;
      }
      const poll = new AbortController();
      await Promise.race([
        ...inFlight,
        sleep(config.WORKER_POLL_INTERVAL_MS, undefined, { signal: poll.signal }).catch(() => undefined),
      ]);
      poll.abort();
    }
  } finally {
    // A failed claim or publish must not leave attempts running unobserved past the pass.
    await Promise.all(inFlight);
  }
  return summary;
}

/** Publishes every waiting outbox event, in batches. */
async function publishAll(deps: Deps, scope: TenantScope): Promise<number> {
  let published = 0;
  for (;;) {
    const batch = await deps.orm.em
      .fork()
      .transactional((tx) => publishEvents(tx, { now: deps.clock.now(), limit: PUBLISH_BATCH, ...scope }));
    published += batch.published;
    if (batch.published < PUBLISH_BATCH) return published;
  }
}

/**
 * Sends one started attempt and records its outcome. Returns whether it succeeded, or null when
 * the outcome could not be recorded: the job then stays ATTEMPTING until its lease runs out and
 * a later pass abandons it (a duplicate delivery, never a lost one).
 */
async function deliver(deps: Deps, send: WebhookSender, attempt: StartedAttempt): Promise<boolean | null> {
  let result: AttemptResult;
  try {
    const headers = deliveryHeaders({
      body: attempt.body,
      eventType: attempt.eventType,
      deliveryId: attempt.deliveryId,
      secret: attempt.signing?.secret ?? null,
      now: deps.clock.now(),
    });
    const outcome = await send({ url: attempt.url, body: attempt.body, headers });
    result = outcome.ok
      ? {
          ok: true,
          responseStatus: outcome.responseStatus,
          failureReason: null,
          durationMs: outcome.durationMs,
        }
      : outcome;
  } catch (err) {
    deps.log.error({ err, delivery: attempt.deliveryId }, 'webhook attempt crashed');
    result = {
      ok: false,
      responseStatus: null,
      failureReason: 'internal error while sending',
      durationMs: null,
    };
  }
  let settled: string;
  try {
    const transition = await deps.orm.em.fork().transactional((tx) =>
      recordAttemptResult(tx, {
        deliveryId: attempt.deliveryId,
        attempt: attempt.attempt,
        result,
        secretVersion: attempt.signing?.version ?? null,
        backoffBaseMs: deps.config.WEBHOOK_BACKOFF_BASE_MS,
        now: deps.clock.now(),
      }),
    );
    settled = transition.to;
  } catch (err) {
    deps.log.error({ err, delivery: attempt.deliveryId }, 'webhook attempt outcome not recorded');
    return null;
  }
  const line = {
    delivery: attempt.deliveryId,
    tenant_id: attempt.tenantId,
    attempt: attempt.attempt,
    origin: attempt.origin,
    status: result.responseStatus,
    failure: result.failureReason,
    ms: result.durationMs,
  };
  // A DEAD delivery needs a person (admin.webhooks.dead lists them); the others are routine.
  if (settled === 'DEAD') deps.log.warn(line, 'webhook delivery dead after its last attempt');
  else deps.log.debug(line, 'webhook attempt');
  return result.ok;
}
