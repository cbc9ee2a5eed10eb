import { Migration } from '@mikro-orm/migrations';
import { CREATE_PARTMAN } from '#src/db/partitions.ts';

/**
 * Partitions `webhook_deliveries` and `webhook_delivery_attempts` by ISO week (UTC) of their
 * event's creation time, `event_created_at` (docs/scaling.md, "Partitioned tables"), kept
 * `WEBHOOK_LOG_RETENTION_DAYS` by the `retention` job (src/db/partitions.ts).
 *
 * Every row of one event (its published deliveries, its redeliveries, all their attempts) carries
 * the event's `created_at`, so all of them sit in one partition: the unique keys, which gain
 * `event_created_at` (a partitioned table's keys must include its partition key), still say one
 * delivery per event and target, one open redelivery per event, and one record per delivery and
 * attempt number, however the event's rows straddle a week's boundary in time. Keys also gain
 * `tenant_id` (Citus-ready). The attempts' foreign key into the deliveries becomes
 * `(tenant_id, delivery_id, event_created_at)`; the deliveries' own `redelivery_of` foreign key
 * goes (a partition whose rows reference each other could not be detached): a redelivery is
 * written only from the DEAD delivery it names, read in the same transaction, and is of the same
 * event, so the two share a partition and leave together.
 *
 * On filled tables, by copying them: partitions are made from the week of the oldest event with
 * a delivery to three weeks ahead (by pg_partman where the server has it, else by
 * `partition_maintain()`), each row goes into its event's week, and the old tables go. Not the
 * timeline's way (the old table attached as one partition of everything before): pg_partman's
 * retention reads a partition's lower bound as the start of one period, so it would refuse a
 * `minvalue` bound and drop a partition holding weeks of history as soon as its first week is
 * past. The first pass of the `retention` job then drops the weeks past the retention.
 */
export class Migration20261129040000_partitioned_webhook_deliveries extends Migration {
  override name = 'Migration20261129040000_partitioned_webhook_deliveries';

