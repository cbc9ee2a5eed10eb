import { Migration } from '@mikro-orm/migrations';
import { CREATE_PARTMAN, registerMonthlyPartitions } from '#src/db/partitions.ts';

/**
 * Partitions `ledger_entries` and `audit` by month of `created_at` (docs/scaling.md, "Partitioned
 * tables"), on filled tables without copying them, as the timeline was
 * (Migration20261128171000_partitioned_timeline): each existing table becomes the partition of
 * everything before next month, named as this month's; the months after it are created ahead by
 * pg_partman where the server has it, else by `partition_maintain()`. Neither table is ever
 * dropped from: no retention, a month's partition stays attached for ever.
 *
 * Each table's keys gain the partition key: `(id, created_at)`. Its other indexes are created on
 * the partitioned table and the old table's equal ones are attached to them, not built again. The
 * triggers move to the partitioned table: the row triggers (the ledger's deferred balance check,
 * both tables' refusal of UPDATE and DELETE) are cloned by PostgreSQL to every partition. The
 * statement triggers (the ledger's refusal of TRUNCATE and its balance deltas) are not: PostgreSQL
 * fires them only for the table a statement names, so `partition_guard()`, created here, copies
 * them onto every partition, and the `retention` job calls it after creating partitions.
 */
export class Migration20261129050000_partitioned_ledger_audit extends Migration {
  override name = 'Migration20261129050000_partitioned_ledger_audit';

  override up(): void | Promise<void> {
    this.addSql(GUARD_FUNCTION);
    // Migrations run in one transaction: entries an earlier one wrote (the backfill) still wait
    // for their deferred balance check, and a table with pending trigger events cannot be
    // altered. The check runs now, and is deferred again for what follows.
    this.addSql('set constraints "ledger_entries_balanced" immediate;');
    this.addSql(
      partitionFilled('ledger_entries', {
        indexes: LEDGER_INDEXES,
        triggers: LEDGER_TRIGGERS,
      }),
    );
    this.addSql('set constraints "ledger_entries_balanced" deferred;');
    this.addSql(partitionFilled('audit', { indexes: AUDIT_INDEXES, triggers: AUDIT_TRIGGERS }));
  }

  override down(): void | Promise<void> {
    this.addSql(unpartition('ledger_entries', LEDGER_INDEXES, LEDGER_TRIGGERS));
    this.addSql(unpartition('audit', AUDIT_INDEXES, AUDIT_TRIGGERS));
    this.addSql('drop function partition_guard(text);');
  }
}

/** [name, definition after `on <table>`] of each secondary index. */
type Indexes = readonly (readonly [string, string])[];
/** [name, create statement with `<table>` where the table goes] of each trigger. */
type Triggers = readonly (readonly [string, string])[];

const LEDGER_INDEXES: Indexes = [
  ['ledger_entries_transaction_idx', '("transaction_id")'],
  ['ledger_entries_account_idx', '("account", "created_at", "id")'],
  ['ledger_entries_payout_idx', '("payout_id", "created_at", "id") where "payout_id" is not null'],
  ['ledger_entries_movements_idx', '("tenant_id", "created_at", "id") where "movement" is not null'],
  ['ledger_entries_cause_idx', '("cause_id")'],
];

const LEDGER_TRIGGERS: Triggers = [
  [
    'ledger_entries_balanced',
    'create constraint trigger "ledger_entries_balanced" after insert on <table> deferrable initially deferred for each row execute function "ledger_entries_balanced_fn"()',
  ],
  [
    'ledger_entries_immutable',
    'create trigger "ledger_entries_immutable" before update or delete on <table> for each row execute function "ledger_entries_immutable_fn"()',
  ],
  [
    'ledger_entries_no_truncate',
    'create trigger "ledger_entries_no_truncate" before truncate on <table> for each statement execute function "ledger_entries_immutable_fn"()',
  ],
  [
    'ledger_entries_balances',
    'create trigger "ledger_entries_balances" after insert on <table> referencing new table as added for each statement execute function "ledger_entries_balances_fn"()',
  ],
];

const AUDIT_INDEXES: Indexes = [
  ['audit_operator_created_idx', '("operator_id", "created_at", "id")'],
  ['audit_created_idx', '("created_at", "id")'],
  ['audit_target_ids_idx', 'using gin ("target_ids")'],
];

