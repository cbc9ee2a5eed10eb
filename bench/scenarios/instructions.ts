import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type pg from 'pg';
import { type BenchContext, startService, waitFor } from '../lib/context.ts';
import { cpuSample, cpuUse } from '../lib/cpu.ts';
import { fewerThan, resetWork, scalar } from '../lib/db.ts';
import { type LoadOptions, type LoadResult, latencyStats, runLoad } from '../lib/load.ts';
import { JOBS, judged, median, middleBy, round } from '../lib/report.ts';
import { workerRoundsOf } from '../lib/rounds.ts';
import {
  instructionSnapshots,
  payoutBody,
  payoutSnapshots,
  seedDepositAddresses,
  seedPayouts,
} from '../lib/seed.ts';
import { traceWorkers } from '../lib/trace.ts';

/**
 * Instruction generation: `instructionRows` CREATED payouts, each with its GENERATE_INSTRUCTION
 * task due, turned into PENDING_PAYMENT by the instructions worker of one instance; against the
 * same writes done by plain set-based SQL in batches. While the worker drains, a fixed-rate create
 * load measures the API's p99, compared with the same load on an idle instance (the target) and
 * with the same load while plain SQL makes the same writes at the worker's rate: the physical
 * reference, what writing those rows at that pace costs the API on this machine whatever writes
 * them (CPU on two shared cores, WAL flushes the API's commits wait behind).
 */

const REFERENCE = 'instr';
/**
 * The probe: creates at a fixed rate on one connection, well under capacity. One connection, so
 * that the probe's own requests never queue behind each other (autocannon paces each connection
 * separately, and several connections at a fixed rate send in bursts): p99 shows interference.
 */
const PROBE = { connections: 1, rate: 25 };
const BATCH = 500;
/**
 * How often the drain is looked at: the end of a drain is known to within this, so it is short
 * against a drain of several seconds; a look is an index probe of at most 100 open tasks.
 */
const POLL_MS = 100;
/**
 * An instance that runs the instructions worker: only that job, with a sweep every second, so a
 * released backlog is picked up within a second even without the wake-up a create sends.
 */
const WORKER_INSTANCE = { jobs: ['instructions'], config: { INSTRUCTION_SWEEP_INTERVAL_MS: 1000 } };

const done = (pool: pg.Pool) =>
  scalar(
    pool,
    `select count(*) from payouts where merchant_reference like $1 || '-%' and status = 'PENDING_PAYMENT'`,
    [REFERENCE],
  );

/** Every seeded payout moved; counted (a scan of every payout) only once few instruction tasks are open. */
const drainedAll = async (pool: pg.Pool, rows: number) =>
  (await fewerThan(pool, `tasks where kind = 'GENERATE_INSTRUCTION' and done_at is null`, 100)) &&
  (await done(pool)) >= rows;

/** Tasks deferred by {@link deferBacklog}: due a day later than seeded. */
const DEFERRED = `kind = 'GENERATE_INSTRUCTION' and done_at is null and due_at > now() + interval '1 hour'`;

/** Puts the seeded backlog's tasks a day off, so that an instance can start and warm up first. */
const deferBacklog = (pool: pg.Pool) =>
  pool.query(
    `update tasks set due_at = due_at + interval '1 day' where kind = 'GENERATE_INSTRUCTION' and done_at is null`,
  );

/** Makes the deferred backlog due again, all at once (the instance's own tasks are left alone). */
const releaseBacklog = (pool: pg.Pool) =>
  pool.query(`update tasks set due_at = due_at - interval '1 day' where ${DEFERRED}`);

/**
 * `until`: stops the probe, and ends what it counts, once that is true (a drain has finished);
 * `samples` receives every latency too (see `runLoad`).
 */
function probeLoad(
  ctx: BenchContext,
  url: string,
  seconds: number,
  { until, samples }: Pick<LoadOptions, 'until' | 'samples'> = {},
): Promise<LoadResult> {
  let n = 0;
  return runLoad({
    url,
    connections: PROBE.connections,
    overallRate: PROBE.rate,
    durationS: seconds,
    maxRequests: PROBE.rate * seconds + 10,
    until,
    samples,
    next: () => {
      n++;
      const tenant = ctx.tenants[n % ctx.tenants.length]!;
      return {
        method: 'POST',
        path: '/v1/payouts',
        headers: { 'x-api-key': tenant.apiKey, 'idempotency-key': randomUUID() },
        body: payoutBody(n),
      };
    },
  });
}