  override up(): void | Promise<void> {
    this.addSql(`do $$
declare
  v_first timestamp;
  v_weeks int;
  v_table text;
  r record;
begin
  alter table webhook_delivery_attempts drop constraint webhook_delivery_attempts_delivery_id_tenant_foreign;
  alter table webhook_deliveries drop constraint webhook_deliveries_redelivery_of_tenant_foreign;
  -- The week of the oldest event with a delivery: partitions are made from there on.
  select date_trunc('week', min(o.created_at) at time zone 'UTC') into v_first
    from webhook_deliveries d join outbox_events o on o.id = d.event_id;
  v_first := least(coalesce(v_first, 'infinity'), date_trunc('week', now() at time zone 'UTC'));
  v_weeks := ceil(extract(epoch from (now() at time zone 'UTC') - v_first) / 604800)::int + 3;

  foreach v_table in array array['webhook_deliveries', 'webhook_delivery_attempts'] loop
    execute format('alter table %I rename to %I', v_table, v_table || '_unpartitioned');
    -- Index (and key) names are the new table's: the old ones step aside until the table goes.
    for r in select c.relname from pg_index i join pg_class c on c.oid = i.indexrelid
              where i.indrelid = (v_table || '_unpartitioned')::regclass loop
      execute format('alter index %I rename to %I', r.relname, left('unpartitioned_' || r.relname, 63));
    end loop;
    execute format('create table %I (like %I including defaults including constraints, event_created_at timestamptz not null)
      partition by range (event_created_at)', v_table, v_table || '_unpartitioned');
  end loop;

  alter table webhook_deliveries add constraint webhook_deliveries_pkey primary key (id, tenant_id, event_created_at);
  create unique index webhook_deliveries_published_unique on webhook_deliveries (event_id, target_url, tenant_id, event_created_at)
    where redelivery_of is null;
  create unique index webhook_deliveries_open_redelivery_unique on webhook_deliveries (event_id, tenant_id, event_created_at)
    where redelivery_of is not null and status in ('PENDING', 'ATTEMPTING', 'RETRY_SCHEDULED');
  create index webhook_deliveries_due_index on webhook_deliveries (due_at) where due_at is not null;
  create index webhook_deliveries_attempting_index on webhook_deliveries (target_origin) where status = 'ATTEMPTING';
  create index webhook_deliveries_dead_index on webhook_deliveries (created_at, id) where status = 'DEAD';
  create index webhook_deliveries_state_index on webhook_deliveries (status);
  create index webhook_deliveries_dead_since_index on webhook_deliveries (updated_at) include (event_id, created_at, id)
    where status = 'DEAD';
  create index webhook_deliveries_redeliveries_index on webhook_deliveries (event_id) where redelivery_of is not null;
  create index webhook_deliveries_tenant_dead_index on webhook_deliveries (tenant_id, created_at, id) where status = 'DEAD';
  alter table webhook_deliveries
    add constraint webhook_deliveries_tenant_id_foreign foreign key (tenant_id) references tenants (id),
    add constraint webhook_deliveries_event_id_tenant_foreign foreign key (tenant_id, event_id) references outbox_events (tenant_id, id);

  alter table webhook_delivery_attempts add constraint webhook_delivery_attempts_pkey primary key (id, tenant_id, event_created_at);
  alter table webhook_delivery_attempts add constraint webhook_delivery_attempts_delivery_attempt_unique
    unique (delivery_id, attempt_number, tenant_id, event_created_at);
  create index webhook_delivery_attempts_tenant_id_created_at_id_index on webhook_delivery_attempts (tenant_id, created_at, id);
  create index webhook_delivery_attempts_status_index on webhook_delivery_attempts (tenant_id, status, created_at, id);
  create index webhook_delivery_attempts_event_type_index on webhook_delivery_attempts (tenant_id, event_type, created_at, id);
  create index webhook_delivery_attempts_payout_index on webhook_delivery_attempts (tenant_id, payout_id, created_at, id);
  alter table webhook_delivery_attempts
    add constraint webhook_delivery_attempts_tenant_id_foreign foreign key (tenant_id) references tenants (id);

  -- The weeks from the oldest event's to three ahead: by pg_partman where the server has it.
${CREATE_PARTMAN}
  foreach v_table in array array['webhook_deliveries', 'webhook_delivery_attempts'] loop
    if to_regproc('partman.create_parent') is not null then
      perform partman.create_parent(p_parent_table => 'public.' || v_table, p_control => 'event_created_at',
        p_type => 'native', p_interval => 'weekly', p_premake => 3,
        p_start_partition => (v_first at time zone 'UTC')::text, p_jobmon => false);
    else
      execute format('create table %I partition of %I default', v_table || '_default', v_table);
      perform partition_maintain(v_table, 'week', v_weeks, null, v_first at time zone 'UTC');
    end if;
  end loop;

  -- The rows, each into its event's week; the outbox gives the event's time.
  insert into webhook_deliveries
  select d.*, o.created_at from webhook_deliveries_unpartitioned d
    join outbox_events o on o.id = d.event_id and o.tenant_id = d.tenant_id;
  insert into webhook_delivery_attempts
  select a.*, o.created_at from webhook_delivery_attempts_unpartitioned a
    join webhook_deliveries_unpartitioned d on d.id = a.delivery_id and d.tenant_id = a.tenant_id
    join outbox_events o on o.id = d.event_id and o.tenant_id = d.tenant_id;
  drop table webhook_delivery_attempts_unpartitioned;
  drop table webhook_deliveries_unpartitioned;
  -- Checked once over the copied rows, rather than row by row as they went in.
  alter table webhook_delivery_attempts
    add constraint webhook_delivery_attempts_delivery_id_tenant_foreign foreign key (tenant_id, delivery_id, event_created_at)
      references webhook_deliveries (tenant_id, id, event_created_at);
end $$;`);
  }

