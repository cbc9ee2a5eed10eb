import { randomUUID } from 'node:crypto';
import { type PlanNode, planNodes } from '#src/db/plan.ts';
import { encodeCursor } from '#src/http/pagination.ts';
import { secretsFrom } from '#src/secrets.ts';
import type { BaselineChildOptions } from '../children/baseline.ts';
import { type Child, countLines, startChild } from '../lib/children.ts';
import { type BenchContext, startService } from '../lib/context.ts';
import { type CpuUse, cpuSample, cpuUse } from '../lib/cpu.ts';
import { pool, resetWork, scalar, settle } from '../lib/db.ts';
import { type LoadRequest, type LoadResult, percentile, runLoad } from '../lib/load.ts';
import { authenticate, createPayoutPlain, listPayoutsPlain, plainCursor } from '../lib/plain-sql.ts';
import { JOBS, median, middleBy, round } from '../lib/report.ts';
import { pairs, roundRobin, roundsOf } from '../lib/rounds.ts';
import { sameSql } from '../lib/same-sql.ts';
import { api, partitionSpan, payoutBody, seedPayouts, timelineMonthsBack } from '../lib/seed.ts';
import { traceRequests } from '../lib/trace.ts';

/**
 * The request paths: create (64 connections and 1), replay, and list (first and deep pages), each
 * against its baselines measured in the same run: the bare transactions through `pg` at the
 * service's pool size, and the Koa + `pg` server at the same connection count. Each baseline runs
 * in two forms: `plain`, the SQL as the issue describes it, written statement by statement; and
 * `same-sql`, the service's own statements without its framework. The targets are judged against
 * the stronger of the two, `same-sql`: the physical limit of what the service's SQL allows here.
 */

/** The baselines' pool: the service's own size (`DATABASE_POOL_SIZE`'s default). */
export const POOL_SIZE = 8;

type Variant = BaselineChildOptions['variant'];

/** The servers every round of an API scenario loads: the service (no jobs) and both Koa + pg baselines. */
interface Servers {
  service: Child;
  same: Child;
  plain: Child;
}

async function startServers(ctx: BenchContext): Promise<Servers> {
  const baseline = (variant: Variant) => {
    const options: BaselineChildOptions = { databaseUrl: ctx.db.url, poolSize: POOL_SIZE, variant };
    return startChild('baseline', options);
  };
  const [service, same, plain] = await Promise.all([
    startService(ctx),
    baseline('same-sql'),
    baseline('plain'),
  ]);
  return { service, same, plain };
}

/**
 * Before an API scenario's first round, each of its servers serves `next()` for the plan's
 * `jitWarmupS` at 64 connections, one after the other: a running service is warm, and V8 had not
 * finished compiling the service's hot paths within a run's own warm-up of a few seconds (its
 * first round then served about half the rate of the later ones, the baselines' smaller code
 * much less affected). Nothing is measured.
 */
async function warmServers(ctx: BenchContext, servers: [Child, () => LoadRequest][]): Promise<void> {
  if (ctx.plan.jitWarmupS <= 0) return;
  for (const [server, next] of servers) {
    await runLoad({
      url: server.url,
      connections: 64,
      durationS: ctx.plan.jitWarmupS,
      maxRequests: ctx.plan.maxRequests,
      next,
    });
  }
}

async function stopServers(servers: Servers): Promise<void> {
  await Promise.all([servers.service.stop(), servers.same.stop(), servers.plain.stop()]);
}

/** Rounds of one measurement summed up: median throughput and latencies; CPU of the round with the median throughput. */
function medianOf(runs: Measured[]): Measured & { rounds: Measured[] } {
  return {
    ...middleBy(runs, (r) => r.rps),
    rps: Math.round(median(runs.map((r) => r.rps))),
    p50: round(median(runs.map((r) => r.p50)), 2),
    p99: round(median(runs.map((r) => r.p99)), 2),
    rounds: runs,
  };
}

function createRequests(ctx: BenchContext): () => LoadRequest {
  let n = 0;
  return () => {
    n++;
    const tenant = ctx.tenants[n % ctx.tenants.length]!;
    return {
      method: 'POST',
      path: '/v1/payouts',
      headers: { 'x-api-key': tenant.apiKey, 'idempotency-key': randomUUID() },
      body: payoutBody(n),
    };
  };
}

