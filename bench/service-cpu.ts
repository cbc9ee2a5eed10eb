/**
 * The service's own CPU per request on the API's hot paths, the service alone (no baselines, no
 * ratios): a create, and the list's first page of twenty and a deep one. CPU time per request (from /proc, every
 * thread of the service process) moves far less with the machine's load than throughput does, so
 * a change to the hot path can be judged on a shared machine. Usage:
 *   npm exec -- node bench/service-cpu.ts [--requests=4000] [--rounds=3] [--connections=16]
 *     [--only=create,list first,list deep] [--profile] [--against=<another checkout>] [--same-sql]
 *     [--service-flag=<node flag>]... [--service-config=<NAME>=<value>]...
 * Each round loads one instance with `--requests` requests per path after a warm-up of a quarter
 * of that, less what the instance spends idle (sampled for 3 s before); the figure is the median
 * of the rounds. --profile writes a CPU profile of each instance (and of the same-SQL baseline's)
 * into bench/results/profiles/<date>/ (summarise it with bench/profile-summary.ts). --against
 * takes another checkout of the project (with its dependencies), the code before a change: each
 * round then runs an instance of both, in turns, on the same database, so that both meet the same
 * neighbours on a shared machine, and the figures of both are printed side by side. --same-sql
 * adds the bench's same-SQL baseline (Koa + `pg` running the service's own statements,
 * `lib/same-sql.ts`) as a turn of each round, on the create and the first page (its cursor is
 * not the service's): what the service's framework costs per request, side by side.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeCursor } from '#src/http/pagination.ts';
import { secretsFrom } from '#src/secrets.ts';
import { type Child, startChild, stopAllChildren } from './lib/children.ts';
import {
  type BenchContext,
  newSecrets,
  planFor,
  serviceConfigOf,
  serviceFlagsOf,
  startService,
} from './lib/context.ts';
import { cpuSample } from './lib/cpu.ts';
import { createBenchDatabase, pool } from './lib/db.ts';
import { type LoadRequest, runLoad } from './lib/load.ts';
import { Results } from './lib/report.ts';
import { migrateAndCreateTenants, payoutBody, seedPayouts, setRefundDestinations } from './lib/seed.ts';
import { POOL_SIZE } from './scenarios/api.ts';

const args = process.argv.slice(2);
const option = (name: string, fallback: number) =>
  Number(args.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const requests = option('requests', 4000);
const rounds = option('rounds', 3);
const connections = option('connections', 16);
const profile = args.includes('--profile');
/** The label of the same-SQL baseline's turn (`--same-sql`). */
const SAME_SQL = ' (same SQL)';
/** How long the idle CPU of an instance is sampled before each measured run. */
const IDLE_MS = 3000;
const against = args.find((a) => a.startsWith('--against='))?.slice('--against='.length);
const only = args.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const sameSqlTurn = args.includes('--same-sql');

const db = await createBenchDatabase();
const benchPool = pool(db.url, 4);
const logDir = mkdtempSync(join(tmpdir(), `${db.name}-logs-`));
const profileDir = fileURLToPath(
  new URL(`./results/profiles/${new Date().toISOString().slice(0, 10)}/`, import.meta.url),
);
if (profile) mkdirSync(profileDir, { recursive: true });
process.stderr.write(`database ${db.name}\n`);
const cleanUp = async () => {
  await stopAllChildren();
  await benchPool.end().catch(() => undefined);
  await db.drop();
  rmSync(logDir, { recursive: true, force: true });
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void cleanUp().finally(() => process.exit(130)));
}

