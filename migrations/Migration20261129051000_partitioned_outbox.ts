import { Migration } from '@mikro-orm/migrations';
import { CREATE_PARTMAN, unpartitionStatements } from '#src/db/partitions.ts';

/**
 * Partitions `outbox_events` by week of `created_at` (docs/scaling.md, "Partitioned tables"), named
 * `outbox_events_pIYYYwIW` as pg_partman names weekly partitions: weeks, as the webhook deliveries',
 * so that an event and its deliveries share partition bounds. The weeks from the oldest event's to
 * three ahead are made by pg_partman where the server has it, else by `partition_maintain()`, and
 * the events are copied into them. Not attached whole as the timeline was: the outbox has a
 * retention, and pg_partman's cannot read a partition that starts at MINVALUE (nor would it read
 * one that spans many weeks as more than its first).
 *
 * The key becomes `(id, tenant_id, created_at)`: the partition key, and `tenant_id` for Citus. The
 * unique `(id, tenant_id)` goes with the old key (a partitioned table's unique keys must include
 * its partition key), and so does the deliveries' foreign key onto it: a partition past retention
 * could not be detached while a delivery named one of its events. The `retention` job drops a week
 * once it is wholly past `OUTBOX_RETENTION_DAYS` and holds no unpublished event
 * (src/db/partitions.ts).
 */
export class Migration20261129051000_partitioned_outbox extends Migration {
  override name = 'Migration20261129051000_partitioned_outbox';

  override up(): void | Promise<void> {
    this.addSql(`do $$
declare
  v_first timestamp;
  v_weeks int;
begin
  alter table webhook_deliveries drop constraint if exists webhook_deliveries_event_id_tenant_foreign;
  -- The oldest event's week: partitions are made from there on.
  select date_trunc('week', min(created_at) at time zone 'UTC') into v_first from outbox_events;
  v_first := least(coalesce(v_first, 'infinity'), date_trunc('week', now() at time zone 'UTC'));
  v_weeks := ceil(extract(epoch from (now() at time zone 'UTC') - v_first) / 604800)::int + 3;

  alter table outbox_events rename to outbox_events_unpartitioned;
  -- Its key and indexes step aside (their names are the new table's); the table goes below.
  alter table outbox_events_unpartitioned drop constraint outbox_events_pkey,
    drop constraint outbox_events_id_tenant_id_unique, drop constraint outbox_events_tenant_id_foreign;
  drop index outbox_events_payout_id_index;
  drop index outbox_events_unpublished_index;
  create table outbox_events (like outbox_events_unpartitioned including defaults including constraints)
    partition by range (created_at);
  alter table outbox_events add constraint outbox_events_pkey primary key (id, tenant_id, created_at);
  create index outbox_events_payout_id_index on outbox_events (payout_id);
  create index outbox_events_unpublished_index on outbox_events (created_at, id) where published_at is null;
  alter table outbox_events
    add constraint outbox_events_tenant_id_foreign foreign key (tenant_id) references tenants (id);

  -- The weeks from the oldest event's to three ahead: by pg_partman where the server has it.
${CREATE_PARTMAN}
  if to_regproc('partman.create_parent') is not null then
    perform partman.create_parent(p_parent_table => 'public.outbox_events', p_control => 'created_at',
      p_type => 'native', p_interval => 'weekly', p_premake => 3,
      p_start_partition => (v_first at time zone 'UTC')::text, p_jobmon => false);
  else
    create table outbox_events_default partition of outbox_events default;
    perform partition_maintain('outbox_events', 'week', v_weeks, null, v_first at time zone 'UTC');
  end if;

  -- The events, each into its week.
  insert into outbox_events select * from outbox_events_unpartitioned;
  drop table outbox_events_unpartitioned;
end $$;`);
  }

  override down(): void | Promise<void> {
    for (const text of unpartitionStatements('outbox_events')) this.addSql(text);
    this.addSql(`alter table outbox_events add constraint outbox_events_pkey primary key (id),
      add constraint outbox_events_id_tenant_id_unique unique (id, tenant_id),
      add constraint outbox_events_tenant_id_foreign foreign key (tenant_id) references tenants (id);`);
    this.addSql('create index outbox_events_payout_id_index on outbox_events (payout_id);');
    this.addSql(
      'create index outbox_events_unpublished_index on outbox_events (created_at, id) where published_at is null;',
    );
    this.addSql(`alter table webhook_deliveries add constraint webhook_deliveries_event_id_tenant_foreign
      foreign key (tenant_id, event_id) references outbox_events (tenant_id, id);`);
  }
}
