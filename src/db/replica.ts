import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import pg from 'pg';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Clock } from '#src/lib/clock.ts';
import type { Logger } from '#src/lib/log.ts';
import { openOrm, REPLICA_APPLICATION_NAME } from './orm.ts';
import { poolSql, type Sql, statement } from './sql.ts';
import { isDatabaseUnavailable } from './unavailable.ts';

/**
 * Reads that tolerate a little lag (the merchants' lists, the console's lists and counts,
 * reconciliation) go to a hot-standby replica when DATABASE_REPLICA_URL is set, and to the primary
 * otherwise, or when the replica cannot serve them as fresh as they need:
 * - it lags: its replay is more than DATABASE_REPLICA_MAX_LAG_MS behind (measured on the replica,
 *   at most every {@link checkInterval}), or it is not streaming from the primary;
 * - it is down, or a read on it fails for want of a connection (or is cancelled by replay): that
 *   read is run again on the primary, so a merchant never sees the replica's failure;
 * - the same tenant (or, for the console, any operator) wrote through this instance less than
 *   {@link readYourWritesMs} ago: read your writes.
 * Each routed read is counted in `payout_replica_reads_total` by where it went and why; the
 * replica going down or lagging, and coming back, is logged once per change. docs/scaling.md has
 * the rules and what each read tolerates.
 */
export interface Reads {
  /**
   * Runs a read on the replica or on the primary (`scope`: the tenant id, or null for operators),
   * given that database's `Sql` and an EntityManager of its own. `work` may run twice: on the
   * primary again when the replica fails under it.
   */
  read<T>(scope: string | null, work: (db: ReadDb) => Promise<T>): Promise<T>;
  /** Records a write of `scope` (a tenant id, or null for an operator): its reads stay on the primary a while. */
  wrote(scope: string | null): void;
  close(): Promise<void>;
}

/** One database to read from: its statements and an EntityManager of its own. */
export interface ReadDb {
  sql: Sql;
  em: EntityManager;
}

/** Why a read went where it went (the `reason` label). */
export type ReadRoute = 'replica' | 'lag' | 'down' | 'recent_write';

export interface ReadsOptions {
  primary: { orm: MikroORM; sql: Sql };
  /** DATABASE_REPLICA_URL; none: every read on the primary, nothing counted. */
  replicaUrl?: string;
  maxLagMs: number;
  poolSize: number;
  log: Logger;
  registry: Registry;
  clock: Clock;
}

const OPERATORS = '*';

/** A database to read from whose EntityManager is forked only when the read asks for it: SQL reads never do. */
function readDb(sql: Sql, orm: MikroORM): ReadDb {
  let em: EntityManager | undefined;
  return {
    sql,
    get em() {
      em ??= orm.em.fork();
      return em;
    },
  };
}

/** How often the replica's state is measured: a quarter of the lag allowed, between 50 ms and 1 s. */
export function checkInterval(maxLagMs: number): number {
  return Math.min(1_000, Math.max(50, Math.floor(maxLagMs / 4)));
}

/**
 * How long a scope's reads stay on the primary after its write: once the allowed lag plus one
 * check has passed, the replica has replayed the write, or it is no longer used.
 */
export function readYourWritesMs(maxLagMs: number): number {
  return maxLagMs + checkInterval(maxLagMs);
}

// The replica's delay, as seen by the replica itself: nothing when it has replayed all it has
// received, else the age of the last transaction it replayed. Not streaming counts as lagging.
const replicaLag = statement(
  'replica_lag',
  `select coalesce((select status = 'streaming' from pg_stat_wal_receiver), false) as streaming,
          case when pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
               else coalesce(extract(epoch from now() - pg_last_xact_replay_timestamp()) * 1000, 'Infinity')
          end::float8 as lag_ms`,
  { replan: true },
);

interface ReplicaState {
  route: 'replica' | 'lag' | 'down';
  lagMs: number | null;
  checkedAt: number;
}

