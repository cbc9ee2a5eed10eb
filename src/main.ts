/**
 * `npm start`: the service and, unless PROVIDERS_URL points at real providers, the sandbox, on the
 * embedded PostgreSQL unless DATABASE_URL is set. Prints what a new user needs to make a call
 * (with the demo tenant only where DEMO_TENANT is on: `src/demo.ts`).
 */
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from './config.ts';
import { Corridors } from './corridors/corridors.ts';
import { startEmbeddedPostgres } from './db/embedded.ts';
import { ensureDemoApprover, ensureDemoTenant, startupBanner } from './demo.ts';
import { startWorkers } from './jobs/workers.ts';
import { systemClock } from './lib/clock.ts';
import { createLogger, written } from './lib/log.ts';
import { startSandbox } from './sandbox/server.ts';
import { loadSecrets } from './secrets.ts';
import { startService } from './service.ts';

const config = loadConfig();
const log = createLogger({ level: config.LOG_LEVEL });
mkdirSync(config.DATA_DIR, { recursive: true });
const secrets = loadSecrets(config);
const closers: (() => Promise<void>)[] = [];

/** How long a stop may take (jobs finishing their pass, connections draining) before the process exits anyway. */
const SHUTDOWN_TIMEOUT_MS = 20_000;
let stopping = false;
let stopped = false;

/**
 * Stops everything started, in reverse order, then logs `stopped` and exits. A signal while
 * stopping changes nothing: Ctrl-C in a terminal reaches this process twice (from the terminal,
 * and from npm passing it on), and the stop it started goes on. A stop that outlasts
 * SHUTDOWN_TIMEOUT_MS exits anyway (code 1).
 */
async function shutdown(signal: string, code = 0): Promise<void> {
  if (stopping) {
    // `stopped` stays the last line.
    if (!stopped) log.info({ signal }, 'already shutting down');
    return;
  }
  stopping = true;
  log.info({ signal }, 'shutting down');
  setTimeout(() => {
    log.error({ signal, timeout_ms: SHUTDOWN_TIMEOUT_MS }, 'shutdown timed out; exiting');
    process.exit(1);
  }, SHUTDOWN_TIMEOUT_MS).unref();
  for (const close of closers.reverse()) {
    try {
      await close();
    } catch (err) {
      log.error({ err }, 'error during shutdown');
    }
  }
  stopped = true;
  log.info({ signal }, 'stopped');
  await written(log);
  process.exit(code);
}

// Handlers first, so that a signal during start-up stops what has started so far.
process.on('SIGINT', () => void shutdown('SIGINT'));
process.on('SIGTERM', () => void shutdown('SIGTERM'));

/**
 * `npm start` runs this process in npm's place (`exec` in the script), so npm passes SIGTERM and
 * SIGINT on to it. Should npm itself die without passing a signal on (SIGKILL), this process
 * would serve on without anything to stop it: started by npm, it stops when its parent is gone.
 */
if (process.env.npm_lifecycle_event === 'start') {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent && !stopping) void shutdown('parent-exited');
  }, 1000).unref();
}

try {
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    const dataDir = path.join(config.DATA_DIR, 'pgdata');
    log.info({ dataDir }, 'starting embedded PostgreSQL (a new data directory takes about ten seconds)');
    const pg = await startEmbeddedPostgres({ dataDir });
    closers.push(pg.stop);
    databaseUrl = pg.url;
  }

  const corridors = Corridors.load();
  let providersUrl: string;
  if (config.PROVIDERS_URL) providersUrl = config.PROVIDERS_URL;
  else {
    const sandbox = await startSandbox({
      corridors,
      clock: systemClock,
      log: log.child({ component: 'sandbox' }),
      port: config.SANDBOX_PORT,
      blockIntervalMs: config.SANDBOX_BLOCK_INTERVAL_MS,
      callbackDelayMs: config.SANDBOX_CALLBACK_DELAY_MS,
      callbackSecret: secrets.callbackSecret,
    });
    closers.push(sandbox.close);
    providersUrl = sandbox.url;
  }

  const service = await startService({ config, databaseUrl, providersUrl, secrets, log, corridors });
  closers.push(service.close);
  // The job threads take seconds to load (longer on a busy machine); the banner does not wait
  // for them: what it prints works at once, and the jobs pick up whatever is due once running.
  const workersStarted = startWorkers({
    config,
    jobs: config.JOBS,
    databaseUrl,
    providersUrl,
    callbackBaseUrl: service.deps.callbackBaseUrl,
    secrets,
    log: log.child({ component: 'jobs' }),
  });
  workersStarted.catch(() => undefined); // awaited below: a failure stops start-up there
  // Stopped before the service closes its pool (closers run in reverse).
  closers.push(async () => (await workersStarted).stop());
  const demo = config.DEMO_TENANT
    ? {
        ...(await ensureDemoTenant(service.deps.orm.em.fork(), service.deps.sql, {
          dataDir: config.DATA_DIR,
          now: systemClock.now(),
        })),
        approverToken: await ensureDemoApprover(service.deps.orm.em.fork(), service.deps.sql, {
          dataDir: config.DATA_DIR,
        }),
      }
    : null;
  process.stdout.write(startupBanner({ config, serviceUrl: service.url, providersUrl, secrets, demo }));
  const workers = await workersStarted;
  service.deps.jobs = workers;
  const running = workers.running();
  // Jobs still loading were logged by startWorkers; Bree keeps starting them.
  if (running.length > 0 && running.length === config.JOBS.length)
    log.info({ jobs: running }, 'background jobs running');
} catch (err) {
  log.fatal({ err }, 'failed to start');
  await shutdown('startup-failure', 1);
}
