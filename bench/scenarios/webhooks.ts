import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { retryDelayMs } from '#machines/webhook-delivery.machine.ts';
import { verifyWebhook } from '#src/client/verifier.ts';
import { type BenchContext, startService, waitFor } from '../lib/context.ts';
import { cpuSample, cpuUse } from '../lib/cpu.ts';
import { resetWork, scalar } from '../lib/db.ts';
import { JOBS, judged, round } from '../lib/report.ts';
import { workerRoundsOf } from '../lib/rounds.ts';
import { api, type PartitionSpan, partitionSpan } from '../lib/seed.ts';
import { traceWorkers } from '../lib/trace.ts';

/**
 * Webhook delivery: `webhookEvents` outbox events published and delivered by the webhooks worker
 * of one instance to a local receiver that verifies every signature and fails 20 % of the requests
 * (the first attempt of one delivery in four). Every event must be delivered exactly as the
 * schedule says: one job per event, a failed first attempt retried once no earlier than its
 * backoff, every job SUCCEEDED, and the receiver sees exactly the attempts the records list.
 *
 * The receiver listens on one port per webhook tenant, so that each merchant has an endpoint (an
 * origin) of its own, as merchants do: the target row runs so, with the default configuration.
 * Two more runs send every tenant's events to one endpoint, with the default per-receiver
 * concurrency and with it raised, to tell the configured cap from the cost of an attempt.
 */

const BACKOFF_MS = 200;
const POLL_MS = 1000;

/** One delivery in four fails its first attempt: 1 / (4 + 1) = 20 % of all requests. */
const failsFirst = (deliveryId: string) => createHash('sha256').update(deliveryId).digest()[0]! % 4 === 0;

interface Received {
  at: number;
  status: number;
}

interface Receiver {
  /** One endpoint per port, all served by the same handler and counted together. */
  urls: string[];
  secrets: Map<string, string>;
  seen: Map<string, Received[]>;
  requests: number;
  /** Requests answered 2xx: the database is asked whether every job SUCCEEDED only once these add up. */
  answeredOk: number;
  badSignatures: number;
  reset(): void;
  close(): Promise<void>;
}

async function startReceiver(endpoints: number): Promise<Receiver> {
  const receiver: Receiver = {
    urls: [],
    secrets: new Map(),
    seen: new Map(),
    requests: 0,
    answeredOk: 0,
    badSignatures: 0,
    reset() {
      this.seen.clear();
      this.requests = 0;
      this.answeredOk = 0;
      this.badSignatures = 0;
    },
    close: async () => {
      await Promise.all(
        servers.map((server) => {
          server.closeAllConnections();
          return new Promise<void>((resolve) => server.close(() => resolve()));
        }),
      );
    },
  };
  const handle: http.RequestListener = (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      receiver.requests++;
      const tenant = req.url?.split('/').at(-1) ?? '';
      const verdict = verifyWebhook({
        rawBody: Buffer.concat(chunks),
        signatureHeader: req.headers['x-service-signature'],
        timestampHeader: req.headers['x-service-timestamp'],
        secret: receiver.secrets.get(tenant) ?? '',
      });
      if (!verdict.ok) receiver.badSignatures++;
      const delivery = String(req.headers['x-service-delivery']);
      const earlier = receiver.seen.get(delivery) ?? [];
      const status = earlier.length === 0 && failsFirst(delivery) ? 500 : 204;
      earlier.push({ at: Date.now(), status });
      receiver.seen.set(delivery, earlier);
      if (status < 300) receiver.answeredOk++;
      res.writeHead(status).end();
    });
  };
  const servers = Array.from({ length: endpoints }, () => http.createServer(handle));
  for (const server of servers) {
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver.urls.push(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  }
  return receiver;
}

/**
 * Whether `count` jobs SUCCEEDED. The receiver's own count of 2xx answers is looked at first: a
 * count over every job, at every poll, would compete with the worker for PostgreSQL.
 */