export function openReads(options: ReadsOptions): Reads {
  const { primary, replicaUrl, maxLagMs, log } = options;
  if (!replicaUrl) {
    return {
      read: (_scope, work) => work(readDb(primary.sql, primary.orm)),
      wrote() {},
      async close() {},
    };
  }
  const registers = [options.registry];
  const reads = new Counter({
    name: 'payout_replica_reads_total',
    help: 'Lag-tolerant reads, by where they ran (replica or primary) and why: replica, lag, down, recent_write.',
    labelNames: ['target', 'reason'],
    registers,
  });
  const lagGauge = new Gauge({
    name: 'payout_replica_lag_seconds',
    help: "The replica's replay delay at its last check (-1 when it could not be reached).",
    registers,
  });
  const checkEvery = checkInterval(maxLagMs);
  const window = readYourWritesMs(maxLagMs);
  const writes = new Map<string, number>();
  let replica: Promise<{ orm: MikroORM; sql: Sql; checkPool: pg.Pool; checks: Sql }> | undefined;
  let state: ReplicaState = { route: 'down', lagMs: null, checkedAt: Number.NEGATIVE_INFINITY };
  let reported: ReplicaState['route'] = 'replica';
  let checking: Promise<ReplicaState> | undefined;

  const connect = () => {
    replica ??= (async () => {
      const orm = await openOrm({
        url: replicaUrl,
        poolSize: options.poolSize,
        clock: options.clock,
        replica: true,
      });
      const pool: pg.Pool = await orm.em.getConnection().getNativeClient();
      // The checks have a connection of their own: never queued behind reads for a slot of the pool.
      const checkPool = new pg.Pool({
        connectionString: replicaUrl,
        max: 1,
        application_name: `${REPLICA_APPLICATION_NAME}-check`,
        connectionTimeoutMillis: 2_000,
      });
      // A connection lost while idle: the next check fails and says so.
      checkPool.on('error', () => {});
      return {
        orm,
        sql: poolSql(pool, { origin: orm.config }),
        checkPool,
        checks: poolSql(checkPool, { named: false }),
      };
    })();
    // A failed start is tried again at the next check.
    replica.catch(() => {
      replica = undefined;
    });
    return replica;
  };

  const settle = (next: ReplicaState): ReplicaState => {
    state = next;
    lagGauge.set(next.lagMs === null ? -1 : next.lagMs / 1000);
    if (next.route !== reported) {
      if (next.route === 'replica') log.info({ lag_ms: next.lagMs }, 'replica serving reads again');
      else
        log.warn(
          { reason: next.route, lag_ms: next.lagMs, max_lag_ms: maxLagMs },
          next.route === 'down'
            ? 'replica unreachable; lag-tolerant reads go to the primary'
            : 'replica lagging; lag-tolerant reads go to the primary',
        );
      reported = next.route;
    }
    return next;
  };

  const check = async (): Promise<ReplicaState> => {
    const now = Date.now();
    if (now - state.checkedAt < checkEvery) return state;
    checking ??= (async () => {
      try {
        const { checks } = await connect();
        const [row] = await checks.rows<{ streaming: boolean; lag_ms: number }>(replicaLag);
        const lagMs = Number(row?.lag_ms ?? Number.POSITIVE_INFINITY);
        const fresh = row?.streaming === true && lagMs <= maxLagMs;
        return settle({ route: fresh ? 'replica' : 'lag', lagMs, checkedAt: Date.now() });
      } catch (err) {
        log.debug({ err }, 'replica check failed');
        return settle({ route: 'down', lagMs: null, checkedAt: Date.now() });
      } finally {
        checking = undefined;
      }
    })();
    return checking;
  };

  const route = async (scope: string | null): Promise<ReadRoute> => {
    const wroteAt = writes.get(scope ?? OPERATORS);
    if (wroteAt !== undefined) {
      if (Date.now() - wroteAt < window) return 'recent_write';
      writes.delete(scope ?? OPERATORS);
    }
    return (await check()).route;
  };

  // Runs `work` where `route` says; a replica that fails under it hands the read to the primary.
  const onPrimary = <T>(work: (db: ReadDb) => Promise<T>) => work(readDb(primary.sql, primary.orm));
  const read = async <T>(scope: string | null, work: (db: ReadDb) => Promise<T>): Promise<T> => {
    const where = await route(scope);
    if (where !== 'replica') {
      reads.inc({ target: 'primary', reason: where });
      return onPrimary(work);
    }
    try {
      const r = await connect();
      const result = await work(readDb(r.sql, r.orm));
      reads.inc({ target: 'replica', reason: 'replica' });
      return result;
    } catch (err) {
      if (!replicaFailure(err)) throw err;
      settle({ route: 'down', lagMs: null, checkedAt: Date.now() });
      reads.inc({ target: 'primary', reason: 'down' });
      return onPrimary(work);
    }
  };

  return {
    read,
    wrote(scope) {
      writes.set(scope ?? OPERATORS, Date.now());
    },
    async close() {
      const r = replica;
      replica = undefined;
      const opened = await r?.catch(() => undefined);
      await opened?.checkPool.end();
      await opened?.orm.close();
    },
  };
}

/**
 * Whether a read's error is the replica's failure rather than the read's own: no connection, or
 * the query cancelled because replay needed what it read (SQLSTATE 40001 on a hot standby).
 */
export function replicaFailure(err: unknown): boolean {
  if (isDatabaseUnavailable(err)) return true;
  for (let e = err, depth = 0; e && typeof e === 'object' && depth < 8; depth++) {
    const { code, message } = e as { code?: unknown; message?: unknown };
    if (code === '40001' && typeof message === 'string' && message.includes('conflict with recovery'))
      return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
