import type { Server } from 'node:http';
import type { MikroORM } from '@mikro-orm/postgresql';
import { within } from '#src/lib/within.ts';
import { overdueHours } from './compliance/queues.ts';
import type { Config } from './config.ts';
import { Corridors } from './corridors/corridors.ts';
import { migrateVia, openOrm } from './db/orm.ts';
import { openReads } from './db/replica.ts';
import { openSql } from './db/sql.ts';
import type { Deps, Secrets } from './deps.ts';
import { createApp } from './http/app.ts';
import { startMetricsServer } from './http/observability.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { type Clock, systemClock } from './lib/clock.ts';
import type { Logger } from './lib/log.ts';
import { createMetrics, registerPoolMetrics, registerServiceMetrics } from './observability/metrics.ts';
import { observeTransitions, transitionObserver } from './observability/transitions.ts';
import { cachedDirectory } from './providers/cached-directory.ts';
import { httpProviders } from './providers/http-providers.ts';
import { httpRails } from './providers/http-rails.ts';
import type { Providers } from './providers/providers.ts';
import type { Rails } from './providers/rails.ts';
import { appRouter } from './router.ts';

function withCaching(providers: Providers, config: Config, clock: Clock): Providers {
  return {
    ...providers,
    directory: cachedDirectory(providers.directory, {
      nameEnquiryTtlMs: config.NAME_ENQUIRY_CACHE_TTL_MS,
      clock,
    }),
  };
}

export interface RunningService {
  deps: Deps;
  url: string;
  port: number;
  /** The port of the metrics server when METRICS_PORT is set. */
  metricsPort?: number;
  close(): Promise<void>;
}

export interface DepsOptions {
  config: Config;
  databaseUrl: string;
  providersUrl: string;
  secrets: Secrets;
  log: Logger;
  clock?: Clock;
  providers?: Providers;
  rails?: Rails;
  corridors?: Corridors;
  callbackBaseUrl?: string;
}

/**
 * Builds everything a request or a job needs: the ORM (no migrations), providers with their
 * caches, rails, corridors. The HTTP server and every background worker thread call this.
 */
export async function createDeps(options: DepsOptions): Promise<Deps> {
  const { config, log } = options;
  const clock = options.clock ?? systemClock;
  const orm: MikroORM = await openOrm({
    url: options.databaseUrl,
    poolSize: config.DATABASE_POOL_SIZE,
    clock,
    log,
  });
  const metrics = createMetrics();
  observeTransitions(orm, transitionObserver(log, metrics));
  registerPoolMetrics(metrics, await orm.em.getConnection().getNativeClient());
  const timeoutMs = config.PROVIDER_TIMEOUT_MS;
  const sql = await openSql(orm);
  return {
    config,
    orm,
    metrics,
    sql,
    reads: openReads({
      primary: { orm, sql },
      replicaUrl: config.DATABASE_REPLICA_URL,
      maxLagMs: config.DATABASE_REPLICA_MAX_LAG_MS,
      poolSize: config.DATABASE_POOL_SIZE,
      log,
      registry: metrics.registry,
      clock,
    }),
    clock,
    log,
    secrets: options.secrets,
    corridors: options.corridors ?? Corridors.load(),
    providers: withCaching(
      options.providers ?? httpProviders({ baseUrl: options.providersUrl, timeoutMs, log, metrics }),
      config,
      clock,
    ),
    rails: options.rails ?? httpRails({ baseUrl: options.providersUrl, timeoutMs, log, metrics }),
    rateLimiter: new RateLimiter({ perSecond: config.RATE_LIMIT_PER_SECOND, burst: config.RATE_LIMIT_BURST }),
    callbackBaseUrl: options.callbackBaseUrl ?? config.CALLBACK_BASE_URL ?? '',
  };
}

/**
 * How long closing the database pool may wait for its connections: node-postgres' end() waits
 * for every connection checked out. A transaction whose connection is lost gives it back
 * (`src/db/driver.ts`); the bound stays so that stopping never waits forever on one that
 * something else keeps.
 */
const POOL_CLOSE_TIMEOUT_MS = 5_000;

/**
 * The composition root of the HTTP service: dependencies, migrations, then the server.
 * Everything is injected, so tests start the real thing with their own clock.
 */
export async function startService(options: DepsOptions): Promise<RunningService> {
  const { config, log } = options;
  const deps = await createDeps(options);
  const orm = deps.orm;
  try {
    const applied = await migrateVia(orm, config.DATABASE_DIRECT_URL);
    if (applied.length > 0) log.info({ migrations: applied }, 'migrations applied');
  } catch (err) {
    await orm.close();
    throw err;
  }
  registerServiceMetrics(deps.metrics, {
    sql: deps.sql,
    clock: deps.clock,
    overdueHours: overdueHours(config),
  });
  const app = createApp(deps, appRouter);
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.PORT, config.HOST, () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  deps.callbackBaseUrl ||= `http://${config.HOST}:${port}`;
  const metricsServer =
    config.METRICS_PORT === undefined ? null : await startMetricsServer(deps, config.METRICS_PORT);
  return {
    deps,
    port,
    url: `http://${config.HOST}:${port}`,
    metricsPort: metricsServer?.port,
    async close() {
      await metricsServer?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await within(deps.reads.close(), POOL_CLOSE_TIMEOUT_MS);
      if ((await within(orm.close(), POOL_CLOSE_TIMEOUT_MS)).late) {
        log.warn(
          { timeout_ms: POOL_CLOSE_TIMEOUT_MS },
          'the database pool did not close in time: a connection is still checked out; stopping anyway',
        );
      }
    },
  };
}
