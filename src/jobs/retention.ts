import { EXCEPTION_QUEUES } from '#src/compliance/exceptions.ts';
import { purgeNotices } from '#src/compliance/overdue.ts';
import type { Config } from '#src/config.ts';
import { maintainPartitions, type PartitionChange } from '#src/db/partitions.ts';
import { rowsWith, type Sql, type Statement, statement, WITHOUT_JIT } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { uuidV7Floor } from '#src/lib/ids.ts';
import { inRounds } from '#src/lib/rounds.ts';

/**
 * The `retention` job: deletes what only grows and is no longer needed, so that a table's size
 * follows the traffic of its window rather than of the service's whole life.
 *
 * - Idempotency keys (with their sealed responses) older than `IDEMPOTENCY_RETENTION_HOURS`: the
 *   published replay window (docs/errors.md). A key is kept at least that long.
 * - Done tasks whose work ended more than `TASK_RETENTION_HOURS` ago. Open tasks are never touched.
 * - Overdue notices (`exception_overdue_notices`) of items that no longer wait in their queue as
 *   noticed; a notice of an item still waiting is kept, so that it is never announced twice.
 * - The partitioned tables (src/db/partitions.ts): partitions created ahead, and those past their
 *   table's retention, if it has one, detached and dropped; when a week of webhook deliveries
 *   went, the receivers' counts of deliveries in flight are counted afresh.
 *
 * Rows go in bounded batches, each one statement that picks its rows `FOR UPDATE SKIP LOCKED`, as
 * every job claims its work: instances running the job side by side delete different rows and
 * never wait for each other. Each batch walks the primary key up to the first id of the cutoff
 * (ids are UUID v7, ordered by creation time: anything older than the cutoff was created before
 * it), so no index beyond the primary key is needed and the write paths pay for none.
 */

/** How often the job looks, when nothing wakes it. */
export const RETENTION_INTERVAL_MS = 60_000;

/** Rows per delete statement: short transactions, so other work never queues behind one. */
export const RETENTION_BATCH = 1000;

/** Batches per table per pass; a backlog beyond that waits for the next pass. */
const MAX_ROUNDS = 100;

const HOUR_MS = 3_600_000;

interface RetentionRule {
  table: 'idempotency_keys' | 'tasks';
  windowHours(config: Config): number;
  purge: Statement;
}

/** Deletes up to `$3` rows whose id sorts below `$1` and whose `column` is before `$2`; counts them. */
function purgeStatement(table: RetentionRule['table'], column: string): Statement {
  return statement(
    `retention_${table}`,
    `with gone as (
       delete from ${table} where id in (
         select id from ${table}
          where id < $1::uuid and ${column} < $2
          order by id
          limit $3
          for update skip locked)
       returning 1)
     select count(*)::int as deleted from gone`,
  );
}

const RULES: readonly RetentionRule[] = [
  {
    table: 'idempotency_keys',
    windowHours: (config) => config.IDEMPOTENCY_RETENTION_HOURS,
    purge: purgeStatement('idempotency_keys', 'created_at'),
  },
  {
    // An open task has no done_at, and `null < $2` is never true.
    table: 'tasks',
    windowHours: (config) => config.TASK_RETENTION_HOURS,
    purge: purgeStatement('tasks', 'done_at'),
  },
];

export type RetentionSummary = Record<RetentionRule['table'] | 'exception_overdue_notices', number> & {
  partitions: PartitionChange[];
};

// Sets each receiver's count of webhook deliveries in flight to its ATTEMPTING deliveries, under
// the claim rounds' turn (Migration20261129110000_webhook_origins_in_flight).
const recountInFlight = statement(
  'webhook_origins_recount',
  'select webhook_origins_recount() is null as done',
);

/** Deletes up to `batch` notices of waits that are over (`purgeNotices`); resolves to how many. */
export async function purgeOverdueNotices(sql: Sql, now: Date, batch: number): Promise<number> {
  const [row] = await rowsWith<{ deleted: number }>(sql, WITHOUT_JIT, purgeNotices, [
    ...EXCEPTION_QUEUES.map(() => now),
    batch,
  ]);
  return row?.deleted ?? 0;
}

/** One pass of the `retention` job: every table's expired rows, a batch at a time. */
export async function runRetentionOnce(
  deps: Pick<Deps, 'sql' | 'clock' | 'config'>,
  options: { batch?: number } = {},
): Promise<RetentionSummary> {
  const batch = options.batch ?? RETENTION_BATCH;
  const summary: RetentionSummary = {
    idempotency_keys: 0,
    tasks: 0,
    exception_overdue_notices: 0,
    partitions: [],
  };
  for (const rule of RULES) {
    const cutoff = new Date(deps.clock.now().getTime() - rule.windowHours(deps.config) * HOUR_MS);
    summary[rule.table] += await inRounds({ batch, maxRounds: MAX_ROUNDS }, async () => {
      const [row] = await deps.sql.rows<{ deleted: number }>(rule.purge, [
        uuidV7Floor(cutoff),
        cutoff,
        batch,
      ]);
      return row?.deleted ?? 0;
    });
  }
  const now = deps.clock.now();
  summary.exception_overdue_notices += await inRounds({ batch, maxRounds: MAX_ROUNDS }, () =>
    purgeOverdueNotices(deps.sql, now, batch),
  );
  summary.partitions = await maintainPartitions(deps.sql, { now: deps.clock.now(), config: deps.config });
  // A dropped week's deliveries left without the statement that keeps the receivers' counts.
  if (summary.partitions.some((c) => c.table === 'webhook_deliveries' && c.action === 'dropped')) {
    await deps.sql.rows(recountInFlight);
  }
  return summary;
}
