import { expect } from 'chai';
import pg from 'pg';
import { databaseBefore } from './before-migration.ts';

const MIGRATION = 'Migration20261128171000_partitioned_timeline';
const ROWS = 1_000_000;
const PER_PAYOUT = 10;

/**
 * The migration that partitions the timeline, run on a database of its own holding a million
 * timeline rows from before it (docs/scaling.md has the figures this measures). It turns the
 * filled table into the partition of everything before next month instead of copying it.
 */
describe('partitioning a filled timeline (Migration20261128171000)', function () {
  this.timeout(180_000);
  const db = databaseBefore(
    MIGRATION,
    'a million rows: the embedded database holds them in memory and takes minutes',
  );

  it(`moves ${ROWS.toLocaleString('en')} timeline rows into the partitioned table, in under a minute`, async () => {
    const em = db.orm.em.fork();
    // The rows are made with the foreign keys' triggers off (this session only): they are right by
    // construction, and checking a million of them would take most of the test's time.
    await em.begin();
    await em.execute('set local session_replication_role = replica');
    await em.execute(
      `insert into tenants (id, name, created_at, updated_at) values (gen_random_uuid(), 'filled', now(), now())`,
    );
    await em.execute(
      `insert into payouts (id, tenant_id, status, snapshot, destination_type, destination_country, destination_currency,
          destination_amount, destination_account_unique, destination_provider_name, settlement_currency, settlement_network,
          settlement_amount, exchange_rate, mid_market_rate, platform_fee_amount, network_fee_amount, total_fee_amount,
          received_amount, created_at, updated_at)
       select gen_random_uuid(), (select id from tenants), 'CREATED', '{}', 'BANK_ACCOUNT', 'NG', 'NGN', 1000, '0123456789',
              'Bank', 'USDT', 'TRON', 0, 0, 0, 0, 0, 0, 0, now() - n * interval '30 seconds', now()
         from generate_series(1, ${ROWS / PER_PAYOUT}) as n`,
    );
    // A year of history, ten rows per payout.
    await em.execute(
      `insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code, created_at)
       select gen_random_uuid(), p.tenant_id, p.id, null, 'CREATED', 'SYSTEM', 'PAYOUT_CREATED',
              now() - random() * interval '365 days'
         from payouts p cross join generate_series(1, ${PER_PAYOUT})`,
    );
    await em.commit();
    await em.execute('analyze payout_status_timeline');

    // The locks the migration takes on the timeline, as another session sees them.
    const watcher = new pg.Client({ connectionString: db.url });
    await watcher.connect();
    const seen = new Set<string>();
    let watching = true;
    const watch = (async () => {
      while (watching) {
        const { rows } = await watcher.query<{ relation: string; mode: string }>(
          `select c.relname as relation, l.mode from pg_locks l join pg_class c on c.oid = l.relation
            where c.relname like 'payout_status_timeline%' and l.granted and l.pid <> pg_backend_pid()`,
        );
        for (const r of rows) seen.add(`${r.relation}: ${r.mode}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();
    const started = process.hrtime.bigint();
    await db.orm.migrator.up({ to: MIGRATION });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    watching = false;
    await watch;
    await watcher.end();
    console.log(`      migration: ${seconds.toFixed(1)} s; locks seen: ${[...seen].sort().join('; ')}`);

    const [counts] = await em.execute<{ total: number; history: number; kind: string }[]>(
      `select (select count(*)::int from payout_status_timeline) as total,
              (select count(*)::int from payout_status_timeline
                where tableoid = ('payout_status_timeline_p' || to_char(now() at time zone 'UTC', 'YYYY_MM'))::regclass) as history,
              (select c.relkind::text from pg_class c where c.oid = 'payout_status_timeline'::regclass) as kind`,
    );
    expect(counts).to.deep.equal({ total: ROWS, history: ROWS, kind: 'p' });
    expect(seconds).to.be.lessThan(60);
  });
});