type Measured = LoadResult & { cpu: CpuUse };

/** Measured requests per server process (its pid), for the access-log check. */
const served = new Map<number, number>();

/** Warm-up (not recorded), then the measured run, with the CPU each party spent on it. */
async function measure(
  ctx: BenchContext,
  server: Child,
  connections: number,
  seconds: number,
  next: () => LoadRequest,
): Promise<Measured> {
  const url = server.url;
  const maxRequests = ctx.plan.maxRequests;
  await runLoad({ url, connections, durationS: ctx.plan.warmupS, maxRequests, next });
  const before = cpuSample([server.pid], ctx.db.name);
  const result = await runLoad({ url, connections, durationS: seconds, maxRequests, next });
  const cpu = cpuUse(before, cpuSample([server.pid], ctx.db.name), result.requests);
  served.set(server.pid, (served.get(server.pid) ?? 0) + result.requests);
  const failures = Object.values(result.non2xx).reduce((a, b) => a + b, 0) + result.errors;
  if (failures > 0) {
    throw new Error(
      `load on ${url} had ${failures} failures: ${JSON.stringify(result.non2xx)}, ${result.errors} errors`,
    );
  }
  return { ...result, cpu };
}

/** Where the CPU of a measured run went, per request, next to the baseline's. */
function cpuRows(ctx: BenchContext, scenario: string, measured: Measured, baseline: Measured): void {
  // The whole server's figure counts every PostgreSQL process (other databases, background
  // writers) over the run, so the side serving fewer requests per second is charged more of them
  // per request; the bench database's own sessions are the work its statements cost.
  const rows: [string, 'serverMsPerOp' | 'postgresMsPerOp' | 'sessionsMsPerOp' | 'loadMsPerOp'][] = [
    ['server CPU per request', 'serverMsPerOp'],
    ['PostgreSQL CPU per request', 'postgresMsPerOp'],
    ["PostgreSQL CPU per request, the bench database's sessions", 'sessionsMsPerOp'],
    ['load generator CPU per request', 'loadMsPerOp'],
  ];
  for (const [metric, key] of rows) {
    if (measured.cpu[key] === undefined) continue;
    ctx.results.add({
      scenario,
      metric: `${metric} (median round)`,
      value: measured.cpu[key],
      unit: 'ms',
      baseline: baseline.cpu[key],
      jobs: JOBS.none,
    });
  }
  ctx.results.add({
    scenario,
    metric: 'machine busy (both cores)',
    value: Math.round(measured.cpu.machineBusy * 100),
    unit: '%',
    baseline: Math.round(baseline.cpu.machineBusy * 100),
  });
}