async function allSucceeded(receiver: Receiver, pool: BenchContext['pool'], count: number): Promise<boolean> {
  if (receiver.answeredOk < count) return false;
  return (await scalar(pool, `select count(*) from webhook_deliveries where status = 'SUCCEEDED'`)) >= count;
}

/** Points every webhook tenant at its own endpoint of the receiver, or all of them at the first. */
async function pointTenants(ctx: BenchContext, receiver: Receiver, ownEndpoints: boolean): Promise<void> {
  const tenants = ctx.webhookTenants;
  await ctx.pool.query(
    `update webhook_configs c set url = u.url, updated_at = now()
       from unnest($1::uuid[], $2::text[]) as u(tenant_id, url) where c.tenant_id = u.tenant_id`,
    [tenants.map((t) => t.id), tenants.map((t, i) => `${receiver.urls[ownEndpoints ? i : 0]}/hooks/${t.id}`)],
  );
}

/** A payout.created payload of realistic size (the payout resource). */
function samplePayload(): Record<string, unknown> {
  const now = new Date().toISOString();
  return {
    object: 'payout',
    id: '01a20231-8730-7239-b1d5-5d06ce599607',
    tenant_id: '01a20231-8182-743e-ad45-80ee583b3dbb',
    status: 'CREATED',
    merchant_reference: 'order-12345',
    notification_url: null,
    destination_type: 'BANK_ACCOUNT',
    destination_country: 'NG',
    destination_currency: 'NGN',
    destination_amount: 150000,
    destination_account_unique: '0123456789',
    destination_provider_name: 'Guaranty Trust Bank',
    destination_provider_code: '058',
    destination_account_name: 'ADAEZE OKONKWO',
    settlement_currency: 'USDT',
    settlement_amount: 0,
    exchange_rate: 0,
    platform_fee_amount: 0,
    platform_fee_currency: 'USDT',
    network_fee_amount: 0,
    network_fee_currency: 'USDT',
    total_fee_amount: 0,
    total_fee_currency: 'USDT',
    is_refunded: false,
    refund_reference: null,
    payment_instruction: null,
    status_timeline: [
      {
        from_status: null,
        to_status: 'CREATED',
        triggered_by: 'SYSTEM',
        reason_code: 'PAYOUT_CREATED',
        reason_detail: null,
        metadata: { request_id: 'req_01a202318730' },
        created_at: now,
      },
    ],
    created_at: now,
    updated_at: now,
  };
}

/** How far back the events go: three weekly partitions, well within both retentions (30 days). */
const SPREAD_DAYS = 20;

/**
 * `count` unpublished payout.created events, round-robin over the webhook tenants, their
 * created_at spread over the last `SPREAD_DAYS` days. The weekly partitions of those past weeks
 * are made first, by the migrations' own `partition_maintain()` from the oldest week on (a fresh
 * database only has the current week's and those ahead): no event or delivery lands in a default
 * partition.
 */
async function seedEvents(ctx: BenchContext, count: number): Promise<void> {
  await resetWork(ctx.pool);
  for (const table of ['outbox_events', 'webhook_deliveries', 'webhook_delivery_attempts']) {
    await ctx.pool.query(
      `select partition_maintain($1, 'week', 6, null, now() - $2::int * interval '1 day')`,
      [table, SPREAD_DAYS],
    );
  }
  await ctx.pool.query(
    `insert into outbox_events (id, tenant_id, payout_id, event_type, payload, created_at)
     select id, tenant_id, null, 'payout.created',
            jsonb_build_object('event_id', id, 'event_type', 'payout.created', 'created_at', at,
                               'status', 'CREATED', 'data', $2::jsonb)::text, at
       from (select gen_random_uuid() as id, ($1::uuid[])[1 + n % array_length($1::uuid[], 1)] as tenant_id,
                    now() - interval '1 minute' - ($4::int * interval '1 day') * ($3::int - n) / $3::int
                      as at
               from generate_series(1, $3::int) as n) e`,
    [ctx.webhookTenants.map((t) => t.id), samplePayload(), count, SPREAD_DAYS],
  );
  await ctx.pool.query('analyze');
}