const AUDIT_TRIGGERS: Triggers = [
  [
    'audit_immutable',
    'create trigger "audit_immutable" before update or delete on <table> for each row execute function "audit_audit_immutable_fn"()',
  ],
];

const on = (text: string, table: string) => text.replace('<table>', `"${table}"`);

/** The DO block that turns the filled `table` into the monthly-partitioned one (see above). */
function partitionFilled(table: string, { indexes, triggers }: { indexes: Indexes; triggers: Triggers }) {
  return `do $$
declare
  v_start timestamptz := date_trunc('month', now() at time zone 'UTC') at time zone 'UTC';
  v_next timestamptz := v_start + interval '1 month';
  v_current text := '${table}_p' || to_char(v_start at time zone 'UTC', 'YYYY_MM');
begin
  alter table "${table}" rename to "${table}_filled";
  -- A partition's primary key is its parent's, (id, created_at): attaching builds it.
  alter table "${table}_filled" drop constraint "${table}_pkey";
${triggers.map(([name]) => `  drop trigger "${name}" on "${table}_filled";`).join('\n')}
${indexes.map(([name]) => `  alter index "${name}" rename to "${name}_filled";`).join('\n')}
  create table "${table}" (like "${table}_filled" including defaults including constraints)
    partition by range (created_at);
  alter table "${table}" add constraint "${table}_pkey" primary key ("id", "created_at");
${indexes.map(([name, def]) => `  create index "${name}" on "${table}" ${def};`).join('\n')}
${triggers.map(([, text]) => `  ${on(text, table)};`).join('\n')}
  execute format('alter table %I rename to %I', '${table}_filled', v_current);
  execute format('alter table %I attach partition %I for values from (minvalue) to (%L)', '${table}', v_current, v_next);
${CREATE_PARTMAN}
${registerMonthlyPartitions(table, { quoted: true })}
  perform partition_guard('${table}');
end $$;`;
}

/** Back to one plain table holding every row, with its indexes and triggers. */
function unpartition(table: string, indexes: Indexes, triggers: Triggers): string {
  return `do $$
begin
  if to_regclass('partman.part_config') is not null then
    delete from partman.part_config where parent_table = 'public.${table}';
  end if;
  alter table "${table}" rename to "${table}_partitioned";
  create table "${table}" (like "${table}_partitioned" including defaults including constraints);
  insert into "${table}" select * from "${table}_partitioned";
  drop table "${table}_partitioned" cascade;
  alter table "${table}" add constraint "${table}_pkey" primary key ("id");
${indexes.map(([name, def]) => `  create index "${name}" on "${table}" ${def};`).join('\n')}
${triggers.map(([, text]) => `  ${on(text, table)};`).join('\n')}
end $$;`;
}

/**
 * partition_guard(parent): copies each statement-level trigger of a partitioned table onto every
 * partition that lacks it (same name, same definition). PostgreSQL clones row triggers to
 * partitions but fires a statement trigger only on the table the statement names: without the
 * copies, `truncate ledger_entries_p2026_11` or an insert naming a partition would skip the
 * ledger's TRUNCATE refusal and its balance deltas. A statement naming the parent still fires the
 * parent's trigger alone. Returns the partitions it changed.
 */
const GUARD_FUNCTION = `create or replace function partition_guard(p_parent text)
returns setof text language plpgsql as $fn$
declare
  v_parent text;
  r record;
begin
  select format('%I.%I', n.nspname, c.relname) into strict v_parent
    from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.oid = p_parent::regclass;
  for r in
    select format('%I.%I', pn.nspname, pc.relname) as part, pc.oid as part_oid, t.tgname, pg_get_triggerdef(t.oid) as def
      from pg_trigger t
      join pg_inherits i on i.inhparent = t.tgrelid
      join pg_class pc on pc.oid = i.inhrelid
      join pg_namespace pn on pn.oid = pc.relnamespace
     where t.tgrelid = p_parent::regclass and not t.tgisinternal and (t.tgtype & 1) = 0
       and not exists (select 1 from pg_trigger x where x.tgrelid = pc.oid and x.tgname = t.tgname)
     order by pc.relname, t.tgname
  loop
    execute replace(r.def, ' ON ' || v_parent || ' ', ' ON ' || r.part || ' ');
    return next r.part || ': ' || r.tgname;
  end loop;
end
$fn$;`;
