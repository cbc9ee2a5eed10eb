import { expect } from 'chai';
import { databaseBefore } from './before-migration.ts';

const MIGRATION = 'Migration20261129040000_partitioned_webhook_deliveries';
const EVENTS = 100_000;
const ATTEMPTS_PER_DELIVERY = 3;

/**
 * The migration that partitions the webhook deliveries and their attempts, run on a database of
 * its own holding ten weeks of them from before it (docs/scaling.md has the figures this
 * measures): every row ends up in its event's week, with its event's time, none lost, and the
 * attempts' foreign key holds.
 */
describe(`partitioning filled webhook deliveries and attempts (${MIGRATION})`, function () {
  this.timeout(300_000);
  const db = databaseBefore(
    MIGRATION,
    'hundreds of thousands of rows, measured on the server it is meant for',
  );

  it(`moves ${EVENTS.toLocaleString('en')} deliveries (1 % of them DEAD and sent again) and their attempts into weekly partitions of their events`, async () => {
    const em = db.orm.em.fork();
    // Right by construction: the foreign keys' triggers are off while seeding (this session only).
    await em.begin();
    await em.execute('set local session_replication_role = replica');
    await em.execute(
      `insert into tenants (id, name, created_at, updated_at) values (gen_random_uuid(), 'filled', now(), now())`,
    );
    // Ten weeks of events, one a minute apart on average; each published a second later.
    await em.execute(
      `insert into outbox_events (id, tenant_id, event_type, payload, published_at, created_at)
       select gen_random_uuid(), (select id from tenants), 'payout.created', '{}', at + interval '1 second', at
         from (select now() - random() * interval '70 days' as at from generate_series(1, ${EVENTS})) x`,
    );
    await em.execute(
      `insert into webhook_deliveries (id, tenant_id, event_id, event_type, target_url, target_origin, status,
          snapshot, attempts, created_at, updated_at)
       select gen_random_uuid(), tenant_id, id, event_type, 'https://hooks.example/filled', 'https://hooks.example:443',
              case when random() < 0.01 then 'DEAD' else 'SUCCEEDED' end, '{}', ${ATTEMPTS_PER_DELIVERY},
              published_at, published_at
         from outbox_events`,
    );
    // The DEAD ones sent again a day later (or past the boundary of their event's week).
    await em.execute(
      `insert into webhook_deliveries (id, tenant_id, event_id, event_type, target_url, target_origin, status,
          snapshot, attempts, redelivery_of, created_at, updated_at)
       select gen_random_uuid(), tenant_id, event_id, event_type, target_url, target_origin, 'SUCCEEDED', '{}', 1, id,
              created_at + interval '1 day', created_at + interval '1 day'
         from webhook_deliveries where status = 'DEAD'`,
    );
    await em.execute(
      `insert into webhook_delivery_attempts (id, tenant_id, delivery_id, event_id, event_type, attempt_number,
          target_url, status, response_status, created_at)
       select gen_random_uuid(), d.tenant_id, d.id, d.event_id, d.event_type, n, d.target_url,
              case when n < d.attempts then 'FAILED' else 'SUCCESS' end, 200, d.created_at + n * interval '10 seconds'
         from webhook_deliveries d cross join generate_series(1, ${ATTEMPTS_PER_DELIVERY}) n
        where n <= d.attempts`,
    );
    await em.commit();
    await em.execute('analyze outbox_events, webhook_deliveries, webhook_delivery_attempts');
    const [before] = await em.execute<{ deliveries: number; attempts: number }[]>(
      `select (select count(*)::int from webhook_deliveries) as deliveries,
              (select count(*)::int from webhook_delivery_attempts) as attempts`,
    );

    const started = process.hrtime.bigint();
    await db.orm.migrator.up({ to: MIGRATION });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    console.log(
      `      migration: ${seconds.toFixed(1)} s for ${before!.deliveries} deliveries and ${before!.attempts} attempts`,
    );

    const [after] = await em.execute<Record<string, number | string>[]>(
      `select (select count(*)::int from webhook_deliveries) as deliveries,
              (select count(*)::int from webhook_delivery_attempts) as attempts,
              -- Each delivery with its event's time, in its event's week.
              (select count(*)::int from webhook_deliveries d join outbox_events o on o.id = d.event_id
                where d.event_created_at <> o.created_at
                   or d.tableoid::regclass::text <> 'webhook_deliveries_p' || to_char(o.created_at at time zone 'UTC', 'IYYY"w"IW')) as misplaced,
              -- Each attempt with its delivery's, in the same week.
              (select count(*)::int from webhook_delivery_attempts a join webhook_deliveries d on d.id = a.delivery_id
                where a.event_created_at <> d.event_created_at
                   or a.tableoid::regclass::text <> 'webhook_delivery_attempts_p' || to_char(d.event_created_at at time zone 'UTC', 'IYYY"w"IW')) as attempts_misplaced,
              (select count(*)::int from pg_inherits where inhparent = 'webhook_deliveries'::regclass) as partitions,
              (select c.relkind::text from pg_class c where c.oid = 'webhook_delivery_attempts'::regclass) as kind,
              (select count(*)::int from pg_constraint where conname = 'webhook_delivery_attempts_delivery_id_tenant_foreign'
                  and conrelid = 'webhook_delivery_attempts'::regclass and convalidated) as foreign_key`,
    );
    expect(after).to.deep.include({
      deliveries: before!.deliveries,
      attempts: before!.attempts,
      misplaced: 0,
      attempts_misplaced: 0,
      kind: 'p',
      foreign_key: 1,
    });
    // Eleven or twelve weeks of history, three ahead, and the default (or none where pg_partman keeps them).
    expect(after!.partitions).to.be.within(14, 17);
    expect(seconds).to.be.lessThan(120);
  });
});