/** The partitions a run's events and deliveries span, logged and kept in the details. */
async function logSpan(ctx: BenchContext, name: string): Promise<Record<string, PartitionSpan>> {
  const spans: Record<string, PartitionSpan> = {};
  for (const table of ['outbox_events', 'webhook_deliveries', 'webhook_delivery_attempts']) {
    spans[table] = await partitionSpan(ctx.pool, table);
  }
  ctx.log(
    `${name}: ${SPREAD_DAYS} days of events; rows span ${Object.entries(spans)
      .map(([t, s]) => `${t} ${s.spanned} of ${s.attached} partitions (${s.inDefault} in default)`)
      .join(', ')}`,
  );
  return spans;
}

export async function webhookScenario(ctx: BenchContext): Promise<void> {
  const { plan, pool, results } = ctx;
  const receiver = await startReceiver(ctx.webhookTenants.length);
  try {
    // Each webhook tenant points at the receiver; the secret is shown once, in this response.
    const setup = await startService(ctx, { execArgv: [] });
    try {
      for (const [i, tenant] of ctx.webhookTenants.entries()) {
        const out = await api(setup.url, tenant, 'PUT', '/v1/webhooks/config', {
          webhook_url: `${receiver.urls[i]}/hooks/${tenant.id}`,
        });
        if (out.signing_secret) receiver.secrets.set(tenant.id, out.signing_secret as string);
      }
    } finally {
      await setup.stop();
    }

    const tenants = ctx.webhookTenants.length;
    const variants: Variant[] = [
      {
        name: 'webhooks',
        perTarget: 4,
        ownEndpoints: true,
        note: `${tenants} endpoints, one per tenant; default WEBHOOK_CONCURRENCY_PER_TARGET=4`,
        target: true,
      },
      {
        name: 'webhooks (one endpoint, 4 per receiver)',
        perTarget: 4,
        ownEndpoints: false,
        note: `${tenants} tenants on one endpoint; default WEBHOOK_CONCURRENCY_PER_TARGET=4`,
        target: false,
      },
      {
        name: 'webhooks (one endpoint, 32 per receiver)',
        perTarget: 32,
        ownEndpoints: false,
        note: `${tenants} tenants on one endpoint; WEBHOOK_CONCURRENCY_PER_TARGET=32`,
        target: false,
      },
    ];
    // The quick run keeps the default only: it is a smoke check, not a diagnosis. The target's
    // run is repeated in a full run (three rounds): its figures are the medians, with their range.
    for (const variant of plan.quick ? variants.slice(0, 1) : variants) {
      const rounds = variant.target ? workerRoundsOf(plan) : 1;
      const runs: Awaited<ReturnType<typeof runVariant>>[] = [];
      for (let r = 0; r < rounds; r++) runs.push(await runVariant(ctx, receiver, variant));
      variantRows(ctx, variant, runs);
    }

    // Round trips per delivered event (one attempt each for most, two for one in four).
    await pointTenants(ctx, receiver, true);
    const items = plan.traceItems;
    await seedEvents(ctx, items);
    receiver.reset();
    const trace = await traceWorkers(ctx, {
      jobs: ['webhooks'],
      items,
      config: { WEBHOOK_BACKOFF_BASE_MS: BACKOFF_MS },
      done: () => allSucceeded(receiver, pool, items),
    });
    results.add({
      scenario: 'round trips',
      metric: 'webhooks: round trips / event',
      value: trace.roundTripsPerOp,
      unit: '',
    });
    results.add({
      scenario: 'round trips',
      metric: 'webhooks: round trips / attempt',
      value: round(trace.roundTrips / Math.max(1, receiver.requests), 1),
      unit: '',
    });
    results.details.traceWebhooks = {
      ...trace,
      attempts: receiver.requests,
      trips: trace.trips.slice(0, 60),
    };
  } finally {
    await receiver.close();
  }
}

