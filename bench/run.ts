/**
 * `npm run bench` (full, about half an hour) and `npm run bench -- --quick` (smoke run of a few
 * minutes, which CI runs): measures the service's hot paths against baselines taken in the same
 * run on the same machine, prints the table and writes `bench/results/<date>.json`. Everything runs against a database of its
 * own (`bench_<random>` on the local PostgreSQL), dropped at the end.
 *
 * Options: --quick; --only=create,list,instructions,settlement,dispatch,reconciliation,webhooks,console-counts,console-lists,
 * idle-memory; --profile (CPU profiles
 * of every measured service instance, one per thread, into bench/results/profiles/);
 * --service-flag=<flag>, repeatable (a Node or V8 flag for every measured service instance, e.g.
 * --service-flag=--single-threaded-gc); --service-config=<NAME>=<value>, repeatable (a setting of
 * every service instance, as in the environment, e.g. --service-config=DATABASE_PREPARED_STATEMENTS=off).
 */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Child, startChild, stopAllChildren } from './lib/children.ts';
import {
  type BenchContext,
  newSecrets,
  planFor,
  serviceConfigOf,
  serviceFlagsOf,
  startService,
} from './lib/context.ts';
import { createBenchDatabase, PG_BASE, pool } from './lib/db.ts';
import { machine, Results, writeResults } from './lib/report.ts';
import { migrateAndCreateTenants, setRefundDestinations } from './lib/seed.ts';
import { createScenarios, listScenarios } from './scenarios/api.ts';
import { consoleCountsScenario } from './scenarios/console-counts.ts';
import { consoleListsScenario } from './scenarios/console-lists.ts';
import { dispatchScenario } from './scenarios/dispatch.ts';
import { idleMemoryScenario } from './scenarios/idle-memory.ts';
import { instructionScenario } from './scenarios/instructions.ts';
import { reconciliationScenario } from './scenarios/reconciliation.ts';
import { settlementScenario } from './scenarios/settlement.ts';
import { webhookScenario } from './scenarios/webhooks.ts';

/** The scenarios, in the order a run takes them: a new one is one line here (its name for --only). */
const SCENARIOS = {
  create: createScenarios,
  list: listScenarios,
  instructions: instructionScenario,
  settlement: settlementScenario,
  dispatch: dispatchScenario,
  reconciliation: reconciliationScenario,
  webhooks: webhookScenario,
  'console-counts': consoleCountsScenario,
  'console-lists': consoleListsScenario,
  'idle-memory': idleMemoryScenario,
} as const;
type ScenarioName = keyof typeof SCENARIOS;

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const profile = args.includes('--profile');
const serviceFlags = serviceFlagsOf(args);
const serviceConfig = serviceConfigOf(args);
const onlyArg = args.find((a) => a.startsWith('--only='))?.slice('--only='.length);
const only = (onlyArg ? onlyArg.split(',') : Object.keys(SCENARIOS)) as ScenarioName[];
for (const name of only) if (!(name in SCENARIOS)) throw new Error(`unknown scenario ${name}`);

const plan = planFor(quick);
const started = performance.now();
const log = (message: string) =>
  process.stderr.write(
    `[bench ${((performance.now() - started) / 1000).toFixed(0).padStart(4)}s] ${message}\n`,
  );

const db = await createBenchDatabase();
const benchPool = pool(db.url, 4);
const logDir = mkdtempSync(join(tmpdir(), `${db.name}-logs-`));
let interrupted = false;
const cleanUp = async () => {
  await stopAllChildren();
  await benchPool.end().catch(() => undefined);
  await db.drop();
  rmSync(logDir, { recursive: true, force: true });
};
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    interrupted = true;
    log(`${signal}: stopping children and dropping ${db.name}`);
    void cleanUp().finally(() => process.exit(130));
  });
}

const results = new Results();
let failed: unknown;
try {
  log(
    `database ${db.name}; ${quick ? 'quick' : 'full'} run: ${only.join(', ')}` +
      (serviceFlags.length > 0 ? `; service flags: ${serviceFlags.join(' ')}` : '') +
      (Object.keys(serviceConfig).length > 0 ? `; service config: ${JSON.stringify(serviceConfig)}` : ''),
  );
  const secrets = newSecrets();
  const tenants = await migrateAndCreateTenants(db.url, plan.tenants + 1 + plan.webhookTenants);
  const sandbox: Child = await startChild('sandbox', { callbackSecret: secrets.callbackSecret });
  const profileDir = fileURLToPath(
    new URL(`./results/profiles/${new Date().toISOString().slice(0, 10)}/`, import.meta.url),
  );
  if (profile) mkdirSync(profileDir, { recursive: true });
  const ctx: BenchContext = {
    plan,
    db,
    pool: benchPool,
    secrets,
    sandboxUrl: sandbox.url,
    tenants: tenants.slice(0, plan.tenants),
    listTenant: tenants[plan.tenants]!,
    webhookTenants: tenants.slice(plan.tenants + 1),
    results,
    serviceExecArgv: [...serviceFlags, ...(profile ? ['--cpu-prof', '--cpu-prof-dir', profileDir] : [])],
    serviceConfig,
    logDir,
    log,
  };
  // Every payout needs a refund destination; one service instance sets them through the API.
  const setup = await startService(ctx, { execArgv: [] });
  try {
    await setRefundDestinations(setup.url, tenants);
  } finally {
    await setup.stop();
  }
  for (const name of only) {
    log(`— ${name}`);
    await SCENARIOS[name](ctx);
  }
} catch (err) {
  failed = err;
} finally {
  if (!interrupted) await cleanUp();
}

const seconds = Math.round((performance.now() - started) / 1000);
const file = writeResults(
  {
    date: new Date().toISOString(),
    mode: quick ? 'quick' : 'full',
    scenarios: only,
    ...(serviceFlags.length > 0 ? { serviceFlags } : {}),
    ...(Object.keys(serviceConfig).length > 0 ? { serviceConfig } : {}),
    seconds,
    machine: machine(),
    postgres: PG_BASE.replace(/\/\/[^@]*@/, '//'),
    plan,
    rows: results.rows,
    checks: results.checks,
    error: failed ? String((failed as Error).stack ?? failed) : undefined,
    details: results.details,
  },
  quick,
);
process.stdout.write(
  `\n${results.table()}\n\nAgainst the targets (the table of docs/performance.md):\n\n${results.headline()}\n` +
    `\nwritten to ${file} (${seconds} s)\n`,
);
if (failed) {
  process.stderr.write(`\nbenchmark failed: ${(failed as Error).stack ?? failed}\n`);
  process.exit(1);
}
if (results.checks.some((c) => !c.ok)) process.exit(1);
