import { randomBytes } from 'node:crypto';
import { loadConfig } from '#src/config.ts';
import { Corridors } from '#src/corridors/corridors.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '#src/db/embedded.ts';
import { ManualClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { type RunningSandbox, startSandbox } from '#src/sandbox/server.ts';
import { secretsFrom } from '#src/secrets.ts';
import { type RunningService, startService } from '#src/service.ts';

/**
 * The real service, the real sandbox and a real PostgreSQL, started once for the whole run:
 * DATABASE_URL when set (CI points it at a fresh database), else an in-memory embedded one.
 * The clock is a ManualClock: tests move time instead of sleeping.
 */
export interface Harness {
  url: string;
  sandboxUrl: string;
  /** The sandbox's parties, for tests that mine blocks or inspect what the processor received. */
  sandbox: RunningSandbox;
  service: RunningService;
  clock: ManualClock;
  adminToken: string;
  databaseUrl: string;
  embedded: boolean;
}

let current: Harness | undefined;
let stops: (() => Promise<void>)[] = [];

export function harness(): Harness {
  if (!current) throw new Error('the test harness is not running (test/setup.ts starts it)');
  return current;
}

export async function startHarness(): Promise<Harness> {
  const env = { ...process.env, PORT: '0', SANDBOX_PORT: '0', DATA_DIR: '.test-data' };
  const config = loadConfig(env);
  const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const clock = new ManualClock(new Date());
  let pg: EmbeddedPostgres | undefined;
  let databaseUrl = config.DATABASE_URL;
  if (!databaseUrl) {
    pg = await startEmbeddedPostgres({});
    stops.push(pg.stop);
    databaseUrl = pg.url;
  }
  const corridors = Corridors.load();
  const callbackSecret = randomBytes(32).toString('base64url');
  // Blocks only when a test mines them; callbacks on the next tick and retried after 1 ms, so
  // tests await I/O, not time (a bank that gives up on an unreachable service does so at once).
  const sandbox = await startSandbox({
    corridors,
    clock,
    log,
    port: 0,
    blockIntervalMs: 0,
    callbackDelayMs: 0,
    callbackRetryBaseMs: 1,
    callbackSecret,
  });
  stops.push(sandbox.close);
  const encryptionKey = randomBytes(32);
  const adminToken = `adm_test_${randomBytes(16).toString('hex')}`;
  const service = await startService({
    // The clock stands still between tests that move it, so the buckets barely refill: make them deep.
    config: { ...config, RATE_LIMIT_PER_SECOND: 10_000, RATE_LIMIT_BURST: 1_000_000 },
    databaseUrl,
    providersUrl: sandbox.url,
    secrets: secretsFrom({ encryptionKey, adminToken, callbackSecret }),
    log,
    clock,
    corridors,
  });
  stops.push(service.close);
  current = {
    url: service.url,
    sandboxUrl: sandbox.url,
    sandbox,
    service,
    clock,
    adminToken,
    databaseUrl,
    embedded: !!pg,
  };
  return current;
}

export async function stopHarness(): Promise<void> {
  for (const stop of stops.reverse()) await stop();
  stops = [];
  current = undefined;
}