try {
  const tenants = await migrateAndCreateTenants(db.url, 17);
  const listTenant = tenants[16]!;
  const secrets = newSecrets();
  const sandbox = await startChild('sandbox', { callbackSecret: secrets.callbackSecret });
  const ctx: BenchContext = {
    plan: planFor(true),
    db,
    pool: benchPool,
    secrets,
    sandboxUrl: sandbox.url,
    tenants: tenants.slice(0, 16),
    listTenant,
    webhookTenants: [],
    results: new Results(),
    serviceConfig: serviceConfigOf(args),
    serviceExecArgv: [
      ...(profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : []),
      ...serviceFlagsOf(args),
    ],
    logDir,
    log: (message) => process.stderr.write(`${message}\n`),
  };
  const setup = await startService(ctx, { execArgv: [] });
  await setRefundDestinations(setup.url, tenants);
  await setup.stop();
  await seedPayouts(benchPool, {
    tenantIds: [listTenant.id],
    count: 10_000,
    status: 'CREATED',
    reference: 'list',
  });
  await benchPool.query('analyze payouts');
  // Deep pages: cursors between the middle and the end of the list, as the bench's list takes.
  const cursorKey = secretsFrom({
    encryptionKey: Buffer.from(secrets.encryptionKey, 'base64'),
    adminToken: secrets.adminToken,
    callbackSecret: secrets.callbackSecret,
  }).cursorKey;
  const { rows: deepRows } = await benchPool.query<{ created_at: Date; id: string }>(
    `select created_at, id from payouts where tenant_id = $1
      order by created_at desc, id desc offset 5000 limit 5000`,
    [listTenant.id],
  );
  const cursors = deepRows
    .filter((_, i) => i % 500 === 0)
    .map((r) =>
      encodeURIComponent(encodeCursor(cursorKey, { l: 'payouts', c: r.created_at.toISOString(), i: r.id })),
    );

  let n = 0;
  const paths: Record<string, () => LoadRequest> = {
    create: () => {
      n++;
      const tenant = ctx.tenants[n % ctx.tenants.length]!;
      return {
        method: 'POST',
        path: '/v1/payouts',
        headers: { 'x-api-key': tenant.apiKey, 'idempotency-key': randomUUID() },
        body: payoutBody(n),
      };
    },
    'list first page': () => ({
      method: 'GET',
      path: '/v1/payouts?limit=20',
      headers: { 'x-api-key': listTenant.apiKey },
    }),
    'list deep page': () => ({
      method: 'GET',
      path: `/v1/payouts?limit=20&cursor=${cursors[n++ % cursors.length]}`,
      headers: { 'x-api-key': listTenant.apiKey },
    }),
  };
  for (const name of Object.keys(paths))
    if (only && !only.split(',').some((o) => name.startsWith(o))) delete paths[name];
  const figures: Record<string, number[]> = {};
  const measure = async (label: string, service: Child) => {
    for (const [name, next] of Object.entries(paths)) {
      if (label === SAME_SQL && name === 'list deep page') continue;
      const load = (count: number) =>
        runLoad({ url: service.url, connections, durationS: 600, maxRequests: count, next });
      await load(Math.ceil(requests / 4));
      // What the instance spends doing nothing (timers, its pool, the collector), taken off the
      // run's CPU: on a starved machine a run can take ten times as long, and would charge ten
      // times as much of it to each request.
      const idleFrom = cpuSample([service.pid]).serverMs;
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      const idleMsPerS = ((cpuSample([service.pid]).serverMs - idleFrom) / IDLE_MS) * 1000;
      const before = cpuSample([service.pid]).serverMs;
      const result = await load(requests);
      const ms = cpuSample([service.pid]).serverMs - before - idleMsPerS * result.seconds;
      const failures = Object.values(result.non2xx).reduce((a, b) => a + b, 0) + result.errors;
      if (failures > 0) throw new Error(`${name}: ${failures} failures ${JSON.stringify(result.non2xx)}`);
      const key = `${name}${label}`;
      figures[key] = [...(figures[key] ?? []), ms / result.requests];
      process.stderr.write(
        `${name}${label}: ${(ms / result.requests).toFixed(3)} ms CPU per request ` +
          `(${result.requests} requests, ${Math.round(result.rps)} req/s; idle ${idleMsPerS.toFixed(1)} ms/s taken off)\n`,
      );
    }
  };
  for (let round = 0; round < rounds; round++) {
    process.stderr.write(`round ${round + 1} of ${rounds}\n`);
    const turns: [string, () => Promise<Child>][] = [[' (this checkout)', () => startService(ctx)]];
    if (against)
      turns.push([
        ' (--against)',
        () => startService(ctx, { file: join(against!, 'bench/children/service.ts') }),
      ]);
    if (sameSqlTurn)
      turns.push([
        SAME_SQL,
        () =>
          startChild(
            'baseline',
            { databaseUrl: db.url, poolSize: POOL_SIZE, variant: 'same-sql' },
            { execArgv: profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [] },
          ),
      ]);
    // The order turns each round, so that neither side always runs first.
    if (round % 2 === 1) turns.reverse();
    for (const [label, start] of turns) {
      const service = await start();
      try {
        await measure(against || sameSqlTurn ? label : '', service);
      } finally {
        await service.stop();
      }
    }
  }
  const loadAverage = os.loadavg()[0]!.toFixed(1);
  const median = (values: number[]) => {
    const sorted = [...values].sort((a, b) => a - b);
    const middle = sorted.length / 2;
    return Number.isInteger(middle)
      ? (sorted[middle - 1]! + sorted[middle]!) / 2
      : sorted[Math.floor(middle)]!;
  };
  for (const [name, values] of Object.entries(figures)) {
    process.stdout.write(
      `${name}: ${median(values).toFixed(3)} ms service CPU per request ` +
        `(median of ${rounds}, least ${Math.min(...values).toFixed(3)}; rounds ${values.map((v) => v.toFixed(3)).join(', ')}; ` +
        `${connections} connections, ${requests} requests a round; load average ${loadAverage} at the end)\n`,
    );
  }
  // Both sides of a round ran one after the other: their ratio is steadier than either figure.
  const compare = (other: string, name: string) => {
    const mine = figures[`${name} (this checkout)`] ?? [];
    const theirs = figures[`${name}${other}`] ?? [];
    if (mine.length === 0 || theirs.length === 0) return;
    const ratios = mine.map((v, i) => v / theirs[i]!);
    process.stdout.write(
      `${name}: this checkout /${other.replace(/[()]/g, '')} = ${median(ratios).toFixed(2)} (median of the rounds' ratios; ` +
        `${ratios.map((r) => r.toFixed(2)).join(', ')})\n`,
    );
  };
  for (const name of Object.keys(paths)) {
    if (against) compare(' (--against)', name);
    if (sameSqlTurn) compare(SAME_SQL, name);
  }
} finally {
  await cleanUp();
}