/** `loops` concurrent callers of `work` for `seconds` (bounded by count too): ops/s and latencies. */
async function bareLoop(
  ctx: BenchContext,
  loops: number,
  seconds: number,
  work: (i: number) => Promise<unknown>,
): Promise<{ rps: number; p50: number; p99: number; ops: number }> {
  const latencies: number[] = [];
  const deadline = performance.now() + seconds * 1000;
  let n = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (performance.now() < deadline && n < ctx.plan.maxRequests) {
        const i = n++;
        const t = performance.now();
        await work(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  return {
    rps: Math.round(latencies.length / elapsed),
    p50: round(percentile(latencies, 50), 2),
    p99: round(percentile(latencies, 99), 2),
    ops: latencies.length,
  };
}

export async function createScenarios(ctx: BenchContext): Promise<void> {
  const { results, plan } = ctx;
  await resetWork(ctx.pool);

  // Every contestant in every round, round-robin: the service, the Koa + pg servers of both
  // forms at 64 connections and at 1, and the bare transactions (no HTTP, no framework) through a
  // pool of the service's size. The tables are not emptied between runs: every run adds payouts
  // and keys, and the rotation spreads that growth over every side. (Runs that each began on
  // empty tables measured the generic plans prepared statements had made for empty tables, kept
  // while the tables filled: sequential scans of thousands of keys.)
  const barePool = pool(ctx.db.url, POOL_SIZE);
  const same = sameSql(barePool);
  const bareCreate = async (i: number) => {
    const tenant = ctx.tenants[i % ctx.tenants.length]!;
    const principal = await authenticate(barePool, tenant.apiKey);
    await createPayoutPlain(barePool, principal, randomUUID(), payoutBody(i));
  };
  const bareSameCreate = (i: number) =>
    same.create(ctx.tenants[i % ctx.tenants.length]!.apiKey, randomUUID(), payoutBody(i));
  const bareRun = async (work: (i: number) => Promise<unknown>) => {
    await bareLoop(ctx, POOL_SIZE, plan.warmupS, work);
    await settle(ctx.pool);
    return bareLoop(ctx, POOL_SIZE, plan.bareS, work);
  };
  const createRuns = async (server: Child) => {
    await settle(ctx.pool);
    return {
      at64: await measure(ctx, server, 64, plan.createS, createRequests(ctx)),
      at1: await measure(ctx, server, 1, plan.create1S, createRequests(ctx)),
    };
  };

  let peakRss = 0;
  let hwm = 0;
  const servers = await startServers(ctx);
  let rounds: Awaited<ReturnType<typeof createRounds>>;
  const createRounds = () =>
    roundRobin(ctx, 'create', roundsOf(plan), {
      service: () => createRuns(servers.service),
      'Koa + pg (same SQL)': () => createRuns(servers.same),
      'Koa + pg (plain)': () => createRuns(servers.plain),
      'bare pg (same SQL)': () => bareRun(bareSameCreate),
      'bare pg (plain)': () => bareRun(bareCreate),
    });
  let replayed: Measured;
  try {
    ctx.log('create: servers warm up');
    await warmServers(ctx, [
      [servers.service, createRequests(ctx)],
      [servers.same, createRequests(ctx)],
      [servers.plain, createRequests(ctx)],
    ]);
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, servers.service.memory().rssMb);
    }, 200);
    try {
      rounds = await createRounds();
      hwm = servers.service.memory().peakMb;
    } finally {
      clearInterval(sampler);
    }
    ctx.log('replay');
    replayed = await replay(ctx, servers.service);
  } finally {
    await barePool.end();
    await stopServers(servers);
  }
  const service = rounds.service;
  const koaSame = rounds['Koa + pg (same SQL)'];
  const koaPlain = rounds['Koa + pg (plain)'];
  const bareSame = rounds['bare pg (same SQL)'];
  const barePlain = rounds['bare pg (plain)'];
  const at64 = (r: { at64: Measured }) => r.at64.rps;
  const p50at1 = (r: { at1: Measured }) => r.at1.p50;
  const jobs = JOBS.none;

  for (const [label, runs] of [
    ['bare create tx/s (pg, 8 clients, same SQL)', bareSame],
    ['bare create tx/s (pg, 8 clients, plain)', barePlain],
  ] as const) {
    results.acrossRounds(
      { scenario: 'baseline', metric: label, unit: 'tx/s' },
      runs.map((r) => r.rps),
    );
  }
  for (const [label, runs] of [
    ['same SQL', koaSame],
    ['plain', koaPlain],
  ] as const) {
    results.acrossRounds(
      { scenario: 'baseline', metric: `Koa+pg create req/s (64 conn, ${label})`, unit: 'req/s' },
      runs.map(at64),
    );
    results.acrossRounds(
      { scenario: 'baseline', metric: `Koa+pg create p99 (64 conn, ${label})`, unit: 'ms' },
      runs.map((r) => r.at64.p99),
    );
    results.acrossRounds(
      { scenario: 'baseline', metric: `Koa+pg create p50 (1 conn, ${label})`, unit: 'ms' },
      runs.map(p50at1),
    );
  }

  results.perRound(
    {
      scenario: 'create',
      metric: 'req/s (64 conn) vs Koa+pg (same SQL)',
      unit: 'req/s',
      jobs,
      target: '≥ 0.9',
    },
    pairs(service, koaSame, at64),
    { min: 0.9 },
  );
  results.perRound(
    { scenario: 'create', metric: 'req/s (64 conn) vs Koa+pg (plain)', unit: 'req/s', jobs },
    pairs(service, koaPlain, at64),
  );
  results.perRound(
    { scenario: 'create', metric: 'req/s (64 conn) vs bare pg tx/s (same SQL)', unit: 'req/s', jobs },
    service.map((r, i) => ({ value: r.at64.rps, baseline: bareSame[i]!.rps })),
  );
  results.acrossRounds(
    { scenario: 'create', metric: 'p50 (64 conn)', unit: 'ms', jobs },
    service.map((r) => r.at64.p50),
  );
  results.acrossRounds(
    { scenario: 'create', metric: 'p99 (64 conn)', unit: 'ms', jobs, target: '≤ 100 ms' },
    service.map((r) => r.at64.p99),
    { max: 100 },
  );
  results.perRound(
    { scenario: 'create-1', metric: 'p50 (1 conn) vs Koa+pg (same SQL)', unit: 'ms', jobs, target: '≤ 1.5' },
    pairs(service, koaSame, p50at1),
    { max: 1.5 },
  );
  results.perRound(
    { scenario: 'create-1', metric: 'req/s (1 conn) vs Koa+pg (same SQL)', unit: 'req/s', jobs },
    pairs(service, koaSame, (r) => r.at1.rps),
  );
  replayRows(ctx, replayed, medianOf(service.map((r) => r.at64)));
  cpuRows(ctx, 'create', medianOf(service.map((r) => r.at64)), medianOf(koaSame.map((r) => r.at64)));
  results.add({
    scenario: 'memory',
    metric: 'peak RSS during create (sampled)',
    value: peakRss,
    unit: 'MiB',
    jobs,
  });
  results.add({ scenario: 'memory', metric: 'peak RSS since start (VmHWM)', value: hwm, unit: 'MiB', jobs });
  await accessLogCheck(ctx, servers.service, 'create');
  results.details.create = { rounds, replay: replayed };

  ctx.log('create: round trips');
  await traceCreate(ctx);
}