interface Variant {
  name: string;
  perTarget: number;
  /** Each tenant on its own endpoint (origin), or every tenant on one. */
  ownEndpoints: boolean;
  note: string;
  /** The run the issue's target is judged on. */
  target: boolean;
}

async function runVariant(ctx: BenchContext, receiver: Receiver, variant: Variant) {
  const { plan, pool, results } = ctx;
  const events = plan.webhookEvents;
  ctx.log(`${variant.name}: ${events.toLocaleString('en-US')} events (${variant.note})`);
  await pointTenants(ctx, receiver, variant.ownEndpoints);
  await seedEvents(ctx, events);
  receiver.reset();
  const service = await startService(ctx, {
    jobs: ['webhooks'],
    config: {
      WEBHOOK_BACKOFF_BASE_MS: BACKOFF_MS,
      WORKER_POLL_INTERVAL_MS: POLL_MS,
      WEBHOOK_CONCURRENCY_PER_TARGET: variant.perTarget,
    },
  });
  let finished: boolean;
  let seconds: number;
  let cpu: ReturnType<typeof cpuUse>;
  // From the moment the instance is up: its worker thread starts publishing at once.
  const started = performance.now();
  try {
    const before = cpuSample([service.pid], ctx.db.name);
    finished = await waitFor(() => allSucceeded(receiver, pool, events), plan.workerCapS, 250);
    seconds = (performance.now() - started) / 1000;
    cpu = cpuUse(before, cpuSample([service.pid], ctx.db.name), receiver.requests);
  } finally {
    await service.stop();
  }

  await checkSchedule(ctx, receiver, variant.name, events, finished);
  const partitions = await logSpan(ctx, variant.name);
  if (variant.target && results.details[variant.name] === undefined) {
    for (const table of ['outbox_events', 'webhook_deliveries'] as const) {
      results.add({
        scenario: variant.name,
        metric: `${table} partitions spanned (of ${partitions[table]!.attached} attached)`,
        value: partitions[table]!.spanned,
        unit: '',
      });
    }
  }
  const run = {
    partitions,
    events,
    seconds: round(seconds, 1),
    attempts: receiver.requests,
    rate: Math.round(receiver.requests / seconds),
    eventRate: Math.round(events / seconds),
    cpu,
  };
  results.details[variant.name] = [...((results.details[variant.name] as unknown[]) ?? []), run];
  return run;
}

/** A variant's figures: the medians of its runs, with their range when it ran more than once. */
function variantRows(
  ctx: BenchContext,
  variant: Variant,
  runs: { rate: number; eventRate: number; cpu: ReturnType<typeof cpuUse> }[],
): void {
  const { plan, results } = ctx;
  const jobs = JOBS.webhooks;
  results.acrossRounds(
    {
      scenario: variant.name,
      metric: 'signed deliveries per s (attempts, 20 % failing)',
      unit: '/s',
      jobs,
      ...(variant.target ? { target: judged(plan, '≥ 2,000/s') } : {}),
    },
    runs.map((r) => r.rate),
    variant.target && !plan.quick ? { min: 2000 } : undefined,
  );
  results.acrossRounds(
    { scenario: variant.name, metric: 'events delivered per s', unit: '/s', jobs },
    runs.map((r) => r.eventRate),
  );
  results.acrossRounds(
    { scenario: variant.name, metric: 'service CPU per attempt', unit: 'ms', jobs },
    runs.map((r) => r.cpu.serverMsPerOp),
  );
  results.acrossRounds(
    { scenario: variant.name, metric: 'PostgreSQL CPU per attempt', unit: 'ms', jobs },
    runs.map((r) => r.cpu.postgresMsPerOp),
  );
  // The run's own sessions: on a server shared with other work, the line above counts that too.
  results.acrossRounds(
    {
      scenario: variant.name,
      metric: "PostgreSQL CPU per attempt, the bench database's sessions",
      unit: 'ms',
      jobs,
    },
    runs.map((r) => r.cpu.sessionsMsPerOp ?? 0),
  );
}

