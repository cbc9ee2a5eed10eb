import { expect } from 'chai';
import { databaseBefore } from './before-migration.ts';

const MIGRATION = 'Migration20261129051000_partitioned_outbox';
const EVENTS = 200_000;

/**
 * The migration that partitions the outbox by week, run on a database of its own holding sixty
 * days of events from before it, a few of them still waiting to be published (docs/scaling.md has
 * the figures this measures). Each event is copied into its week's partition; the waiting ones are
 * still found, oldest first, by the publisher's index.
 */
describe(`partitioning a filled outbox (${MIGRATION})`, function () {
  this.timeout(300_000);
  const db = databaseBefore(MIGRATION, 'hundreds of thousands of rows: the embedded database takes minutes');

  it(`moves ${EVENTS.toLocaleString('en')} events into the partitioned outbox`, async () => {
    const em = db.orm.em.fork();
    await em.execute(
      `insert into tenants (id, name, created_at, updated_at) values (gen_random_uuid(), 'filled', now(), now())`,
    );
    // One in a thousand still waits to be published.
    await em.execute(
      `insert into outbox_events (id, tenant_id, payout_id, event_type, payload, published_at, created_at)
       select gen_random_uuid(), (select id from tenants), gen_random_uuid(), 'payout.created', '{}',
              case when n % 1000 = 0 then null else now() end, now() - n * interval '25 seconds'
         from generate_series(1, ${EVENTS}) n`,
    );
    await em.execute('analyze outbox_events');

    const started = process.hrtime.bigint();
    await db.orm.migrator.up({ to: MIGRATION });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    console.log(`      migration: ${seconds.toFixed(1)} s`);

    const [counts] = await em.execute<Record<string, unknown>[]>(
      `select (select count(*)::int from outbox_events) as events,
              (select count(*)::int from outbox_events
                where tableoid::regclass::text <> 'outbox_events_p' || to_char(created_at at time zone 'UTC', 'IYYY"w"IW')) as elsewhere,
              (select count(*)::int from outbox_events where published_at is null) as waiting,
              (select c.relkind::text from pg_class c where c.oid = 'outbox_events'::regclass) as kind,
              (select array(select a.attname::text from pg_constraint k cross join unnest(k.conkey) with ordinality u(attnum, n)
                              join pg_attribute a on a.attrelid = k.conrelid and a.attnum = u.attnum
                             where k.conrelid = 'outbox_events'::regclass and k.contype = 'p' order by u.n)) as key`,
    );
    // Every event in its own week's partition.
    expect(counts).to.deep.equal({
      events: EVENTS,
      elsewhere: 0,
      waiting: EVENTS / 1000,
      kind: 'p',
      key: ['id', 'tenant_id', 'created_at'],
    });
    // The oldest waiting event, as the publisher asks for it.
    const [oldest] = await em.execute<{ n: number }[]>(
      `select count(*)::int as n from (select id from outbox_events where published_at is null
         order by created_at, id limit 10) w`,
    );
    expect(oldest?.n).to.equal(10);
    // No foreign key names the outbox's old (id, tenant_id) key.
    const onto = await em.execute(
      `select conname from pg_constraint where contype = 'f' and confrelid = 'outbox_events'::regclass`,
    );
    expect(onto).to.deep.equal([]);
  });
});