/** The same keys again: each must come back from the stored response, creating nothing. */
async function replay(ctx: BenchContext, service: Child): Promise<Measured> {
  const stored: { tenant: BenchContext['tenants'][number]; key: string; body: string }[] = [];
  for (const [i, tenant] of ctx.tenants.entries()) {
    const key = randomUUID();
    const body = payoutBody(1_000_000 + i);
    await send(service.url, tenant.apiKey, key, body);
    stored.push({ tenant, key, body });
  }
  const probe = stored[0]!;
  const again = await send(service.url, probe.tenant.apiKey, probe.key, probe.body);
  ctx.results.check(
    'replay answers from the stored response',
    again.headers.get('idempotent-replayed') === 'true' && again.status === 201,
    `status ${again.status}, Idempotent-Replayed: ${again.headers.get('idempotent-replayed')}`,
  );
  const before = await scalar(ctx.pool, 'select count(*) from payouts');
  let n = 0;
  const result = await measure(ctx, service, 64, ctx.plan.replayS, () => {
    const s = stored[n++ % stored.length]!;
    return {
      method: 'POST',
      path: '/v1/payouts',
      headers: { 'x-api-key': s.tenant.apiKey, 'idempotency-key': s.key },
      body: s.body,
    };
  });
  const after = await scalar(ctx.pool, 'select count(*) from payouts');
  ctx.results.check(
    'replay creates nothing',
    after === before,
    `${result.requests} replays; payouts ${before} → ${after}`,
  );
  return result;
}

/** The replay, measured once after the rounds, against the median round of the create. */
function replayRows(ctx: BenchContext, result: Measured, create64: Measured): void {
  ctx.results.ratio(
    {
      scenario: 'replay',
      metric: 'req/s (64 conn) vs create (median round)',
      value: result.rps,
      unit: 'req/s',
      baseline: create64.rps,
      jobs: JOBS.none,
      target: '> 1',
    },
    { min: 1.0001 },
  );
  ctx.results.add({
    scenario: 'replay',
    metric: 'p99 (64 conn)',
    value: result.p99,
    unit: 'ms',
    baseline: create64.p99,
    jobs: JOBS.none,
  });
}

/**
 * The service runs at the log level it ships with (`info`: one access line per request, written
 * to a file as a process manager would take its stdout): every measured request must have its
 * line, or the figures measured a quieter service than the one deployed.
 */