/** Every event delivered exactly as the schedule says, seen from the database and from the receiver. */
async function checkSchedule(
  ctx: BenchContext,
  receiver: Receiver,
  name: string,
  events: number,
  finished: boolean,
): Promise<void> {
  const { rows } = await ctx.pool.query(
    `select d.id, d.status, d.attempts,
            array_agg(a.status order by a.attempt_number) as records,
            array_agg(a.response_status order by a.attempt_number) as statuses
       from webhook_deliveries d left join webhook_delivery_attempts a on a.delivery_id = d.id
      group by d.id, d.status, d.attempts`,
  );
  const jobsPerEvent = await scalar(
    ctx.pool,
    `select count(*) from (select event_id from webhook_deliveries group by event_id having count(*) > 1) x`,
  );
  const problems: string[] = [];
  let retried = 0;
  let unfinished = 0;
  let earliestGapMs = Number.POSITIVE_INFINITY;
  let latestLatenessMs = 0;
  for (const row of rows as {
    id: string;
    status: string;
    attempts: number;
    records: string[];
    statuses: number[];
  }[]) {
    const fails = failsFirst(row.id);
    const expected = fails ? ['FAILED', 'SUCCESS'] : ['SUCCESS'];
    const seen = receiver.seen.get(row.id) ?? [];
    if (row.status !== 'SUCCEEDED') {
      // A run cut short by the cap is judged on the deliveries it finished.
      if (finished || row.status === 'DEAD') problems.push(`${row.id} is ${row.status}`);
      else unfinished++;
      continue;
    }
    if (row.attempts !== expected.length || row.records.join() !== expected.join()) {
      problems.push(`${row.id}: records ${row.records.join(',')} (expected ${expected.join(',')})`);
    }
    if (seen.length !== expected.length) problems.push(`${row.id}: receiver saw ${seen.length} attempts`);
    if (fails && seen.length === 2) {
      retried++;
      const gap = seen[1]!.at - seen[0]!.at;
      earliestGapMs = Math.min(earliestGapMs, gap);
      latestLatenessMs = Math.max(latestLatenessMs, gap - retryDelayMs(2, BACKOFF_MS));
      // The retry is due a full backoff after the failure was recorded, itself after the response.
      if (gap < retryDelayMs(2, BACKOFF_MS)) problems.push(`${row.id}: retried after ${gap} ms`);
    }
  }
  ctx.results.add({
    scenario: name,
    metric: `events delivered within ${ctx.plan.workerCapS} s`,
    value: rows.length - unfinished,
    unit: `of ${events}`,
    pass: finished,
  });
  const ok =
    (!finished || rows.length === events) &&
    jobsPerEvent === 0 &&
    receiver.badSignatures === 0 &&
    (!finished || receiver.seen.size === events) &&
    problems.length === 0;
  ctx.results.check(
    `${name}: every event delivered exactly as the schedule says`,
    ok,
    `${rows.length} jobs for ${events} events, ${receiver.requests} signed requests ` +
      `(${round((100 * retried) / Math.max(1, receiver.requests), 1)} % failed and retried once), ` +
      `bad signatures ${receiver.badSignatures}; retry gap ≥ ${Number.isFinite(earliestGapMs) ? earliestGapMs : '-'} ms ` +
      `for a ${BACKOFF_MS} ms backoff, latest ${latestLatenessMs} ms behind schedule` +
      (finished ? '' : `; ${events - rows.length + unfinished} not delivered when the cap was reached`) +
      (problems.length ? `; ${problems.length} problems, first: ${problems.slice(0, 3).join('; ')}` : ''),
  );
}
