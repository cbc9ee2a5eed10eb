import { expect } from 'chai';
import { maintainPartitions, PARTITIONED_TABLES } from '#src/db/partitions.ts';
import { newId } from '#src/lib/ids.ts';
import { call } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';
import { skipBecause } from '../skip.ts';

const DAY = 86_400_000;

const em = () => harness().service.deps.orm.em.fork();

async function partitionsOf(table: string): Promise<{ name: string; bound: string }[]> {
  return em().execute(
    `select c.relname as name, pg_get_expr(c.relpartbound, c.oid) as bound
       from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ?::regclass order by c.relname`,
    [table],
  );
}

/** Where a row is stored: the partition's name. */
async function partitionHolding(table: string, id: string): Promise<string | undefined> {
  const [row] = await em().execute<{ name: string }[]>(
    `select tableoid::regclass::text as name from ${table} where id = ?`,
    [id],
  );
  return row?.name;
}

async function partmanRegistered(table: string): Promise<boolean> {
  const [row] = await em().execute<{ found: boolean }[]>(
    `select to_regclass('partman.part_config') is not null as found`,
  );
  if (!row?.found) return false;
  const rows = await em().execute(`select 1 from partman.part_config where parent_table = 'public.' || ?`, [
    table,
  ]);
  return rows.length === 1;
}

/** `YYYY_MM` of a date in UTC, as pg_partman and partition_maintain name monthly partitions. */
const month = (d: Date) => `${d.getUTCFullYear()}_${String(d.getUTCMonth() + 1).padStart(2, '0')}`;

const addMonths = (d: Date, n: number) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 15));

