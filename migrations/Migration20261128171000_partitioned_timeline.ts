import { Migration } from '@mikro-orm/migrations';
import { CREATE_PARTMAN, registerMonthlyPartitions, unpartitionStatements } from '#src/db/partitions.ts';

/**
 * Partitions `payout_status_timeline` by month of `created_at` (docs/scaling.md, "Partitioned
 * tables"), on a filled table without copying it: the existing table becomes the partition of
 * everything before next month (named as this month's, the way pg_partman names them), and the
 * months after it are created ahead, by pg_partman where the server has it, else by
 * `partition_maintain()`, the function the `retention` job also calls (src/db/partitions.ts).
 * A default partition catches rows no partition covers yet. Timeline rows are never dropped.
 *
 * Also creates `partition_maintain()`: creates the partitions of the coming periods (moving into
 * a new one the rows its range holds in the default partition), and detaches and drops those
 * wholly past a retention, when one is given.
 */
export class Migration20261128171000_partitioned_timeline extends Migration {
  override name = 'Migration20261128171000_partitioned_timeline';

  override up(): void | Promise<void> {
    this.addSql(MAINTAIN_FUNCTION);
    this.addSql(`do $$
declare
  v_start timestamptz := date_trunc('month', now() at time zone 'UTC') at time zone 'UTC';
  v_next timestamptz := v_start + interval '1 month';
  v_current text := 'payout_status_timeline_p' || to_char(v_start at time zone 'UTC', 'YYYY_MM');
begin
  alter table payout_status_timeline rename to payout_status_timeline_filled;
  -- A partition's primary key is its parent's, (id, created_at): attaching builds it.
  alter table payout_status_timeline_filled drop constraint payout_status_timeline_pkey;
  alter index payout_status_timeline_payout_id_created_at_index rename to payout_status_timeline_filled_payout_index;
  create table payout_status_timeline (like payout_status_timeline_filled including defaults including constraints)
    partition by range (created_at);
  alter table payout_status_timeline add constraint payout_status_timeline_pkey primary key (id, created_at);
  create index payout_status_timeline_payout_id_created_at_index on payout_status_timeline (payout_id, created_at);
  alter table payout_status_timeline
    add constraint payout_status_timeline_tenant_id_foreign foreign key (tenant_id) references tenants (id),
    add constraint payout_status_timeline_payout_id_tenant_foreign foreign key (tenant_id, payout_id) references payouts (tenant_id, id);
  execute format('alter table payout_status_timeline_filled rename to %I', v_current);
  execute format('alter table payout_status_timeline attach partition %I for values from (minvalue) to (%L)', v_current, v_next);
  -- A role that may not create the extension (a managed server's) goes without: the service's
  -- own maintenance takes over, and the migration does not fail for it.
${CREATE_PARTMAN}
${registerMonthlyPartitions('payout_status_timeline', { quoted: false })}
end $$;`);
  }

  override down(): void | Promise<void> {
    for (const text of unpartitionStatements('payout_status_timeline')) this.addSql(text);
    this.addSql(`alter table payout_status_timeline add constraint payout_status_timeline_pkey primary key (id),
      add constraint payout_status_timeline_tenant_id_foreign foreign key (tenant_id) references tenants (id),
      add constraint payout_status_timeline_payout_id_tenant_foreign foreign key (tenant_id, payout_id) references payouts (tenant_id, id);`);
    this.addSql(
      'create index payout_status_timeline_payout_id_created_at_index on payout_status_timeline (payout_id, created_at);',
    );
    this.addSql('drop function partition_maintain(text, text, int, interval, timestamptz);');
  }
}

/**
 * partition_maintain(parent, 'month' | 'week', periods ahead, retention or null, now): what
 * pg_partman's run_maintenance does for this service's tables, where the server has no
 * pg_partman. Partitions are named `<parent>_p<period>` as pg_partman names them (YYYY_MM,
 * IYYY"w"IW), bounded in UTC. One caller at a time per table (a transaction-scoped advisory lock).
 */
const MAINTAIN_FUNCTION = `create or replace function partition_maintain(
  p_parent text, p_interval text, p_ahead int, p_retention interval, p_now timestamptz)
returns table (action text, partition_name text) language plpgsql as $fn$
declare
  v_step interval := case p_interval when 'month' then interval '1 month' when 'week' then interval '1 week' end;
  v_format text := case p_interval when 'month' then 'YYYY_MM' when 'week' then 'IYYY"w"IW' end;
  v_column text;
  v_default text := p_parent || '_default';
  v_first timestamp;
  v_low timestamptz;
  v_high timestamptz;
  v_name text;
  v_waiting bigint;
  r record;
begin
  if v_step is null then
    raise exception 'partition_maintain: unknown interval %', p_interval;
  end if;
  select a.attname into strict v_column
    from pg_partitioned_table pt join pg_attribute a on a.attrelid = pt.partrelid and a.attnum = pt.partattrs[0]
   where pt.partrelid = p_parent::regclass;
  perform pg_advisory_xact_lock(hashtext('partition_maintain:' || p_parent));
  v_first := date_trunc(p_interval, p_now at time zone 'UTC');
  for i in 0..p_ahead loop
    v_low := (v_first + v_step * i) at time zone 'UTC';
    v_high := (v_first + v_step * (i + 1)) at time zone 'UTC';
    v_name := p_parent || '_p' || to_char(v_first + v_step * i, v_format);
    continue when to_regclass(v_name) is not null;
    v_waiting := 0;
    if to_regclass(v_default) is not null then
      execute format('select count(*) from %I where %I >= $1 and %I < $2', v_default, v_column, v_column)
        into v_waiting using v_low, v_high;
    end if;
    if v_waiting = 0 then
      execute format('create table %I partition of %I for values from (%L) to (%L)', v_name, p_parent, v_low, v_high);
    else
      -- The default partition holds rows of this range: they move into the new partition first.
      execute format('create table %I (like %I including defaults including constraints)', v_name, p_parent);
      execute format('with moved as (delete from %I where %I >= $1 and %I < $2 returning *) insert into %I select * from moved',
        v_default, v_column, v_column, v_name) using v_low, v_high;
      execute format('alter table %I attach partition %I for values from (%L) to (%L)', p_parent, v_name, v_low, v_high);
    end if;
    action := 'created'; partition_name := v_name;
    return next;
  end loop;
  if p_retention is not null then
    for r in
      select c.relname,
             (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \\(''([^'']+)''\\)'))[1]::timestamptz as high
        from pg_inherits i join pg_class c on c.oid = i.inhrelid
       where i.inhparent = p_parent::regclass and c.relname <> v_default
       order by 2
    loop
      continue when r.high is null or r.high > p_now - p_retention;
      execute format('alter table %I detach partition %I', p_parent, r.relname);
      execute format('drop table %I', r.relname);
      action := 'dropped'; partition_name := r.relname;
      return next;
    end loop;
    if to_regclass(v_default) is not null then
      execute format('delete from %I where %I < $1', v_default, v_column) using p_now - p_retention;
    end if;
  end if;
end
$fn$;`;
