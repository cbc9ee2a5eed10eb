import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import {
  type RecordParams,
  type WebhookDeliveryEvent,
  webhookDeliveryMachine,
} from '#machines/webhook-delivery.machine.ts';
import type { Secrets } from '#src/deps.ts';
import { applyEvent, initialState, restore, type Transition } from '#src/engine/engine.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { Payout } from '#src/payouts/entities.ts';
import { currentSigningSecret } from './config.service.ts';
import { WebhookDelivery, WebhookDeliveryAttempt } from './delivery.entities.ts';
import { WebhookConfig } from './entities.ts';
import { deliveryBody } from './signature.ts';

/**
 * The database side of webhook delivery: outbox events become delivery jobs, due jobs are
 * claimed and started, outcomes are recorded. Every status change of a job goes through
 * `webhookDeliveryMachine` via the engine, and every attempt it settles leaves one delivery
 * record in the same transaction. Nothing here makes a network call; `job.ts` sends between the
 * claim and the record, outside any transaction.
 */

/** Restricts work to some tenants: an operator's targeted pass, or a test among other tests' rows. */
export interface TenantScope {
  tenantIds?: readonly string[];
}

/**
 * Turns up to `limit` unpublished outbox events into delivery jobs, oldest first, and marks them
 * published in the same transaction (claimed with SKIP LOCKED, so instances share the work).
 * The target is the payout's `notification_url` when set, else the tenant's webhook URL; with
 * neither the event is published without a job. Returns how many events were published.
 */
export async function publishEvents(
  em: EntityManager,
  args: { now: Date; limit: number } & TenantScope,
): Promise<{ published: number; jobs: number }> {
  const events = await em.find(
    OutboxEvent,
    { publishedAt: null, ...(args.tenantIds ? { tenant: { $in: [...args.tenantIds] } } : {}) },
    {
      orderBy: { createdAt: 'asc', id: 'asc' },
      limit: args.limit,
      lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE,
    },
  );
  if (events.length === 0) return { published: 0, jobs: 0 };

  const payoutIds = [...new Set(events.map((e) => e.payoutId).filter((id): id is string => !!id))];
  const tenantIds = [...new Set(events.map((e) => e.tenant.id))];
  const payouts = payoutIds.length > 0 ? await em.find(Payout, { id: { $in: payoutIds } }) : [];
  const configs = await em.find(WebhookConfig, { tenant: { $in: tenantIds } });
  const overrideOf = new Map(payouts.map((p) => [p.id, p.notificationUrl ?? null]));
  const defaultOf = new Map(configs.map((c) => [c.tenant.id, c.url ?? null]));

  let jobs = 0;
  for (const event of events) {
    const target =
      (event.payoutId ? overrideOf.get(event.payoutId) : null) ?? defaultOf.get(event.tenant.id) ?? null;
    if (target) {
      const initial = initialState(webhookDeliveryMachine, { now: args.now });
      em.create(WebhookDelivery, {
        tenant: event.tenant,
        event,
        payoutId: event.payoutId ?? null,
        eventType: event.eventType,
        targetUrl: target,
        targetOrigin: new URL(target).origin,
        status: initial.status as WebhookDelivery['status'],
        snapshot: initial.snapshot,
        attempts: 0,
        dueAt: args.now,
      });
      jobs++;
    }
    event.publishedAt = args.now;
  }
  await em.flush();
  return { published: events.length, jobs };
}

/** An attempt that was just started (its job is ATTEMPTING and committed): what to send. */
export interface StartedAttempt {
  deliveryId: string;
  tenantId: string;
  attempt: number;
  url: string;
  origin: string;
  eventType: string;
  body: string;
  /** The tenant's signing secret at claim time, or null when the delivery goes unsigned. */
  signing: { secret: string; version: number } | null;
}

export interface ClaimLimits {
  now: Date;
  /** Attempts to start at most (the free slots of the caller). */
  slots: number;
  /** Attempts in flight to one origin at most, counting every worker's. */
  perTarget: number;
  /** How long an attempt may stay unanswered before another worker abandons it. */
  leaseMs: number;
  backoffBaseMs: number;
}

/**
 * One claim round, in the caller's transaction: locks due jobs (SKIP LOCKED) of receivers below
 * their concurrency limit, starts an attempt on up to `slots` of them, and abandons attempts
 * whose lease ran out. A receiver at its limit is left out of the query altogether, so a slow
 * receiver's backlog never takes the places of other tenants' deliveries. `more` says the round
 * filled its window and another may find work at once.
 */