describe('partitioned tables (src/db/partitions.ts)', () => {
  it('stores the timeline in monthly partitions: this month, three ahead and a default', async () => {
    const names = (await partitionsOf('payout_status_timeline')).map((p) => p.name);
    const now = new Date();
    for (let i = 0; i <= 3; i++)
      expect(names).to.include(`payout_status_timeline_p${month(addMonths(now, i))}`);
    expect(names).to.include('payout_status_timeline_default');
    expect(PARTITIONED_TABLES.map((t) => t.table)).to.include('payout_status_timeline');
  });

  it('writes a new payout’s timeline into the partition of its month', async () => {
    const merchant = await payoutReadyMerchant();
    const created = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout() });
    expect(created.status).to.equal(201);
    const [row] = await em().execute<{ id: string; created_at: Date }[]>(
      'select id, created_at from payout_status_timeline where payout_id = ?',
      [created.body.id],
    );
    expect(await partitionHolding('payout_status_timeline', row!.id)).to.equal(
      `payout_status_timeline_p${month(new Date(row!.created_at))}`,
    );
  });

  it('is kept by pg_partman where the server has it (registered by the migration)', async function () {
    if (!(await partmanRegistered('payout_status_timeline'))) {
      skipBecause(
        this,
        'no pg_partman on this server (postgresql-15-partman): the test before covers that path',
      );
    }
    const { sql, config } = harness().service.deps;
    // The last month pg_partman made ahead goes missing; its maintenance makes it again.
    const last = `payout_status_timeline_p${month(addMonths(new Date(), 3))}`;
    const [empty] = await em().execute<{ n: number }[]>(`select count(*)::int as n from ${last}`);
    expect(empty?.n).to.equal(0);
    await em().execute(`drop table ${last}`);
    const changes = await maintainPartitions(sql, { now: new Date(), config });
    expect(changes).to.deep.include({
      table: 'payout_status_timeline',
      action: 'created',
      partition: last,
      by: 'pg_partman',
    });
  });

  it('is kept by the retention job through partition_maintain where the server has no pg_partman', async function () {
    if (await partmanRegistered('payout_status_timeline')) {
      skipBecause(
        this,
        'the server has pg_partman: the test before covers its path, the last one partition_maintain itself',
      );
    }
    const { sql, config } = harness().service.deps;
    const later = addMonths(new Date(), 14);
    // The timeline alone: a pass this far ahead would drop the webhook tables' weeks of this run.
    const tables = PARTITIONED_TABLES.filter((t) => t.table === 'payout_status_timeline');
    const changes = await maintainPartitions(sql, { now: later, config, tables });
    const timeline = changes.filter((c) => c.table === 'payout_status_timeline');
    expect(timeline.map((c) => c.partition)).to.include(`payout_status_timeline_p${month(later)}`);
    expect(timeline.every((c) => c.by === 'partition_maintain' && c.action === 'created')).to.equal(true);
    // Never dropped: a pass far in the future drops none of the timeline's partitions.
    const far = await maintainPartitions(sql, {
      now: new Date(later.getTime() + 3650 * DAY),
      config,
      tables,
    });
    expect(far.filter((c) => c.table === 'payout_status_timeline' && c.action === 'dropped')).to.deep.equal(
      [],
    );
  });

  // Last: it makes a month far ahead, past where pg_partman's maintenance would look.
  it('partition_maintain creates the coming months, moving into each the rows the default partition held for it', async () => {
    const merchant = await payoutReadyMerchant();
    const created = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout() });
    // A month no partition covers yet: the row lands in the default partition.
    const later = addMonths(new Date(), 9);
    const id = newId();
    await em().execute(
      `insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code, created_at)
       values (?, ?, ?, 'CREATED', 'CREATED', 'SYSTEM', 'PARTITION_TEST', ?)`,
      [id, merchant.tenantId, created.body.id, later],
    );
    expect(await partitionHolding('payout_status_timeline', id)).to.equal('payout_status_timeline_default');

    const [first] = await em().execute<{ action: string; partition_name: string }[]>(
      `select action, partition_name from partition_maintain('payout_status_timeline', 'month', 0, null, ?)`,
      [later],
    );
    expect(first).to.deep.equal({
      action: 'created',
      partition_name: `payout_status_timeline_p${month(later)}`,
    });
    expect(await partitionHolding('payout_status_timeline', id)).to.equal(
      `payout_status_timeline_p${month(later)}`,
    );
    // Once there, the next pass has nothing to do.
    const again = await em().execute(
      `select * from partition_maintain('payout_status_timeline', 'month', 0, null, ?)`,
      [later],
    );
    expect(again).to.deep.equal([]);
  });

  it('partition_maintain drops the partitions wholly past a retention, and the default partition’s old rows', async () => {
    // A table of its own, made and dropped in one transaction that is rolled back.
    const connection = harness().service.deps.orm.em.getConnection();
    const now = new Date('2027-03-10T12:00:00Z');
    const day = (n: number) => new Date(now.getTime() + n * DAY);
    const seen = await connection
      .transactional(async (trx) => {
        const run = <R>(sql: string, params: unknown[] = []) =>
          connection.execute<R[]>(sql, params, 'all', trx);
        await run('create table retention_probe (id int, at timestamptz not null) partition by range (at)');
        await run('create table retention_probe_default partition of retention_probe default');
        const created = await run<{ partition_name: string }>(
          `select partition_name from partition_maintain('retention_probe', 'week', 2, '30 days', ?)`,
          [day(-70)],
        );
        await run('insert into retention_probe values (1, ?), (2, ?), (3, ?)', [
          day(-66),
          day(-120),
          day(-1),
        ]);
        const dropped = await run<{ action: string; partition_name: string }>(
          `select action, partition_name from partition_maintain('retention_probe', 'week', 0, '30 days', ?)`,
          [now],
        );
        const left = await run<{ id: number; at: string }>(
          'select id, tableoid::regclass::text as at from retention_probe order by id',
        );
        throw Object.assign(new Error('rollback'), { seen: { created, dropped, left } });
      })
      .catch((e: { seen?: unknown }) => {
        if (!e.seen) throw e;
        return e.seen as {
          created: { partition_name: string }[];
          dropped: { action: string; partition_name: string }[];
          left: { id: number; at: string }[];
        };
      });
    // 70 days back: ISO weeks 2026w53 (2026 has 53), 2027w01 and 2027w02, all wholly older than 30 days by now.
    expect(seen.created.map((c) => c.partition_name)).to.deep.equal([
      'retention_probe_p2026w53',
      'retention_probe_p2027w01',
      'retention_probe_p2027w02',
    ]);
    expect(seen.dropped).to.deep.equal([
      { action: 'created', partition_name: 'retention_probe_p2027w10' },
      { action: 'dropped', partition_name: 'retention_probe_p2026w53' },
      { action: 'dropped', partition_name: 'retention_probe_p2027w01' },
      { action: 'dropped', partition_name: 'retention_probe_p2027w02' },
    ]);
    // Row 1 went with its partition, row 2 (120 days old, in the default) was deleted, and row 3
    // moved from the default into its week's new partition.
    expect(seen.left).to.deep.equal([{ id: 3, at: 'retention_probe_p2027w10' }]);
  });
});