export async function instructionScenario(ctx: BenchContext): Promise<void> {
  const { plan, pool, results } = ctx;
  const rows = plan.instructionRows;
  const probeS = plan.quick ? 5 : 15;
  const tenantIds = ctx.tenants.map((t) => t.id);
  /** An emptied database with `rows` CREATED payouts, their tasks due (and, for plain SQL, the addresses). */
  const seedCreated = async (withAddresses: boolean) => {
    await resetWork(pool);
    await seedPayouts(pool, {
      tenantIds,
      count: rows,
      status: 'CREATED',
      reference: REFERENCE,
      withTasks: true,
    });
    if (withAddresses) await seedDepositAddresses(pool, tenantIds);
  };

  /**
   * Probes `url` while a worker drains the seeded backlog, watching the backlog meanwhile: a worker
   * that drains before the probe ends is timed when it finishes, not when the probe does (which
   * would cap the rate at rows / probe seconds), and the probe stops there too, so that it counts
   * only requests made under the worker's load.
   */
  const probeWhileDraining = async (url: string, samples?: number[]) => {
    const started = performance.now();
    let drainedAt = 0;
    const drained = waitFor(() => drainedAll(pool, rows), plan.workerCapS, POLL_MS).then((ok) => {
      drainedAt = performance.now();
      return ok;
    });
    const probe = await probeLoad(ctx, url, probeS, { until: () => drainedAt > 0, samples });
    const finished = await drained;
    return { probe, finished, seconds: (drainedAt - started) / 1000 };
  };

  /** The API without worker load: the p99 comparison's denominator. */
  const idleRun = async (samples: number[]) => {
    await resetWork(pool);
    const idle = await startService(ctx);
    try {
      await probeLoad(ctx, idle.url, plan.warmupS);
      return await probeLoad(ctx, idle.url, probeS, { samples });
    } finally {
      await idle.stop();
    }
  };

  /**
   * The worker drains the backlog, the probe running. The instance is warmed up as the idle one
   * is, with its backlog deferred; the backlog then falls due at once. (Probed cold, its first
   * requests, on connections that have prepared nothing yet, counted against the worker.)
   */
  const workerRun = async (samples: number[]) => {
    await seedCreated(false);
    await deferBacklog(pool);
    const service = await startService(ctx, WORKER_INSTANCE);
    let drain: Awaited<ReturnType<typeof probeWhileDraining>>;
    let cpu: ReturnType<typeof cpuUse>;
    try {
      await probeLoad(ctx, service.url, plan.warmupS);
      // The clock and the CPU count start once the backlog is due: the release itself (an update
      // of every task, 0.5-0.7 s of PostgreSQL's CPU) is the benchmark's work, not the worker's.
      await releaseBacklog(pool);
      const before = cpuSample([service.pid]);
      drain = await probeWhileDraining(service.url, samples);
      cpu = cpuUse(before, cpuSample([service.pid]), rows);
    } finally {
      await service.stop();
    }
    const generated = await done(pool);
    const doubled = await scalar(
      pool,
      `select count(*) from (select payout_id from payment_instructions group by payout_id having count(*) > 1) x`,
    );
    return {
      ...drain,
      seconds: round(drain.seconds, 2),
      rate: Math.round(generated / drain.seconds),
      generated,
      doubled,
      cpu,
    };
  };

  /** Plain SQL's batches at full speed: the rate's denominator. */
  const plainRun = async () => {
    await seedCreated(true);
    const before = cpuSample([]);
    const plain = await plainInstructions(pool, rows);
    const cpu = cpuUse(before, cpuSample([]), rows);
    return { ...plain, moved: await done(pool), cpu };
  };

  /** The probe while plain SQL makes the same writes at `rate`: what writing those rows at that pace costs the API. */
  const referenceRun = async (rate: number, samples: number[]) => {
    await seedCreated(true);
    const reference = await startService(ctx);
    try {
      await probeLoad(ctx, reference.url, plan.warmupS);
      let written = false;
      const writing = plainInstructions(pool, rows, rate).finally(() => {
        written = true;
      });
      const probe = await probeLoad(ctx, reference.url, probeS, { until: () => written, samples });
      await writing;
      return probe;
    } finally {
      await reference.stop();
    }
  };

  /**
   * The deployment docs/scaling.md recommends: the API on an instance without jobs (JOBS=none),
   * the worker on another; here both on this one machine, sharing its two cores and PostgreSQL.
   */
  const apartRun = async (samples: number[]) => {
    const api = await startService(ctx);
    try {
      await probeLoad(ctx, api.url, plan.warmupS);
      await seedCreated(false);
      const worker = await startService(ctx, WORKER_INSTANCE);
      try {
        return await probeWhileDraining(api.url, samples);
      } finally {
        await worker.stop();
      }
    } finally {
      await api.stop();
    }
  };

  // Alternating rounds: the idle probe first in even rounds and plain SQL first in odd ones, so
  // that drift on the machine falls on both sides of each comparison. The worker's and plain
  // SQL's rates are the medians of the rounds; each p99 is taken over every request of its
  // probes together (a p99 of one probe of 375 requests is its fourth-slowest, and moved between
  // 2 and 4 times idle over runs of unchanged code).
  const rounds = workerRoundsOf(plan);
  const samples = {
    idle: [] as number[],
    busy: [] as number[],
    reference: [] as number[],
    apart: [] as number[],
  };
  const idleProbes: LoadResult[] = [];
  const workers: Awaited<ReturnType<typeof workerRun>>[] = [];
  const plains: Awaited<ReturnType<typeof plainRun>>[] = [];
  const references: LoadResult[] = [];
  const aparts: Awaited<ReturnType<typeof apartRun>>[] = [];
  for (let r = 0; r < rounds; r++) {
    const idleStep = async () => {
      ctx.log(`instructions: round ${r + 1} of ${rounds}, API probe on an idle instance`);
      idleProbes.push(await idleRun(samples.idle));
    };
    const plainStep = async () => {
      ctx.log(`instructions: round ${r + 1} of ${rounds}, plain SQL batches`);
      plains.push(await plainRun());
    };
    const [first, last] = r % 2 === 0 ? [idleStep, plainStep] : [plainStep, idleStep];
    await first();
    ctx.log(
      `instructions: round ${r + 1}, seeding ${rows.toLocaleString('en-US')} CREATED payouts, worker draining, probe running`,
    );
    const worker = await workerRun(samples.busy);
    workers.push(worker);
    ctx.log(
      `instructions: round ${r + 1}, API probe while plain SQL writes at the worker's rate (${worker.rate}/s)`,
    );
    references.push(await referenceRun(worker.rate, samples.reference));
    ctx.log(
      `instructions: round ${r + 1}, worker on an instance of its own, probe on an instance without jobs`,
    );
    aparts.push(await apartRun(samples.apart));
    await last();
  }
  const generated = workers.reduce((n, w) => n + w.generated, 0);
  // Not finishing within the cap is a measurement (too slow), not a correctness failure.
  results.add({
    scenario: 'instructions',
    metric: `payouts moved within ${plan.workerCapS} s`,
    value: generated,
    unit: `of ${rows * rounds}`,
    pass: workers.every((w) => w.finished) && generated === rows * rounds,
  });
  const doubled = workers.reduce((n, w) => n + w.doubled, 0);
  ctx.results.check('instructions: one instruction per payout', doubled === 0, `${doubled} payouts with two`);
  ctx.results.check(
    'instructions: plain SQL moved every payout',
    plains.every((p) => p.moved === rows),
    plains.map((p) => `${p.moved} of ${rows} in ${p.seconds} s`).join('; '),
  );
  const workerRate = Math.round(median(workers.map((w) => w.rate)));
  const plainRate = Math.round(median(plains.map((p) => p.rate)));
  const idle = latencyStats(samples.idle);
  const busy = latencyStats(samples.busy);
  const referenceStats = latencyStats(samples.reference);
  // The CPU figures of the round whose rate was the median.
  const middle = middleBy(workers, (w) => w.rate);

  const apartStats = latencyStats(samples.apart);

  const pooledOver = (n: number) => `${n} requests of ${rounds} round${rounds === 1 ? '' : 's'}`;
  const jobs = JOBS.instructions;
  results.perRound(
    {
      scenario: 'instructions',
      metric: 'CREATED → PENDING_PAYMENT per s vs plain SQL',
      unit: '/s',
      jobs,
      target: judged(plan, '≥ 0.5'),
    },
    workers.map((w, i) => ({ value: w.rate, baseline: plains[i]!.rate })),
    plan.quick ? undefined : { min: 0.5 },
  );
  results.perRound(
    {
      scenario: 'instructions',
      metric: `API p99 under worker load vs idle (${PROBE.rate} creates/s on one connection)`,
      unit: 'ms',
      jobs,
      target: judged(plan, '≤ 1.5'),
    },
    workers.map((w, i) => ({ value: w.probe.p99, baseline: idleProbes[i]!.p99 })),
    plan.quick ? undefined : { max: 1.5 },
  );
  // The same p99s over every request of the rounds together: a p99 of one probe of 375 requests
  // is its fourth-slowest.
  results.ratio({
    scenario: 'instructions',
    metric: `API p99 under worker load vs idle, pooled (${pooledOver(busy.requests)})`,
    value: busy.p99,
    unit: 'ms',
    baseline: idle.p99,
    jobs,
  });
  results.ratio({
    scenario: 'instructions',
    metric: `API p99 under the same writes in plain SQL at the worker's rate, vs idle, pooled (${pooledOver(referenceStats.requests)})`,
    value: referenceStats.p99,
    unit: 'ms',
    baseline: idle.p99,
    jobs: JOBS.none,
  });
  results.ratio({
    scenario: 'instructions',
    metric: `API p99 under worker load vs under the same writes in plain SQL at the same rate, pooled`,
    value: busy.p99,
    unit: 'ms',
    baseline: referenceStats.p99,
    jobs,
  });
  results.add({
    scenario: 'instructions',
    metric: `API p99 on an idle instance, pooled (${pooledOver(idle.requests)})`,
    value: idle.p99,
    unit: 'ms',
    jobs: JOBS.none,
  });
  results.perRound(
    {
      scenario: 'instructions',
      metric: 'API p99 under worker load vs idle, worker on a second instance',
      unit: 'ms',
      jobs: `${JOBS.none}; instructions on a second`,
    },
    aparts.map((a, i) => ({ value: a.probe.p99, baseline: idleProbes[i]!.p99 })),
  );
  results.ratio({
    scenario: 'instructions',
    metric: `API p99 under worker load vs idle, worker on a second instance, pooled (${pooledOver(apartStats.requests)})`,
    value: apartStats.p99,
    unit: 'ms',
    baseline: idle.p99,
    jobs: `${JOBS.none}; instructions on a second`,
  });
  results.acrossRounds(
    {
      scenario: 'instructions',
      metric: 'CREATED → PENDING_PAYMENT per s, worker on a second instance',
      unit: '/s',
      jobs: 'instructions (no API load but the probe)',
    },
    aparts.map((a) => rows / a.seconds),
  );
  results.add({
    scenario: 'instructions',
    metric: 'service CPU per payout (worker + probe; median round)',
    value: middle.cpu.serverMsPerOp,
    unit: 'ms',
    jobs,
  });
  results.add({
    scenario: 'instructions',
    metric: 'PostgreSQL CPU per payout (median round)',
    value: middle.cpu.postgresMsPerOp,
    unit: 'ms',
    jobs,
  });
  results.add({
    scenario: 'instructions',
    metric: 'PostgreSQL CPU per payout, plain SQL',
    value: median(plains.map((p) => p.cpu.postgresMsPerOp)),
    unit: 'ms',
  });
  results.details.instructions = {
    rows,
    rounds,
    workerRate,
    plainRate,
    pooled: { idle, busy, reference: referenceStats, apart: apartStats },
    workers: workers.map((w) => ({
      seconds: w.seconds,
      rate: w.rate,
      finished: w.finished,
      probe: w.probe,
      cpu: w.cpu,
    })),
    plains,
    idleProbes,
    references,
    aparts: aparts.map((a) => ({ seconds: round(a.seconds, 1), finished: a.finished, probe: a.probe })),
  };

  // Round trips per generated instruction.
  await resetWork(pool);
  const items = plan.traceItems;
  await seedPayouts(pool, {
    tenantIds,
    count: items,
    status: 'CREATED',
    reference: REFERENCE,
    withTasks: true,
  });
  const trace = await traceWorkers(ctx, {
    ...WORKER_INSTANCE,
    items,
    done: async () => (await done(pool)) >= items,
  });
  results.add({
    scenario: 'round trips',
    metric: 'instruction generation: round trips / payout',
    value: trace.roundTripsPerOp,
    unit: '',
  });
  results.add({
    scenario: 'round trips',
    metric: 'instruction generation: transactions / payout',
    value: trace.transactionsPerOp,
    unit: '',
  });
  results.details.traceInstructions = { ...trace, trips: trace.trips.slice(0, 60) };
}