export async function claimDueDeliveries(
  em: EntityManager,
  deps: { secrets: Pick<Secrets, 'encryptionKey'> },
  limits: ClaimLimits & TenantScope,
): Promise<{ started: StartedAttempt[]; abandoned: number; more: boolean }> {
  const { now } = limits;
  const busy = await em.execute<{ target_origin: string; n: number }[]>(
    `select target_origin, count(*)::int as n from webhook_deliveries
      where status = 'ATTEMPTING' and due_at > ? group by target_origin`,
    [now],
  );
  const inFlight = new Map(busy.map((b) => [b.target_origin, b.n]));
  const saturated = busy.filter((b) => b.n >= limits.perTarget).map((b) => b.target_origin);

  const window = Math.max(limits.slots, 1) * 2;
  const params: unknown[] = [now];
  let filter = '';
  if (saturated.length > 0) {
    // Lapsed attempts are claimed whatever their receiver's load: abandoning one sends nothing.
    filter += ` and (status = 'ATTEMPTING' or target_origin not in (${saturated.map(() => '?').join(', ')}))`;
    params.push(...saturated);
  }
  if (limits.tenantIds) {
    if (limits.tenantIds.length === 0) return { started: [], abandoned: 0, more: false };
    filter += ` and tenant_id in (${limits.tenantIds.map(() => '?').join(', ')})`;
    params.push(...limits.tenantIds);
  }
  const due = await em.execute<{ id: string }[]>(
    `select id from webhook_deliveries where due_at is not null and due_at <= ?${filter}
      order by due_at limit ? for update skip locked`,
    [...params, window],
  );
  if (due.length === 0) return { started: [], abandoned: 0, more: false };

  const rows = await em.find(
    WebhookDelivery,
    { id: { $in: due.map((d) => d.id) } },
    { populate: ['event'], orderBy: { dueAt: 'asc', id: 'asc' } },
  );
  const started: { row: WebhookDelivery; attempt: number }[] = [];
  let abandoned = 0;
  for (const row of rows) {
    if (row.status === 'ATTEMPTING') {
      const t = await applyDeliveryEvent(em, row.id, {
        type: 'ABANDON',
        backoffBaseMs: limits.backoffBaseMs,
        now,
      });
      if (t.taken) abandoned++;
      continue;
    }
    const busyHere = inFlight.get(row.targetOrigin) ?? 0;
    if (started.length >= limits.slots || busyHere >= limits.perTarget) continue;
    const t = await applyDeliveryEvent(em, row.id, { type: 'ATTEMPT', leaseMs: limits.leaseMs, now });
    if (!t.taken) continue;
    inFlight.set(row.targetOrigin, busyHere + 1);
    started.push({ row, attempt: t.row.attempts });
  }

  // The secret in force now, read once per tenant: a rotation applies to every later attempt,
  // retries of older events included.
  const signing = new Map<string, StartedAttempt['signing']>();
  for (const tenantId of new Set(started.map((s) => s.row.tenant.id))) {
    signing.set(tenantId, await currentSigningSecret(em, deps, tenantId));
  }
  return {
    started: started.map(({ row, attempt }) => ({
      deliveryId: row.id,
      tenantId: row.tenant.id,
      attempt,
      url: row.targetUrl,
      origin: row.targetOrigin,
      eventType: row.eventType,
      body: deliveryBody(row.event.payload),
      signing: signing.get(row.tenant.id) ?? null,
    })),
    abandoned,
    more: due.length === window && started.length < limits.slots,
  };
}

/** What one attempt came to, as the sender reports it. */
export interface AttemptResult {
  ok: boolean;
  responseStatus: number | null;
  failureReason: string | null;
  durationMs: number | null;
}

/**
 * Records the outcome of attempt `attempt` of a job in the caller's transaction: the machine
 * settles it (SUCCEEDED, RETRY_SCHEDULED with the next due time, or DEAD) and its `record` action
 * becomes the delivery record. A result for an attempt that is no longer the current one (it was
 * abandoned meanwhile) is ignored and writes nothing.
 */
export async function recordAttemptResult(
  em: EntityManager,
  args: {
    deliveryId: string;
    attempt: number;
    result: AttemptResult;
    secretVersion: number | null;
    backoffBaseMs: number;
    now: Date;
  },
): Promise<Transition<WebhookDelivery, WebhookDeliveryEvent>> {
  const { result, now } = args;
  const event: WebhookDeliveryEvent = result.ok
    ? { type: 'SUCCEEDED', attempt: args.attempt, responseStatus: result.responseStatus ?? 0, now }
    : {
        type: 'FAILED',
        attempt: args.attempt,
        responseStatus: result.responseStatus,
        failureReason: result.failureReason ?? 'failed',
        backoffBaseMs: args.backoffBaseMs,
        now,
      };
  return applyDeliveryEvent(em, args.deliveryId, event, {
    secretVersion: args.secretVersion,
    durationMs: result.durationMs,
  });
}

/**
 * Applies one event to a delivery job through the engine and, when taken, mirrors the machine's
 * due time and attempt count into their columns and writes the delivery records it asks for.
 */
async function applyDeliveryEvent(
  em: EntityManager,
  deliveryId: string,
  event: WebhookDeliveryEvent,
  extra: { secretVersion?: number | null; durationMs?: number | null } = {},
): Promise<Transition<WebhookDelivery, WebhookDeliveryEvent>> {
  return applyEvent(em, {
    machine: webhookDeliveryMachine,
    entity: WebhookDelivery,
    id: deliveryId,
    event,
    onTransition: async (tx, t: Transition<WebhookDelivery, WebhookDeliveryEvent>) => {
      const row = t.row;
      const context = restore(webhookDeliveryMachine, row).context;
      row.dueAt = context.dueAt ? new Date(context.dueAt) : null;
      row.attempts = context.attempts;
      for (const action of t.actions) {
        if (action.type !== 'record') throw new Error(`webhook delivery machine asked for ${action.type}`);
        const params = action.params as RecordParams;
        tx.create(WebhookDeliveryAttempt, {
          tenant: row.tenant,
          delivery: row,
          eventId: row.event.id,
          payoutId: row.payoutId ?? null,
          eventType: row.eventType,
          attemptNumber: params.attemptNumber,
          targetUrl: row.targetUrl,
          status: params.status,
          responseStatus: params.responseStatus,
          failureReason: params.failureReason?.slice(0, 500) ?? null,
          secretVersion: extra.secretVersion ?? null,
          durationMs: extra.durationMs ?? null,
          createdAt: event.now,
        });
      }
    },
  }) as Promise<Transition<WebhookDelivery, WebhookDeliveryEvent>>;
}