  override down(): void | Promise<void> {
    this.addSql(`do $$
begin
  if to_regclass('partman.part_config') is not null then
    delete from partman.part_config
     where parent_table in ('public.webhook_deliveries', 'public.webhook_delivery_attempts');
  end if;
end $$;`);
    for (const table of ['webhook_delivery_attempts', 'webhook_deliveries']) {
      this.addSql(`alter table ${table} rename to ${table}_partitioned;`);
      this.addSql(
        `create table ${table} (like ${table}_partitioned including defaults including constraints);`,
      );
    }
    for (const table of ['webhook_deliveries', 'webhook_delivery_attempts']) {
      this.addSql(`insert into ${table} select * from ${table}_partitioned;`);
    }
    this.addSql('drop table webhook_delivery_attempts_partitioned cascade;');
    this.addSql('drop table webhook_deliveries_partitioned cascade;');
    this.addSql('alter table webhook_deliveries drop column event_created_at;');
    this.addSql('alter table webhook_delivery_attempts drop column event_created_at;');
    this.addSql(`alter table webhook_deliveries add constraint webhook_deliveries_pkey primary key (id),
      add constraint webhook_deliveries_id_tenant_id_unique unique (id, tenant_id),
      add constraint webhook_deliveries_tenant_id_foreign foreign key (tenant_id) references tenants (id),
      add constraint webhook_deliveries_event_id_tenant_foreign foreign key (tenant_id, event_id) references outbox_events (tenant_id, id),
      add constraint webhook_deliveries_redelivery_of_tenant_foreign foreign key (tenant_id, redelivery_of)
        references webhook_deliveries (tenant_id, id) on delete set null (redelivery_of);`);
    this.addSql(`create unique index webhook_deliveries_published_unique on webhook_deliveries (event_id, target_url, tenant_id) where redelivery_of is null;
      create unique index webhook_deliveries_open_redelivery_unique on webhook_deliveries (event_id, tenant_id)
        where redelivery_of is not null and status in ('PENDING', 'ATTEMPTING', 'RETRY_SCHEDULED');
      create index webhook_deliveries_due_index on webhook_deliveries (due_at) where due_at is not null;
      create index webhook_deliveries_attempting_index on webhook_deliveries (target_origin) where status = 'ATTEMPTING';
      create index webhook_deliveries_dead_index on webhook_deliveries (created_at, id) where status = 'DEAD';
      create index webhook_deliveries_state_index on webhook_deliveries (status);
      create index webhook_deliveries_dead_since_index on webhook_deliveries (updated_at) include (event_id, created_at, id) where status = 'DEAD';
      create index webhook_deliveries_redeliveries_index on webhook_deliveries (event_id) where redelivery_of is not null;
      create index webhook_deliveries_tenant_dead_index on webhook_deliveries (tenant_id, created_at, id) where status = 'DEAD';`);
    this.addSql(`alter table webhook_delivery_attempts add constraint webhook_delivery_attempts_pkey primary key (id),
      add constraint webhook_delivery_attempts_delivery_attempt_unique unique (delivery_id, attempt_number, tenant_id),
      add constraint webhook_delivery_attempts_tenant_id_foreign foreign key (tenant_id) references tenants (id),
      add constraint webhook_delivery_attempts_delivery_id_tenant_foreign foreign key (tenant_id, delivery_id)
        references webhook_deliveries (tenant_id, id);
      create index webhook_delivery_attempts_tenant_id_created_at_id_index on webhook_delivery_attempts (tenant_id, created_at, id);
      create index webhook_delivery_attempts_status_index on webhook_delivery_attempts (tenant_id, status, created_at, id);
      create index webhook_delivery_attempts_event_type_index on webhook_delivery_attempts (tenant_id, event_type, created_at, id);
      create index webhook_delivery_attempts_payout_index on webhook_delivery_attempts (tenant_id, payout_id, created_at, id);`);
  }
}
