import { expect } from 'chai';
import { maintainPartitions, PARTITIONED_TABLES, type PartitionedTable } from '#src/db/partitions.ts';
import { newId } from '#src/lib/ids.ts';
import { call } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';

/**
 * The outbox, partitioned by week (Migration20261129051000_partitioned_outbox, docs/scaling.md
 * "Partitioned tables"): a week goes once it is wholly past `OUTBOX_RETENTION_DAYS` and none of
 * its events still waits to be published.
 */

const DAY = 86_400_000;

const em = () => harness().service.deps.orm.em.fork();

async function partitionsOf(table: string): Promise<string[]> {
  const rows = await em().execute<{ name: string }[]>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ?::regclass order by c.relname`,
    [table],
  );
  return rows.map((r) => r.name);
}

/** `IYYY"w"IW` of a date in UTC, as pg_partman and partition_maintain name weekly partitions. */
async function week(d: Date): Promise<string> {
  const [row] = await em().execute<{ w: string }[]>(
    `select to_char(?::timestamptz at time zone 'UTC', 'IYYY"w"IW') as w`,
    [d],
  );
  return row!.w;
}

describe('the outbox, partitioned by week', () => {
  it('stores events in weekly partitions: this week, three ahead and a default; a new event in its week’s', async () => {
    const outbox = PARTITIONED_TABLES.find((t) => t.table === 'outbox_events');
    expect(outbox?.interval).to.equal('week');
    expect(outbox?.retentionDays(harness().service.deps.config)).to.equal(30);
    const names = await partitionsOf('outbox_events');
    for (let i = 0; i <= 3; i++)
      expect(names).to.include(`outbox_events_p${await week(new Date(Date.now() + i * 7 * DAY))}`);
    expect(names).to.include('outbox_events_default');

    const merchant = await payoutReadyMerchant();
    const created = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout() });
    expect(created.status).to.equal(201);
    const rows = await em().execute<{ at: string; created_at: Date }[]>(
      'select tableoid::regclass::text as at, created_at from outbox_events where payout_id = ?',
      [created.body.id],
    );
    expect(rows.length).to.be.above(0);
    for (const r of rows) expect(r.at).to.equal(`outbox_events_p${await week(new Date(r.created_at))}`);
  });

  it('drops a week wholly past retention only once every event in it was published', async () => {
    // A table of its own, shaped and kept as the outbox is (its rule, its retention), so that the
    // passes far from today leave this run's events alone; not registered with pg_partman, so
    // partition_maintain keeps it on either server.
    const probe: PartitionedTable = {
      table: 'outbox_probe',
      interval: 'week',
      retentionDays: () => 30,
      oldestKept: {
        name: 'test_outbox_probe_oldest',
        text: 'select min(created_at) as oldest from outbox_probe where published_at is null',
      },
    };
    const { sql, config } = harness().service.deps;
    const now = new Date();
    const at = (days: number) => new Date(now.getTime() + days * DAY);
    await em().execute(
      `create table outbox_probe (id uuid not null, published_at timestamptz, created_at timestamptz not null,
         primary key (id, created_at)) partition by range (created_at)`,
    );
    try {
      await em().execute('create table outbox_probe_default partition of outbox_probe default');
      // Weeks from 70 days back, four of them.
      await maintainPartitions(sql, { now: at(-70), config, tables: [probe] });
      const ids = { old: newId(), waiting: newId(), recent: newId() };
      await em().execute('insert into outbox_probe values (?, ?, ?), (?, null, ?), (?, ?, ?)', [
        ids.old,
        at(-68),
        at(-68),
        ids.waiting,
        at(-52),
        ids.recent,
        at(-1),
        at(-1),
      ]);
      const left = async () =>
        (await em().execute<{ id: string }[]>('select id from outbox_probe')).map((r) => r.id);
      const waitingWeek = `outbox_probe_p${await week(at(-52))}`;
      expect(await partitionsOf('outbox_probe')).to.include(waitingWeek);

      // The event still waiting keeps its week, and every week after it; older ones go.
      const first = await maintainPartitions(sql, { now, config, tables: [probe] });
      const dropped = first.filter((c) => c.action === 'dropped').map((c) => c.partition);
      expect(dropped).to.include(`outbox_probe_p${await week(at(-68))}`);
      expect(dropped).to.not.include(waitingWeek);
      expect((await left()).sort()).to.deep.equal([ids.waiting, ids.recent].sort());

      // Published, it goes with its week at the next pass.
      await em().execute('update outbox_probe set published_at = ? where id = ?', [now, ids.waiting]);
      const second = await maintainPartitions(sql, { now, config, tables: [probe] });
      expect(second.filter((c) => c.action === 'dropped').map((c) => c.partition)).to.include(waitingWeek);
      expect(await left()).to.deep.equal([ids.recent]);
    } finally {
      await em().execute('drop table outbox_probe');
    }
  });
});
