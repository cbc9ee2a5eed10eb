import { randomBytes } from 'node:crypto';
import { constants } from 'node:os';
import { loadConfig } from '#src/config.ts';
import { Corridors } from '#src/corridors/corridors.ts';
import { type EmbeddedPostgres, startEmbeddedPostgres } from '#src/db/embedded.ts';
import { ManualClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { type RunningSandbox, startSandbox } from '#src/sandbox/server.ts';
import { secretsFrom } from '#src/secrets.ts';
import { type RunningService, startService } from '#src/service.ts';
import { createScratchDatabase } from './scratch-database.ts';

/**
 * The real service, the real sandbox and a real PostgreSQL, started once for the whole run. With
 * DATABASE_URL set, the run gets a database of its own on that server, dropped at the end, so
 * that a run never writes the given database and never sees an earlier run's rows; without it,
 * an in-memory embedded one. The clock is a ManualClock: tests move time instead of sleeping.
 */
export interface Harness {
  url: string;
  sandboxUrl: string;
  /** The sandbox's parties, for tests that mine blocks or inspect what the processor received. */
  sandbox: RunningSandbox;
  service: RunningService;
  clock: RunClock;
  adminToken: string;
  /** This run's database: every test and every process a test starts uses this one. */
  databaseUrl: string;
  /** The same database without the pooler, when DATABASE_DIRECT_URL was given (see docs/scaling.md). */
  directUrl?: string;
  /**
   * The same database on a hot-standby replica, when DATABASE_REPLICA_URL was given. The harness's
   * service does not read from it (a list right after a write that no merchant call made would
   * race the replay); test/db/replica.test.ts starts services that do.
   */
  replicaUrl?: string;
  embedded: boolean;
  /** Which database the run uses, in words. */
  database: string;
}

/**
 * The run's clock: a ManualClock that remembers the latest time it has shown, so that a test file
 * that sets it back can be followed by one that starts no earlier (see test/isolation.ts).
 */
export class RunClock extends ManualClock {
  #latest: number;
  constructor(start: Date) {
    super(start);
    this.#latest = start.getTime();
  }
  override advance(ms: number): void {
    super.advance(ms);
    this.#latest = Math.max(this.#latest, this.now().getTime());
  }
  override set(to: Date): void {
    super.set(to);
    this.#latest = Math.max(this.#latest, to.getTime());
  }
  /** Moves the clock to the latest time it has shown, if it is behind it. */
  catchUp(): void {
    if (this.now().getTime() < this.#latest) super.set(new Date(this.#latest));
  }
}

let current: Harness | undefined;
let stops: (() => Promise<void>)[] = [];

export function harness(): Harness {
  if (!current) throw new Error('the test harness is not running (test/setup.ts starts it)');
  return current;
}

export async function startHarness(): Promise<Harness> {
  try {
    return await start();
  } catch (e) {
    // Mocha skips the global teardown when the setup fails: undo what was started here.
    await stopHarness().catch(() => {});
    throw e;
  }
}

async function start(): Promise<Harness> {
  const env = { ...process.env, PORT: '0', SANDBOX_PORT: '0', DATA_DIR: '.test-data' };
  let config = loadConfig(env);
  const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  const clock = new RunClock(new Date());
  let pg: EmbeddedPostgres | undefined;
  let databaseUrl: string;
  let database: string;
  let replicaUrl: string | undefined;
  if (config.DATABASE_URL) {
    const given = config.DATABASE_URL;
    const givenDirect = config.DATABASE_DIRECT_URL;
    // Made and dropped over the direct connection when there is one (past PgBouncer).
    const scratch = await createScratchDatabase(givenDirect ?? given);
    if ('refused' in scratch) {
      databaseUrl = given;
      database = `DATABASE_URL as given, rows of earlier runs included (no database of its own: ${scratch.refused})`;
    } else {
      // Stopped in reverse: an interruption while the rest stops still drops it.
      stops.push(dropOnSignal(scratch.drop));
      stops.push(scratch.drop);
      databaseUrl = sameServer(given, scratch.name);
      const directUrl = givenDirect && scratch.url;
      database =
        `database ${scratch.name} on DATABASE_URL's server, dropped at the end` +
        (directUrl ? `, through the pooler at ${new URL(given).host} (migrations direct)` : '');
      replicaUrl = config.DATABASE_REPLICA_URL && sameServer(config.DATABASE_REPLICA_URL, scratch.name);
      config = { ...config, DATABASE_URL: databaseUrl, DATABASE_DIRECT_URL: directUrl };
      // Processes that tests start with this process's environment reach this run's database too.
      process.env.DATABASE_URL = databaseUrl;
      if (directUrl) process.env.DATABASE_DIRECT_URL = directUrl;
      // Only the replica tests read from the replica (see Harness.replicaUrl).
      const givenReplica = process.env.DATABASE_REPLICA_URL;
      delete process.env.DATABASE_REPLICA_URL;
      stops.push(async () => {
        process.env.DATABASE_URL = given;
        if (givenDirect) process.env.DATABASE_DIRECT_URL = givenDirect;
        if (givenReplica) process.env.DATABASE_REPLICA_URL = givenReplica;
      });
    }
  } else {
    pg = await startEmbeddedPostgres({});
    stops.push(pg.stop);
    config = { ...config, DATABASE_DIRECT_URL: undefined };
    databaseUrl = pg.url;
    database = 'embedded PostgreSQL (PGlite)';
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
    config: {
      ...config,
      DATABASE_REPLICA_URL: undefined,
      RATE_LIMIT_PER_SECOND: 10_000,
      RATE_LIMIT_BURST: 1_000_000,
    },
    databaseUrl,
    providersUrl: sandbox.url,
    secrets: secretsFrom({ encryptionKey, adminToken, callbackSecret }),
    log,
    clock,
    corridors,
  });
  stops.push(service.close);
  // Stops run in reverse: this runs before the service closes.
  stops.push(() => noConnectionHeld(service));
  current = {
    url: service.url,
    sandboxUrl: sandbox.url,
    sandbox,
    service,
    clock,
    adminToken,
    databaseUrl,
    directUrl: config.DATABASE_DIRECT_URL,
    replicaUrl,
    embedded: !!pg,
    database,
  };
  return current;
}

/** `url` with its database name replaced by `name`. */
export function sameServer(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(name)}`;
  return u.toString();
}

/** Stops everything in the reverse order of its start; one failing stop does not skip the others. */
export async function stopHarness(): Promise<void> {
  const pending = stops.reverse();
  stops = [];
  current = undefined;
  const failures: unknown[] = [];
  for (const stop of pending) await stop().catch((e: unknown) => failures.push(e));
  if (failures.length === 1) throw failures[0];
  if (failures.length > 1) throw new AggregateError(failures, 'stopping the test harness');
}

/**
 * Drops the run's database when the run is interrupted (Ctrl-C, or mocha's parent passing the
 * signal on), then exits as the signal would have; the returned function stops listening.
 */
function dropOnSignal(drop: () => Promise<void>): () => Promise<void> {
  const onSignal = (signal: NodeJS.Signals) => {
    void drop()
      .catch((e: Error) => process.stderr.write(`test harness: could not drop its database: ${e.message}\n`))
      .finally(() => process.exit(128 + constants.signals[signal]));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return async () => {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  };
}

/**
 * Fails the run when a connection of the service's pool is still checked out once every test has
 * ended: a path that loses a connection without giving it back (kysely-org/kysely#1990, see
 * src/db/driver.ts) starves the pool one request at a time. Work still in flight gets 2 s.
 */
async function noConnectionHeld(service: RunningService): Promise<void> {
  const pool = await service.deps.orm.em.getConnection().getNativeClient();
  const held = () => pool.totalCount - pool.idleCount + pool.waitingCount;
  for (let i = 0; i < 200 && held() > 0; i++) await new Promise((r) => setTimeout(r, 10));
  if (held() > 0) {
    throw new Error(
      `${pool.totalCount - pool.idleCount} connection(s) of the service's pool still checked out and ` +
        `${pool.waitingCount} caller(s) waiting after the last test: a connection was never given back`,
    );
  }
}