async function accessLogCheck(ctx: BenchContext, service: Child, scenario: string): Promise<void> {
  const lines = service.logFile ? await countLines(service.logFile, '"msg":"request"') : 0;
  const measured = served.get(service.pid) ?? 0;
  ctx.results.check(
    `${scenario}: the service logged every request at info`,
    lines > 0 && lines >= measured,
    `${lines.toLocaleString('en-US')} access lines for ${measured.toLocaleString('en-US')} measured requests`,
  );
}

function send(url: string, apiKey: string, key: string, body: string): Promise<Response> {
  return fetch(`${url}/v1/payouts`, {
    method: 'POST',
    headers: { 'x-api-key': apiKey, 'idempotency-key': key, 'content-type': 'application/json' },
    body,
  }).then(async (res) => {
    if (!res.ok) throw new Error(`create: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
    return res;
  });
}

async function traceCreate(ctx: BenchContext): Promise<void> {
  const items = ctx.plan.traceItems;
  const keys: { apiKey: string; key: string; body: string }[] = [];
  const { creates, replays } = await traceRequests(ctx, {
    creates: async (url) => {
      for (let i = 0; i < items; i++) {
        const tenant = ctx.tenants[i % ctx.tenants.length]!;
        const entry = { apiKey: tenant.apiKey, key: randomUUID(), body: payoutBody(2_000_000 + i) };
        await send(url, entry.apiKey, entry.key, entry.body);
        keys.push(entry);
      }
      return items;
    },
    replays: async (url) => {
      for (const k of keys) await send(url, k.apiKey, k.key, k.body);
      return keys.length;
    },
  });
  const row = (name: string, t: typeof creates) => {
    ctx.results.add({
      scenario: 'round trips',
      metric: `${name}: round trips / request`,
      value: t.roundTripsPerOp,
      unit: '',
    });
    ctx.results.add({
      scenario: 'round trips',
      metric: `${name}: transactions / request`,
      value: t.transactionsPerOp,
      unit: '',
    });
  };
  row('create', creates);
  row('replay', replays);
  ctx.results.details.traceCreate = { ...creates, trips: creates.trips.slice(0, 40) };
  ctx.results.details.traceReplay = { ...replays, trips: replays.trips.slice(0, 10) };
}

/** How far back the list's payouts and their timeline rows go. */
const LIST_SPREAD_DAYS = 90;

/** `GET /v1/payouts?limit=20` over one tenant with `listRows` payouts: first page and deep pages. */
export async function listScenarios(ctx: BenchContext): Promise<void> {
  const { plan, results } = ctx;
  const db = ctx.pool;
  await resetWork(db);
  // The last three months, each in its own partition of the timeline, as in production.
  const months = await timelineMonthsBack(db, LIST_SPREAD_DAYS);
  if (!months)
    ctx.log('list: the timeline’s partition from minvalue holds rows: its partitions are left as they are');
  ctx.log(`list: seeding ${plan.listRows.toLocaleString('en-US')} payouts`);
  await seedPayouts(db, {
    tenantIds: [ctx.listTenant.id],
    count: plan.listRows,
    status: 'CREATED',
    reference: 'list',
    spreadDays: LIST_SPREAD_DAYS,
  });
  const span = await partitionSpan(db, 'payout_status_timeline', 'tenant_id = $1', [ctx.listTenant.id]);
  ctx.log(
    `list: the seeded timeline rows (${LIST_SPREAD_DAYS} days) span ${span.spanned} of payout_status_timeline's ${span.attached} partitions, ${span.inDefault} in the default one`,
  );
  results.details.listPartitions = span;
  results.add({
    scenario: 'list',
    metric: `seeded timeline partitions spanned (of ${span.attached} attached)`,
    value: span.spanned,
    unit: '',
  });

  // One payout in a hundred FAILED, for the filtered pages: a status that is rare, as it is in
  // production, is the filter an index must serve (a common one is cheap on any index).
  await db.query(
    `update payouts set status = 'FAILED' where tenant_id = $1 and merchant_reference like '%00'`,
    [ctx.listTenant.id],
  );
  await db.query('analyze payouts');

  // Deep positions between the middle and the end of the list.
  const positions: { createdAt: Date; id: string }[] = [];
  for (let k = 0; k < 10; k++) {
    const offset = Math.floor(plan.listRows * (0.5 + 0.049 * k));
    const { rows } = await db.query(
      'select created_at, id from payouts where tenant_id = $1 order by created_at desc, id desc offset $2 limit 1',
      [ctx.listTenant.id, offset],
    );
    const row = rows[0] as { created_at: Date; id: string };
    positions.push({ createdAt: row.created_at, id: row.id });
  }
  const cursorKey = secretsFrom({
    encryptionKey: Buffer.from(ctx.secrets.encryptionKey, 'base64'),
    adminToken: ctx.secrets.adminToken,
    callbackSecret: ctx.secrets.callbackSecret,
  }).cursorKey;
  const serviceCursors = positions.map((p) =>
    encodeURIComponent(encodeCursor(cursorKey, { l: 'payouts', c: p.createdAt.toISOString(), i: p.id })),
  );
  const plainCursors = positions.map((p) => plainCursor(p.createdAt, p.id));
  const apiKey = ctx.listTenant.apiKey;
  const pages = (cursors: string[] | null) => {
    let n = 0;
    return (): LoadRequest => ({
      method: 'GET',
      path: cursors ? `/v1/payouts?limit=20&cursor=${cursors[n++ % cursors.length]}` : '/v1/payouts?limit=20',
      headers: { 'x-api-key': apiKey },
    });
  };

  // Every contestant in every round, round-robin, as for the create.
  const barePool = pool(ctx.db.url, POOL_SIZE);
  const same = sameSql(barePool);
  const principal = await authenticate(barePool, apiKey);
  const barePlain = async () => ({
    first: await bareLoop(ctx, POOL_SIZE, plan.bareS, async () => {
      await authenticate(barePool, apiKey);
      await listPayoutsPlain(barePool, principal, 20, undefined);
    }),
    deep: await bareLoop(ctx, POOL_SIZE, plan.bareS, async (i) => {
      await authenticate(barePool, apiKey);
      await listPayoutsPlain(barePool, principal, 20, plainCursors[i % plainCursors.length]);
    }),
  });
  const bareSame = async () => ({
    first: await bareLoop(ctx, POOL_SIZE, plan.bareS, () => same.list(apiKey, 20, undefined)),
    deep: await bareLoop(ctx, POOL_SIZE, plan.bareS, (i) =>
      same.list(apiKey, 20, plainCursors[i % plainCursors.length]),
    ),
  });
  const listRuns = async (server: Child, cursors: string[]) => ({
    first: await measure(ctx, server, 64, plan.listS, pages(null)),
    deep: await measure(ctx, server, 64, plan.listS, pages(cursors)),
  });
  const servers = await startServers(ctx);
  let rounds: Awaited<ReturnType<typeof listRounds>>;
  const listRounds = () =>
    roundRobin(ctx, 'list', roundsOf(plan), {
      service: () => listRuns(servers.service, serviceCursors),
      'Koa + pg (same SQL)': () => listRuns(servers.same, plainCursors),
      'Koa + pg (plain)': () => listRuns(servers.plain, plainCursors),
      'bare pg (same SQL)': bareSame,
      'bare pg (plain)': barePlain,
    });
  try {
    ctx.log('list: servers warm up');
    // Both pages, in turns, for each server.
    const both = (cursors: string[]) => {
      const first = pages(null);
      const deep = pages(cursors);
      let n = 0;
      return () => (n++ % 2 === 0 ? first() : deep());
    };
    await warmServers(ctx, [
      [servers.service, both(serviceCursors)],
      [servers.same, both(plainCursors)],
      [servers.plain, both(plainCursors)],
    ]);
    rounds = await listRounds();
    ctx.log('list: cost ladder');
    await ladder(ctx, servers.service);
    await accessLogCheck(ctx, servers.service, 'list');
  } finally {
    await barePool.end();
    await stopServers(servers);
  }
  const service = rounds.service;
  const koaSame = rounds['Koa + pg (same SQL)'];
  const koaPlain = rounds['Koa + pg (plain)'];
  const jobs = JOBS.none;
  const baselineRows: [string, { rps: number }[]][] = [
    ['bare list first page/s (pg, same SQL)', rounds['bare pg (same SQL)'].map((r) => r.first)],
    ['bare list deep page/s (pg, same SQL)', rounds['bare pg (same SQL)'].map((r) => r.deep)],
    ['bare list first page/s (pg, plain)', rounds['bare pg (plain)'].map((r) => r.first)],
    ['bare list deep page/s (pg, plain)', rounds['bare pg (plain)'].map((r) => r.deep)],
    ['Koa+pg list first page/s (64 conn, same SQL)', koaSame.map((r) => r.first)],
    ['Koa+pg list deep page/s (64 conn, same SQL)', koaSame.map((r) => r.deep)],
    ['Koa+pg list first page/s (64 conn, plain)', koaPlain.map((r) => r.first)],
    ['Koa+pg list deep page/s (64 conn, plain)', koaPlain.map((r) => r.deep)],
  ];
  for (const [metric, runs] of baselineRows)
    results.acrossRounds(
      { scenario: 'baseline', metric, unit: 'req/s' },
      runs.map((r) => r.rps),
    );
  for (const page of ['first', 'deep'] as const) {
    results.perRound(
      {
        scenario: 'list',
        metric: `${page} page req/s vs Koa+pg (same SQL)`,
        unit: 'req/s',
        jobs,
        target: '≥ 0.9',
      },
      pairs(service, koaSame, (r) => r[page].rps),
      { min: 0.9 },
    );
    results.perRound(
      { scenario: 'list', metric: `${page} page req/s vs Koa+pg (plain)`, unit: 'req/s', jobs },
      pairs(service, koaPlain, (r) => r[page].rps),
    );
    results.perRound(
      { scenario: 'list', metric: `${page} page p99 (64 conn) vs Koa+pg (same SQL)`, unit: 'ms', jobs },
      pairs(service, koaSame, (r) => r[page].p99),
    );
  }
  cpuRows(ctx, 'list', medianOf(service.map((r) => r.first)), medianOf(koaSame.map((r) => r.first)));
  results.details.list = { rounds };

  ctx.log('list: round trips and query plans');
  await traceList(ctx, serviceCursors);
}

/**
 * The service's CPU per request on a ladder of routes that add one layer at a time: the HTTP
 * stack alone, then authentication, tRPC and one query, then a page of one payout, then twenty,
 * then twenty of a rare status (what a filter costs). The steps say what each layer costs,
 * independently of round trips.
 */
async function ladder(ctx: BenchContext, service: Child): Promise<void> {
  const apiKey = ctx.listTenant.apiKey;
  const steps: [string, string, boolean][] = [
    ['GET /health (Koa and middleware, no database)', '/health', false],
    ['GET /v1/webhooks/config (+ auth, tRPC, an ORM query)', '/v1/webhooks/config', true],
    ['GET /v1/payouts?limit=1 (+ the page query, 1 payout)', '/v1/payouts?limit=1', true],
    ['GET /v1/payouts?limit=20 (the same, 20 payouts)', '/v1/payouts?limit=20', true],
    [
      'GET /v1/payouts?limit=20&status=FAILED (20 of a rare status)',
      '/v1/payouts?limit=20&status=FAILED',
      true,
    ],
  ];
  const seconds = Math.max(2, Math.round(ctx.plan.listS / 2));
  const out: Record<string, Measured> = {};
  for (const [name, path, authed] of steps) {
    const run = await measure(ctx, service, 64, seconds, () => ({
      method: 'GET',
      path,
      headers: authed ? { 'x-api-key': apiKey } : ({} as Record<string, string>),
    }));
    out[name] = run;
    ctx.results.add({
      scenario: 'cost ladder',
      metric: `${name}: service CPU per request`,
      value: run.cpu.serverMsPerOp,
      unit: 'ms',
    });
    ctx.results.add({
      scenario: 'cost ladder',
      metric: `${name}: req/s (64 conn)`,
      value: run.rps,
      unit: 'req/s',
    });
  }
  ctx.results.details.ladder = out;
}

async function traceList(ctx: BenchContext, serviceCursors: string[]): Promise<void> {
  const items = ctx.plan.traceItems;
  // The filtered pages: a rare status, one merchant_reference, a tenth of the list in the middle
  // of its creation times.
  const { rows } = await ctx.pool.query(
    'select min(created_at) as oldest, max(created_at) as newest from payouts where tenant_id = $1',
    [ctx.listTenant.id],
  );
  const { oldest, newest } = rows[0] as { oldest: Date; newest: Date };
  const span = newest.getTime() - oldest.getTime();
  const window = [0.4, 0.5].map((f) =>
    encodeURIComponent(new Date(oldest.getTime() + span * f).toISOString()),
  );
  const lists: [string, string][] = [
    ['list first page', '/v1/payouts?limit=20'],
    ['list deep page', `/v1/payouts?limit=20&cursor=${serviceCursors.at(-1)}`],
    ['list filtered by status', '/v1/payouts?limit=20&status=FAILED'],
    [
      'list filtered by merchant_reference',
      `/v1/payouts?limit=20&merchant_reference=list-${Math.floor(ctx.plan.listRows / 3)}`,
    ],
    [
      'list filtered by creation window',
      `/v1/payouts?limit=20&created_after=${window[0]}&created_before=${window[1]}`,
    ],
  ];
  const pages = async (url: string, path: string) => {
    for (let i = 0; i < items; i++) await api(url, ctx.listTenant, 'GET', path);
    return items;
  };
  const traced = await traceRequests(
    ctx,
    Object.fromEntries(lists.map(([name, path]) => [name, (url: string) => pages(url, path)])),
  );
  for (const [name] of lists) {
    const t = traced[name]!;
    ctx.results.add({
      scenario: 'round trips',
      metric: `${name}: round trips / request`,
      value: t.roundTripsPerOp,
      unit: '',
    });
    // The page query exactly as the service sent it, with the parameters it bound, explained on
    // the seeded table twice: with those values (a custom plan) and as a prepared statement's
    // generic plan, which PostgreSQL may settle on after a few executions.
    const trip = t.trips.find((each) => /from "?payouts"? p?\s/.test(each.sql));
    if (!trip) throw new Error(`no payouts query traced for ${name}`);
    const client = await ctx.pool.connect();
    let plans: { kind: string; explained: { Plan: PlanNode; 'Execution Time': number } }[];
    try {
      const explain = async (text: string, params: unknown[]) => {
        const { rows } = await client.query(text, params);
        return (rows[0] as { 'QUERY PLAN': { Plan: PlanNode; 'Execution Time': number }[] })[
          'QUERY PLAN'
        ][0]!;
      };
      const custom = await explain(`explain (analyze, buffers, format json) ${trip.sql}`, trip.params);
      await client.query('set plan_cache_mode = force_generic_plan');
      await client.query(`prepare bench_page as ${trip.sql}`);
      // EXECUTE takes its arguments as literals (a Bind's parameters do not reach them).
      const args = trip.params.map((p) => (p === null ? 'null' : client.escapeLiteral(p))).join(', ');
      const generic = await explain(
        `explain (analyze, buffers, format json) execute bench_page${args ? `(${args})` : ''}`,
        [],
      );
      plans = [
        { kind: 'custom plan', explained: custom },
        { kind: 'generic plan', explained: generic },
      ];
    } finally {
      await client.query('deallocate all').catch(() => undefined);
      await client.query('reset plan_cache_mode').catch(() => undefined);
      client.release();
    }
    for (const { kind, explained } of plans) {
      const all = planNodes(explained.Plan);
      const scan = all.find((n) => n['Relation Name'] === 'payouts');
      const sorted = planNodes(explained.Plan, { subplans: false }).some((n) => /Sort/.test(n['Node Type']));
      const indexScan = !!scan && /Index/.test(scan['Node Type']);
      ctx.results.check(
        `${name}: ${kind} is an index scan with no sort`,
        indexScan && !sorted,
        `${scan?.['Node Type']} ${scan?.['Scan Direction'] ?? ''} using ${scan?.['Index Name']}; ` +
          `rows removed by filter ${scan?.['Rows Removed by Filter'] ?? 0}; ${round(explained['Execution Time'], 2)} ms`,
      );
    }
    const explained = plans[1]!.explained;
    ctx.results.add({
      scenario: 'list',
      metric: `${name}: page query execution`,
      value: round(explained['Execution Time'], 2),
      unit: 'ms',
    });
    ctx.results.details[`plan ${name}`] = { sql: trip.sql, params: trip.params, plans };
  }
}
