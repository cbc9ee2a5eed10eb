import { expect } from 'chai';
import { maintainPartitions, PARTITIONED_TABLES, type PartitionedTable } from '#src/db/partitions.ts';
import { newId } from '#src/lib/ids.ts';
import { call } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';
import { skipBecause } from '../skip.ts';

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

  it('drops a week wholly past retention only once every event in it was published (partition_maintain)', async () => {
    // Not registered with pg_partman: partition_maintain keeps it on either server.
    await sparesWaitingEvents('outbox_probe', async (probe, from) => {
      await em().execute('create table outbox_probe_default partition of outbox_probe default');
      // Four weeks from 70 days back, as a pass then would have made them.
      const { sql, config } = harness().service.deps;
      await maintainPartitions(sql, { now: from, config, tables: [probe] });
    });
  });

  it('does the same through pg_partman where the server has it', async function () {
    const [row] = await em().execute<{ found: boolean }[]>(
      `select to_regproc('partman.create_parent') is not null as found`,
    );
    if (!row?.found) {
      skipBecause(
        this,
        'no pg_partman on this server (postgresql-15-partman): the test before covers that path',
      );
    }
    // pg_partman makes every week from the start given on, and keeps them by the real clock.
    await sparesWaitingEvents('outbox_probe_partman', async (_, from) => {
      await em().execute(
        `select partman.create_parent(p_parent_table => 'public.outbox_probe_partman', p_control => 'created_at',
           p_type => 'native', p_interval => 'weekly', p_premake => 3, p_start_partition => ?, p_jobmon => false)`,
        [from.toISOString()],
      );
    });
  });
});

/**
 * On a table of its own, shaped and kept as the outbox is (its rule, its retention), so that the
 * passes leave this run's events alone: weeks from 70 days back, an event published 68 days ago,
 * one still waiting from 52 days ago and a recent one. A pass drops the old event's week but spares
 * the waiting one's; once it is published, the next pass drops its week too.
 */
async function sparesWaitingEvents(
  table: string,
  register: (probe: PartitionedTable, from: Date) => Promise<void>,
): Promise<void> {
  const probe: PartitionedTable = {
    table,
    interval: 'week',
    retentionDays: () => 30,
    oldestKept: {
      name: `test_${table}_oldest`,
      text: `select min(created_at) as oldest from ${table} where published_at is null`,
    },
  };
  const { sql, config } = harness().service.deps;
  const now = new Date();
  const at = (days: number) => new Date(now.getTime() + days * DAY);
  await em().execute(
    `create table ${table} (id uuid not null, published_at timestamptz, created_at timestamptz not null,
       primary key (id, created_at)) partition by range (created_at)`,
  );
  try {
    await register(probe, at(-70));
    const ids = { old: newId(), waiting: newId(), recent: newId() };
    await em().execute(`insert into ${table} values (?, ?, ?), (?, null, ?), (?, ?, ?)`, [
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
      (await em().execute<{ id: string }[]>(`select id from ${table}`)).map((r) => r.id);
    const waitingWeek = `${table}_p${await week(at(-52))}`;
    const oldWeek = `${table}_p${await week(at(-68))}`;
    expect(await partitionsOf(table)).to.include.members([oldWeek, waitingWeek]);

    const first = await maintainPartitions(sql, { now, config, tables: [probe] });
    const dropped = first.filter((c) => c.action === 'dropped').map((c) => c.partition);
    expect(dropped).to.include(oldWeek);
    expect(dropped).to.not.include(waitingWeek);
    expect(await partitionsOf(table)).to.include(waitingWeek);
    expect((await left()).sort()).to.deep.equal([ids.waiting, ids.recent].sort());

    await em().execute(`update ${table} set published_at = ? where id = ?`, [now, ids.waiting]);
    const second = await maintainPartitions(sql, { now, config, tables: [probe] });
    expect(second.filter((c) => c.action === 'dropped').map((c) => c.partition)).to.include(waitingWeek);
    expect(await left()).to.deep.equal([ids.recent]);
  } finally {
    await em().execute(`do $$ begin
        if to_regclass('partman.part_config') is not null then
          delete from partman.part_config where parent_table = 'public.${table}';
        end if; end $$`);
    await em().execute(`drop table ${table}`);
  }
}
