import { randomBytes } from 'node:crypto';
import pg from 'pg';

/**
 * The benchmark's own database on the local PostgreSQL: created per run under a random
 * `bench_` name and dropped at the end, so a run never reads or writes anyone else's data.
 */

const DEADLOCK_DETECTED = '40P01';

export const PG_BASE = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface BenchDatabase {
  name: string;
  url: string;
  drop(): Promise<void>;
}

function urlFor(name: string): string {
  const url = new URL(PG_BASE);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Creates `bench_<random>` and returns its URL; `drop()` removes it even with sessions open. */
export async function createBenchDatabase(): Promise<BenchDatabase> {
  const name = `bench_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_BASE });
  await admin.connect();
  try {
    await admin.query(`create database "${name}"`);
  } finally {
    await admin.end();
  }
  let dropped = false;
  return {
    name,
    url: urlFor(name),
    async drop() {
      if (dropped) return;
      dropped = true;
      const client = new pg.Client({ connectionString: PG_BASE });
      await client.connect();
      try {
        await client.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A plain `pg` pool on the bench database: seeding, checks and the bare-SQL baselines. */
export function pool(url: string, max: number): pg.Pool {
  return new pg.Pool({ connectionString: url, max });
}

/** The tables a scenario fills, which {@link resetWork} empties. */
export const WORK_TABLES = [
  'payouts',
  'payout_status_timeline',
  'payment_instructions',
  'outbox_events',
  'tasks',
  'idempotency_keys',
  'inflows',
  'outflows',
  'refunds',
  'quotes',
  'webhook_deliveries',
  'webhook_delivery_attempts',
] as const;

/**
 * Empties every table that a scenario fills, keeping tenants, keys, refund destinations,
 * webhook configuration and deposit addresses: each scenario starts from the same state.
 *
 * A load run stops by closing its connections, so a request it made last may still be writing
 * in the service when this runs; the truncate's locks, taken table by table, can then meet that
 * transaction's in the other order. PostgreSQL ends one of the two (deadlock_detected), and the
 * truncate is tried again.
 */
export async function resetWork(db: pg.Pool): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.query(`truncate ${WORK_TABLES.join(', ')} cascade`);
      break;
    } catch (err) {
      if ((err as { code?: string }).code !== DEADLOCK_DETECTED || attempt === 5) throw err;
      await new Promise((resolve) => setTimeout(resolve, 100 * attempt));
    }
  }
  await db.query('vacuum analyze');
  await db.query('checkpoint');
}

/**
 * Brings the database to the same state before each measured run of a comparison, without
 * emptying it: fresh statistics (so that plans, the cached generic plans of prepared statements
 * included, are made for the tables as they are rather than as they were when a run began on
 * empty ones) and a checkpoint (otherwise one that a run happens to cross, the previous run's WAL
 * reaching max_wal_size, lands on whichever side was running then, with its flushes and full-page
 * writes).
 */
export async function settle(db: pg.Pool): Promise<void> {
  await db.query('analyze');
  await db.query('checkpoint');
}

/**
 * Whether fewer than `cap` rows match (`rows`: a table and its condition, as after `from`), found
 * by reading at most `cap` of them through an index: a scenario polls this while a worker drains
 * its backlog and counts exactly only once the backlog is nearly gone, so that its polling does
 * not compete with the worker it measures for PostgreSQL.
 */
export async function fewerThan(db: pg.Pool, rows: string, cap: number): Promise<boolean> {
  return (await scalar(db, `select count(*) from (select 1 from ${rows} limit ${cap}) x`)) < cap;
}

/** One number from a `select count(*)`-like query. */
export async function scalar(
  db: pg.Pool | pg.PoolClient,
  sql: string,
  params: unknown[] = [],
): Promise<number> {
  const { rows } = await db.query(sql, params);
  const first = rows[0] as Record<string, unknown> | undefined;
  return Number(first ? Object.values(first)[0] : 0);
}
