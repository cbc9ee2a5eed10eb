/**
 * Builds the dependencies of a request or a job, without the HTTP app: a job's worker thread
 * imports this (not `service.ts`), so it never loads the router and the API's schemas.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';
import { Corridors } from './corridors/corridors.ts';
import { openOrm } from './db/orm.ts';
import { openReads } from './db/replica.ts';
import { openSql } from './db/sql.ts';
import type { Deps, Secrets } from './deps.ts';
import { RateLimiter } from './http/rate-limit.ts';
import { type Clock, systemClock } from './lib/clock.ts';
import type { Logger } from './lib/log.ts';
import { createMetrics, registerPoolMetrics } from './observability/metrics.ts';
import { observeTransitions, transitionObserver } from './observability/transitions.ts';
import { cachedDirectory } from './providers/cached-directory.ts';
import { httpProviders } from './providers/http-providers.ts';
import { httpRails } from './providers/http-rails.ts';
import type { Providers } from './providers/providers.ts';
import type { Rails } from './providers/rails.ts';

function withCaching(providers: Providers, config: Config, clock: Clock): Providers {
  return {
    ...providers,
    directory: cachedDirectory(providers.directory, {
      nameEnquiryTtlMs: config.NAME_ENQUIRY_CACHE_TTL_MS,
      clock,
    }),
  };
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
  const sql = await openSql(orm, { prepared: config.DATABASE_PREPARED_STATEMENTS });
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