/**
 * The same writes as instruction generation, set-based: claim a batch of tasks, insert their
 * instructions on each tenant's shared address with a unique amount, move the payouts to
 * PENDING_PAYMENT with their prices, append the timeline rows and the payout.pending_payment
 * events. One transaction per batch; the rate is the physical ceiling the worker is compared to.
 * With `pace`, no faster than `pace` payouts per second (a batch, then a wait until it is due).
 */
async function plainInstructions(
  pool: pg.Pool,
  rows: number,
  pace?: number,
): Promise<{ rate: number; seconds: number }> {
  const now = new Date();
  const expiresAt = new Date(now.getTime() + 30 * 60_000);
  const payoutSnapshot = payoutSnapshots(now).PENDING_PAYMENT;
  const instructionSnapshot = instructionSnapshots(expiresAt).UNPAID;
  const started = performance.now();
  let moved = 0;
  for (let batch = 0; moved < rows && batch < rows; batch++) {
    const client = await pool.connect();
    try {
      await client.query('begin');
      const claimed = await client.query(
        `update tasks set done_at = now(), attempts = attempts + 1, updated_at = now()
          where id in (select id from tasks where kind = 'GENERATE_INSTRUCTION' and done_at is null and due_at <= now()
                        order by due_at limit $1 for update skip locked)
          returning subject_id`,
        [BATCH],
      );
      const ids = claimed.rows.map((r: { subject_id: string }) => r.subject_id);
      if (ids.length === 0) {
        await client.query('commit');
        break;
      }
      // Price: a fixed mid rate and spread; the amount is made unique per address by a sequence.
      await client.query(
        `insert into payment_instructions (id, tenant_id, payout_id, status, snapshot, rail, account_unique, provider_name,
            network, chain, expected_amount, expected_currency, expires_at, created_at, updated_at)
         select gen_random_uuid(), p.tenant_id, p.id, 'UNPAID', $2, 'CRYPTO', a.address, 'USDT on TRON', 'TRC20', 'TRON',
                round(p.destination_amount / 1550 * 1.015 + 1, 2) + ($4::int * $5::int + row_number() over (order by p.id)) / 1000000.0,
                'USDT', $3, now(), now()
           from payouts p join deposit_addresses a on a.tenant_id = p.tenant_id and a.network = 'TRON'
          where p.id = any($1) and p.status = 'CREATED'`,
        [ids, instructionSnapshot, expiresAt, batch, BATCH],
      );
      await client.query(
        `update payouts p set status = 'PENDING_PAYMENT', snapshot = $2, settlement_amount = i.expected_amount,
                exchange_rate = 1527.09, mid_market_rate = 1550, platform_fee_amount = 0.5, network_fee_amount = 1,
                total_fee_amount = 1.5, updated_at = now()
           from payment_instructions i where i.payout_id = p.id and p.id = any($1)`,
        [ids, payoutSnapshot],
      );
      await client.query(
        `insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code, reason_detail, created_at)
         select gen_random_uuid(), p.tenant_id, p.id, 'CREATED', 'PENDING_PAYMENT', 'SYSTEM', 'INSTRUCTION_GENERATED',
                jsonb_build_object('rate_source', 'plain', 'mid_market_rate', '1550', 'spread_percent', '1.5'), now()
           from payouts p where p.id = any($1::uuid[])`,
        [ids],
      );
      await client.query(
        `insert into outbox_events (id, tenant_id, payout_id, event_type, payload, created_at)
         select gen_random_uuid(), p.tenant_id, p.id, 'payout.pending_payment',
                jsonb_build_object('event_type', 'payout.pending_payment', 'status', p.status,
                                   'data', to_jsonb(p) - 'snapshot' || jsonb_build_object('payment_instruction', to_jsonb(i) - 'snapshot'))::text,
                now()
           from payouts p join payment_instructions i on i.payout_id = p.id where p.id = any($1)`,
        [ids],
      );
      await client.query('commit');
      moved += ids.length;
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
    if (pace) {
      const ahead = started + (moved / pace) * 1000 - performance.now();
      if (ahead > 0) await sleep(ahead);
    }
  }
  const seconds = (performance.now() - started) / 1000;
  return { rate: Math.round(moved / seconds), seconds: round(seconds, 2) };
}
