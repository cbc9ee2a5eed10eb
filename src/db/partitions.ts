import type { Config } from '#src/config.ts';
import { type Sql, type Statement, toDate } from './sql.ts';

/**
 * The tables partitioned by time (docs/scaling.md, "Partitioned tables"), and their upkeep: the
 * partitions of the coming periods are created ahead, and where a table has a retention the
 * partitions wholly past it are detached and dropped. The `retention` job calls
 * {@link maintainPartitions} on every pass.
 *
 * Two ways, same result (partitions named and bounded the same): where the server has pg_partman
 * and the table is registered with it (the migrations register it when the extension is
 * available), its `run_maintenance` does the work, with the retention set from this service's
 * configuration first; elsewhere (the embedded database, managed servers without the
 * extension) the migrations' `partition_maintain()` function does.
 */
export interface PartitionedTable {
  table: string;
  interval: 'month' | 'week';
  /** Days a partition is kept once its whole range is past; null: kept for ever. */
  retentionDays(config: Config): number | null;
  /**
   * The oldest row that must stay whatever the retention (column `oldest`, null when none): no
   * partition holding it or anything newer is dropped, the retention is lengthened to spare it.
   */
  oldestKept?: Statement;
}

export const PARTITIONED_TABLES: readonly PartitionedTable[] = [
  { table: 'payout_status_timeline', interval: 'month', retentionDays: () => null },
  // The books and the operators' trail: never dropped, a month's partition stays attached for ever.
  { table: 'ledger_entries', interval: 'month', retentionDays: () => null },
  { table: 'audit', interval: 'month', retentionDays: () => null },
  // By week of their event's creation; the attempts first: their foreign key into the deliveries
  // lets a deliveries' partition go only once the attempts of its weeks are gone.
  {
    table: 'webhook_delivery_attempts',
    interval: 'week',
    retentionDays: (config) => config.WEBHOOK_LOG_RETENTION_DAYS,
  },
  {
    table: 'webhook_deliveries',
    interval: 'week',
    retentionDays: (config) => config.WEBHOOK_LOG_RETENTION_DAYS,
  },
  // Past its retention (never shorter than the deliveries'), a week's events go once every one of
  // them was published; after the deliveries, so that a pass removes a week's deliveries first.
  {
    table: 'outbox_events',
    interval: 'week',
    retentionDays: (config) => config.OUTBOX_RETENTION_DAYS,
    oldestKept: {
      name: 'partitions_outbox_oldest_unpublished',
      text: 'select min(created_at) as oldest from outbox_events where published_at is null',
    },
  },
];

/** Periods created ahead of the current one (pg_partman's `premake`, as registered). */
export const PERIODS_AHEAD = 3;

export interface PartitionChange {
  table: string;
  action: 'created' | 'dropped';
  partition: string;
  by: 'pg_partman' | 'partition_maintain';
}

// Unprepared (replan): DDL, run a few times a minute at most.
const registered: Statement = {
  name: 'partitions_partman_registered',
  text: `select exists (select 1 from pg_namespace where nspname = 'partman')
           and to_regclass('partman.part_config') is not null as partman`,
  replan: true,
};
const partmanConfigured: Statement = {
  name: 'partitions_partman_config',
  text: `update partman.part_config set retention = $2, retention_keep_table = true, infinite_time_partitions = true
          where parent_table = 'public.' || $1 returning 1 as found`,
  replan: true,
};
const partmanRun: Statement = {
  name: 'partitions_partman_run',
  text: `select partman.run_maintenance(p_parent_table => 'public.' || $1, p_jobmon => false)`,
  replan: true,
};
// pg_partman only detaches (it would drop a partition that another table's foreign key still
// names, and fail); the service drops what it detached, in the same transaction.
const dropDetached = (name: string): Statement => ({
  name: 'partitions_drop_detached',
  text: `drop table ${quoteIdent(name)}`,
  replan: true,
});
const quoteIdent = (name: string) => `"${name.replaceAll('"', '""')}"`;
const partitionsOf: Statement = {
  name: 'partitions_of',
  text: `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
          where i.inhparent = $1::regclass order by 1`,
  replan: true,
};
// Copies the parent's statement triggers onto the partitions made since (Migration20261129050000).
const guard: Statement = {
  name: 'partitions_guard',
  text: 'select partition_guard($1) as guarded',
  replan: true,
};
const ownRun: Statement = {
  name: 'partitions_maintain',
  text: 'select action, partition_name from partition_maintain($1, $2, $3, $4::interval, $5)',
  replan: true,
};

const DAY_MS = 86_400_000;

/**
 * The retention to apply, as an interval: `days`, or longer when the table's oldest row that must
 * stay (`oldestKept`) is older than that, with a day to spare for the database's clock. Rows that
 * must stay only ever get newer (the outbox's new events are written now), so a pass that reads
 * it first can never drop one.
 */
