import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';
import type { Corridors } from './corridors/corridors.ts';
import type { Reads } from './db/replica.ts';
import type { Sql } from './db/sql.ts';
import type { RateLimiter } from './http/rate-limit.ts';
import type { Clock } from './lib/clock.ts';
import type { Logger } from './lib/log.ts';
import type { Metrics, MetricsSnapshot } from './observability/metrics.ts';
import type { Providers } from './providers/providers.ts';
import type { Rails } from './providers/rails.ts';

/** Keys the service derives or loads at start; none of them ever leaves the process. */
export interface Secrets {
  /** AES-256-GCM key for secrets at rest (webhook signing secrets). */
  encryptionKey: Buffer;
  /** HMAC key that makes pagination cursors tamper-evident. */
  cursorKey: Buffer;
  /** AES-256-GCM key sealing stored idempotent responses. */
  idempotencyKey: Buffer;
  /** Bearer token of the admin procedures. */
  adminToken: string;
  /** Shared with the providers: signs their callbacks to the service. */
  callbackSecret: string;
}

/** Wakes background workers so that work made due by a request starts now, not at the next poll. */
export interface JobKicker {
  kick(job: string): void;
  /** The metric snapshots of the running job threads, for `/metrics`. */
  metrics?(): Promise<MetricsSnapshot[]>;
}

/** Everything a request or a job needs, built once by the composition root (`src/service.ts`). */
export interface Deps {
  config: Config;
  orm: MikroORM;
  /** Prepared statements of the hot paths, on the ORM's own connection pool. */
  sql: Sql;
  /**
   * Where reads that tolerate a little lag run: the replica (DATABASE_REPLICA_URL) while it keeps
   * up, else the primary. Lists, the console's counts and reconciliation read through it.
   */
  reads: Reads;
  clock: Clock;
  log: Logger;
  secrets: Secrets;
  corridors: Corridors;
  providers: Providers;
  rails: Rails;
  rateLimiter: RateLimiter;
  /** This instance's (or worker thread's) own Prometheus registry and instruments. */
  metrics: Metrics;
  /** Base URL providers call back (bank credits, processor outcomes); the service's own URL by default. */
  callbackBaseUrl: string;
  /** The running background workers, when this process runs them. */
  jobs?: JobKicker;
}