async function retentionSparing(sql: Sql, t: PartitionedTable, days: number, now: Date): Promise<string> {
  if (!t.oldestKept) return `${days} days`;
  const [row] = await sql.rows<{ oldest: Date | string | null }>(t.oldestKept);
  if (!row?.oldest) return `${days} days`;
  const age = now.getTime() - toDate(row.oldest).getTime();
  if (age < days * DAY_MS) return `${days} days`;
  return `${Math.ceil((age + DAY_MS) / 1000)} seconds`;
}

/** Creates the coming partitions and drops those past retention, for every partitioned table. */
export async function maintainPartitions(
  sql: Sql,
  args: { now: Date; config: Config; tables?: readonly PartitionedTable[] },
): Promise<PartitionChange[]> {
  const [probe] = await sql.rows<{ partman: boolean }>(registered);
  const changes: PartitionChange[] = [];
  for (const t of args.tables ?? PARTITIONED_TABLES) {
    const days = t.retentionDays(args.config);
    const retention = days === null ? null : await retentionSparing(sql, t, days, args.now);
    const done = await sql.transaction(async (tx) => {
      if (probe?.partman) {
        const found = await tx.rows(partmanConfigured, [t.table, retention]);
        if (found.length > 0) {
          // pg_partman reports nothing back: what changed is read from the catalog around it.
          const before = new Set(
            (await tx.rows<{ name: string }>(partitionsOf, [t.table])).map((r) => r.name),
          );
          await tx.rows(partmanRun, [t.table]);
          const after = new Set(
            (await tx.rows<{ name: string }>(partitionsOf, [t.table])).map((r) => r.name),
          );
          for (const gone of before) if (!after.has(gone)) await tx.rows(dropDetached(gone));
          return [
            ...[...after]
              .filter((n) => !before.has(n))
              .map((partition) => ({ action: 'created' as const, partition })),
            ...[...before]
              .filter((n) => !after.has(n))
              .map((partition) => ({ action: 'dropped' as const, partition })),
          ].map((c) => ({ ...c, table: t.table, by: 'pg_partman' as const }));
        }
      }
      const rows = await tx.rows<{ action: 'created' | 'dropped'; partition_name: string }>(ownRun, [
        t.table,
        t.interval,
        PERIODS_AHEAD,
        retention,
        args.now,
      ]);
      return rows.map((r) => ({
        table: t.table,
        action: r.action,
        partition: r.partition_name,
        by: 'partition_maintain' as const,
      }));
    });
    changes.push(...done);
    // A statement trigger (the ledger's TRUNCATE refusal, its balance deltas) fires only on the
    // table a statement names: the partitions just made get the parent's own copies, long before
    // their period comes.
    await sql.rows(guard, [t.table]);
  }
  return changes;
}

/*
 * SQL that the partitioning migrations (20261128171000, 20261129040000, 20261129050000 and
 * 20261129051000) run inside their DO blocks. Those migrations have run on deployed databases:
 * this text stays as it is, to the byte; a later migration that needs other SQL writes its own.
 */

/**
 * Creates pg_partman where the server offers it; a role that may not create it (a managed
 * server's) goes without, and `partition_maintain()` keeps the partitions.
 */
export const CREATE_PARTMAN = `  if exists (select 1 from pg_available_extensions where name = 'pg_partman') then
    begin
      create schema if not exists partman;
      create extension if not exists pg_partman schema partman;
    exception when insufficient_privilege then
      raise notice 'pg_partman is available but this role may not create it: partition_maintain() keeps the partitions';
    end;
  end if;`;

/**
 * Registers a table partitioned by month of `created_at`, whose rows before `v_next` (the next
 * month, a variable of the DO block) are already attached: with pg_partman from `v_next` on where
 * it was created, else a default partition and `partition_maintain()`'s coming months. `quoted`:
 * whether the partition table names are written in double quotes (as each migration wrote them).
 */
export function registerMonthlyPartitions(table: string, { quoted }: { quoted: boolean }): string {
  const name = (n: string) => (quoted ? `"${n}"` : n);
  return `  if to_regproc('partman.create_parent') is not null then
    perform partman.create_parent(p_parent_table => 'public.${table}', p_control => 'created_at',
      p_type => 'native', p_interval => 'monthly', p_premake => 3, p_start_partition => v_next::text,
      p_jobmon => false);
  else
    create table ${name(`${table}_default`)} partition of ${name(table)} default;
    perform partition_maintain('${table}', 'month', 3, null, now());
  end if;`;
}

/**
 * The first steps of undoing a partitioning migration: `table` taken off pg_partman where it was
 * registered, and made again as one plain table holding every row, without keys, indexes or
 * foreign keys (the migration adds its own).
 */
export function unpartitionStatements(table: string): string[] {
  return [
    `do $$
begin
  if to_regclass('partman.part_config') is not null then
    delete from partman.part_config where parent_table = 'public.${table}';
  end if;
end $$;`,
    `alter table ${table} rename to ${table}_partitioned;`,
    `create table ${table} (like ${table}_partitioned including defaults including constraints);`,
    `insert into ${table} select * from ${table}_partitioned;`,
    `drop table ${table}_partitioned cascade;`,
  ];
}
