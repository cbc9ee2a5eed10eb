import type { EntityManager } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import { maintainPartitions, type PartitionChange } from '#src/db/partitions.ts';
import { emSql } from '#src/db/sql.ts';
import { newId } from '#src/lib/ids.ts';
import { redeliverOne } from '#src/webhooks/redelivery.service.ts';
import type { Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { racesOnlyOnPostgres, waitsForLock } from '../races.ts';
import { configureWebhook, deliverFor, receiversClosedAfterEach } from '../webhooks/receiver.ts';

/**
 * `webhook_deliveries` and `webhook_delivery_attempts`, partitioned by ISO week of their event's
 * creation (Migration20261129040000, src/db/partitions.ts): where rows go, the deduplications
 * that still hold across a week's boundary, and the retention of WEBHOOK_LOG_RETENTION_DAYS.
 */

const DAY = 86_400_000;
const TABLES = ['webhook_deliveries', 'webhook_delivery_attempts'] as const;

const em = () => harness().service.deps.orm.em.fork();

/** Monday 00:00 UTC of the ISO week holding `at`. */
function weekStart(at: Date): Date {
  const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate()));
  return new Date(d.getTime() - ((d.getUTCDay() + 6) % 7) * DAY);
}

/** The partition name of `table` for the week holding `at`, as pg_partman and partition_maintain name it. */
async function weekPartition(table: string, at: Date): Promise<string> {
  const [row] = await em().execute<{ name: string }[]>(
    `select ? || '_p' || to_char(?::timestamptz at time zone 'UTC', 'IYYY"w"IW') as name`,
    [table, at],
  );
  return row!.name;
}

async function partitionsOf(table: string): Promise<string[]> {
  const rows = await em().execute<{ name: string }[]>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ?::regclass order by 1`,
    [table],
  );
  return rows.map((r) => r.name);
}

async function partitionHolding(table: string, id: string): Promise<string | undefined> {
  const [row] = await em().execute<{ name: string }[]>(
    `select tableoid::regclass::text as name from ${table} where id = ?`,
    [id],
  );
  return row?.name;
}

/** Makes sure the week holding `at` has its partitions (both tables), as maintenance would. */
async function ensureWeek(at: Date): Promise<void> {
  for (const table of TABLES) {
    await em().execute(`select * from partition_maintain(?, 'week', 0, null, ?)`, [table, at]);
  }
}

/** An outbox event of the merchant made at `at`, waiting to be published. */
async function eventAt(merchant: Merchant, at: Date): Promise<string> {
  const id = newId();
  await em().execute(
    `insert into outbox_events (id, tenant_id, event_type, payload, created_at) values (?, ?, 'payout.created', '{}', ?)`,
    [id, merchant.tenantId, at],
  );
  return id;
}

/** A delivery row of the event, as publishing (or, with `redeliveryOf`, a redelivery) writes it. */
function insertDelivery(
  args: { merchant: Merchant; eventId: string; createdAt: Date; redeliveryOf?: string; status?: string },
  id = newId(),
): [string, unknown[]] {
  return [
    `insert into webhook_deliveries (id, tenant_id, event_id, event_type, target_url, target_origin, status, snapshot,
        attempts, redelivery_of, created_at, updated_at, event_created_at)
     select ?, o.tenant_id, o.id, o.event_type, 'https://hooks.example/partitions', 'https://hooks.example:443', ?,
            '{"value":"PENDING","status":"active"}', 0, ?, ?, ?, o.created_at
       from outbox_events o where o.id = ?`,
    [id, args.status ?? 'PENDING', args.redeliveryOf ?? null, args.createdAt, args.createdAt, args.eventId],
  ];
}

const uniqueViolation = (e: unknown) => (e as { code?: string }).code === '23505';

/** Writes a DEAD delivery of the event, created at `createdAt` (what a redelivery names); its id. */
async function deadDeliveryOf(merchant: Merchant, eventId: string, createdAt: Date): Promise<string> {
  const [text, params] = insertDelivery({ merchant, eventId, createdAt, status: 'DEAD' });
  await em().execute(text, params);
  return params[0] as string;
}

/**
 * Writes, in `tx`, a published event of the merchant made at `at` and one delivery of it with its
 * first attempt: a DEAD delivery's attempt is DEAD, a PENDING one's (to be retried) FAILED. The
 * delivery's id.
 */
async function deliveryWithAttempt(
  tx: EntityManager,
  merchant: Merchant,
  at: Date,
  status: 'DEAD' | 'PENDING',
): Promise<string> {
  const eventId = newId();
  const deliveryId = newId();
  await tx.execute(
    `insert into outbox_events (id, tenant_id, event_type, payload, published_at, created_at)
     values (?, ?, 'payout.created', '{}', ?, ?)`,
    [eventId, merchant.tenantId, at, at],
  );
  const [text, params] = insertDelivery({ merchant, eventId, createdAt: at, status }, deliveryId);
  await tx.execute(text, params);
  await tx.execute(
    `insert into webhook_delivery_attempts (id, tenant_id, delivery_id, event_id, event_type, attempt_number,
        target_url, status, created_at, event_created_at)
     select ?, tenant_id, id, event_id, event_type, 1, target_url, ?, created_at, event_created_at
       from webhook_deliveries where id = ?`,
    [newId(), status === 'DEAD' ? 'DEAD' : 'FAILED', deliveryId],
  );
  return deliveryId;
}

describe('partitioned webhook deliveries and attempts (by week of their event)', () => {
  const receiver = receiversClosedAfterEach();
  const thisWeek = () => weekStart(harness().clock.now());
  /** The last millisecond of last week: an event made just before this week's boundary. */
  const beforeBoundary = () => new Date(thisWeek().getTime() - 1);

  it('has this week, three weeks ahead and a default partition, for deliveries and attempts', async () => {
    // This week of the real clock, the migration's (the run's clock may have moved ahead since).
    const week = weekStart(new Date());
    for (const table of TABLES) {
      const names = await partitionsOf(table);
      for (let i = 0; i <= 3; i++) {
        expect(names).to.include(await weekPartition(table, new Date(week.getTime() + i * 7 * DAY)));
      }
      expect(names).to.include(`${table}_default`);
    }
  });

  it('puts a delivery published after a week’s boundary, and its attempts, into its event’s week', async () => {
    await ensureWeek(beforeBoundary());
    const merchant = await payoutReadyMerchant();
    const endpoint = await receiver(() => 500);
    await configureWebhook(merchant, endpoint.url);
    const eventId = await eventAt(merchant, beforeBoundary());
    await deliverFor([merchant]);
    const [delivery] = await em().execute<{ id: string; created_at: Date }[]>(
      'select id, created_at from webhook_deliveries where event_id = ?',
      [eventId],
    );
    const [attempt] = await em().execute<{ id: string; created_at: Date }[]>(
      'select id, created_at from webhook_delivery_attempts where event_id = ?',
      [eventId],
    );
    // Made this week, stored in last week's partition: the event's.
    expect(new Date(delivery!.created_at).getTime()).to.be.at.least(thisWeek().getTime());
    expect(new Date(attempt!.created_at).getTime()).to.be.at.least(thisWeek().getTime());
    expect(await partitionHolding('webhook_deliveries', delivery!.id)).to.equal(
      await weekPartition('webhook_deliveries', beforeBoundary()),
    );
    expect(await partitionHolding('webhook_delivery_attempts', attempt!.id)).to.equal(
      await weekPartition('webhook_delivery_attempts', beforeBoundary()),
    );
  });

  it('refuses a second delivery of an event to a target, and a second open redelivery, made across the boundary', async () => {
    await ensureWeek(beforeBoundary());
    const merchant = await payoutReadyMerchant();
    const eventId = await eventAt(merchant, beforeBoundary());
    const before = new Date(thisWeek().getTime() - 60_000);
    const after = new Date(thisWeek().getTime() + 60_000);
    const [first, firstParams] = insertDelivery({ merchant, eventId, createdAt: before, status: 'DEAD' });
    await em().execute(first, firstParams);
    const [again, againParams] = insertDelivery({ merchant, eventId, createdAt: after });
    const refused = await em()
      .execute(again, againParams)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(uniqueViolation(refused), String(refused)).to.equal(true);
    expect(
      await em().execute('select 1 from webhook_deliveries where event_id = ?', [eventId]),
    ).to.have.length(1);

    const deadId = (firstParams[0] as string) ?? '';
    const [open] = insertDelivery({ merchant, eventId, createdAt: before, redeliveryOf: deadId });
    await em().execute(
      open,
      insertDelivery({ merchant, eventId, createdAt: before, redeliveryOf: deadId })[1],
    );
    const [, secondParams] = insertDelivery({ merchant, eventId, createdAt: after, redeliveryOf: deadId });
    const second = await em()
      .execute(open, secondParams)
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(uniqueViolation(second), String(second)).to.equal(true);
    expect(
      await em().execute(
        'select 1 from webhook_deliveries where event_id = ? and redelivery_of is not null',
        [eventId],
      ),
    ).to.have.length(1);
  });

  it('puts an operator’s redelivery made after the boundary into its event’s week, naming the DEAD delivery there', async () => {
    await ensureWeek(beforeBoundary());
    const merchant = await payoutReadyMerchant();
    await configureWebhook(merchant, 'https://hooks.example/partitions');
    const eventId = await eventAt(merchant, beforeBoundary());
    const deliveryId = await deadDeliveryOf(merchant, eventId, beforeBoundary());
    const { sql } = harness().service.deps;
    const made = await sql.transaction((tx) =>
      redeliverOne(tx, { deliveryId, now: new Date(thisWeek().getTime() + DAY) }),
    );
    expect(made.created).to.equal(true);
    // The rule that stands for redelivery_of's foreign key: the DEAD delivery it names is there, in
    // the same partition, so the two leave together.
    const [row] = await em().execute<{ redelivery: string; dead: string }[]>(
      `select r.tableoid::regclass::text as redelivery, d.tableoid::regclass::text as dead
         from webhook_deliveries r join webhook_deliveries d on d.id = r.redelivery_of
        where r.id = ?`,
      [made.deliveryId],
    );
    const week = await weekPartition('webhook_deliveries', beforeBoundary());
    expect(row).to.deep.equal({ redelivery: week, dead: week });
  });

  it('delivers and redelivers an event whose time has microseconds, keeping them in its deliveries’ copy', async () => {
    const merchant = await payoutReadyMerchant();
    const endpoint = await receiver(() => 500);
    await configureWebhook(merchant, endpoint.url);
    // Written by the database's clock, as a seed or another writer may: a Date would round it.
    const eventId = newId();
    await em().execute(
      `insert into outbox_events (id, tenant_id, event_type, payload, created_at)
       values (?, ?, 'payout.created', '{}', ?::timestamptz + interval '123 microseconds')`,
      [eventId, merchant.tenantId, harness().clock.now()],
    );
    await deliverFor([merchant]);
    const copies = async () =>
      em().execute<{ same: boolean; attempts: number }[]>(
        `select d.event_created_at = o.created_at as same,
                (select count(*)::int from webhook_delivery_attempts a where a.delivery_id = d.id) as attempts
           from webhook_deliveries d join outbox_events o on o.id = d.event_id
          where d.event_id = ? order by d.created_at, d.id`,
        [eventId],
      );
    // Claimed by the event's whole key: the attempt was made (and answered 500).
    expect(await copies()).to.deep.equal([{ same: true, attempts: 1 }]);
    expect(endpoint.received).to.have.length(1);

    const [first] = await em().execute<{ id: string }[]>(
      'select id from webhook_deliveries where event_id = ?',
      [eventId],
    );
    await em().execute(`update webhook_deliveries set status = 'DEAD', due_at = null where id = ?`, [
      first!.id,
    ]);
    const { sql } = harness().service.deps;
    const made = await sql.transaction((tx) =>
      redeliverOne(tx, { deliveryId: first!.id, now: harness().clock.now() }),
    );
    expect(made.created).to.equal(true);
    await deliverFor([merchant]);
    expect(await copies()).to.deep.equal([
      { same: true, attempts: 1 },
      { same: true, attempts: 1 },
    ]);
    expect(endpoint.received).to.have.length(2);
  });

  describe('concurrent duplicates across a week’s boundary', () => {
    beforeEach(function () {
      racesOnlyOnPostgres(this);
    });

    /**
     * Two transactions insert the same row, one stamped before the boundary and one after: the
     * second waits on the first's unique-index entry (both rows go to the event's partition), and
     * fails once the first commits.
     */

    async function insertRaced(
      a: [string, unknown[]],
      b: [string, unknown[]],
    ): Promise<{ outcomes: PromiseSettledResult<unknown>[]; waited: boolean }> {
      const orm = harness().service.deps.orm;
      const first = orm.em.fork();
      const second = orm.em.fork();
      await first.begin();
      await first.execute(a[0], a[1]);
      await second.begin();
      const racing = second.execute(b[0], b[1]);
      const waited = await waitsForLock(em(), racing);
      await first.commit();
      const outcomes = await Promise.allSettled([racing.then(() => second.commit())]);
      if (outcomes[0]!.status === 'rejected') await second.rollback();
      return { outcomes, waited };
    }

    it('one delivery per event and target', async () => {
      await ensureWeek(beforeBoundary());
      const merchant = await payoutReadyMerchant();
      const eventId = await eventAt(merchant, beforeBoundary());
      const { outcomes, waited } = await insertRaced(
        insertDelivery({ merchant, eventId, createdAt: new Date(thisWeek().getTime() - 1_000) }),
        insertDelivery({ merchant, eventId, createdAt: new Date(thisWeek().getTime() + 1_000) }),
      );
      expect(waited, 'the second insert waited for the first').to.equal(true);
      expect(outcomes[0]!.status).to.equal('rejected');
      expect(uniqueViolation((outcomes[0] as PromiseRejectedResult).reason)).to.equal(true);
      const rows = await em().execute('select 1 from webhook_deliveries where event_id = ?', [eventId]);
      expect(rows).to.have.length(1);
    });

    it('one open redelivery per event, inserted side by side', async () => {
      await ensureWeek(beforeBoundary());
      const merchant = await payoutReadyMerchant();
      const eventId = await eventAt(merchant, beforeBoundary());
      const deadId = await deadDeliveryOf(merchant, eventId, beforeBoundary());
      const { outcomes, waited } = await insertRaced(
        insertDelivery({
          merchant,
          eventId,
          createdAt: new Date(thisWeek().getTime() - 1_000),
          redeliveryOf: deadId,
        }),
        insertDelivery({
          merchant,
          eventId,
          createdAt: new Date(thisWeek().getTime() + 1_000),
          redeliveryOf: deadId,
        }),
      );
      expect(waited, 'the second insert waited for the first').to.equal(true);
      expect(outcomes[0]!.status).to.equal('rejected');
      expect(uniqueViolation((outcomes[0] as PromiseRejectedResult).reason)).to.equal(true);
      const rows = await em().execute(
        'select 1 from webhook_deliveries where event_id = ? and redelivery_of is not null',
        [eventId],
      );
      expect(rows).to.have.length(1);
    });

    it('one open redelivery per event, asked for by two operators on either side of the boundary', async () => {
      await ensureWeek(beforeBoundary());
      const merchant = await payoutReadyMerchant();
      await configureWebhook(merchant, 'https://hooks.example/partitions');
      const eventId = await eventAt(merchant, beforeBoundary());
      const deliveryId = await deadDeliveryOf(merchant, eventId, beforeBoundary());
      const { sql } = harness().service.deps;
      const results = await Promise.all(
        [-1_000, 1_000].map((offset) =>
          sql.transaction((tx) =>
            redeliverOne(tx, { deliveryId, now: new Date(thisWeek().getTime() + offset) }),
          ),
        ),
      );
      expect(results.map((r) => r.created).sort()).to.deep.equal([false, true]);
      expect(results[0]!.deliveryId).to.equal(results[1]!.deliveryId);
      const rows = await em().execute<{ name: string }[]>(
        `select tableoid::regclass::text as name from webhook_deliveries where event_id = ? and redelivery_of is not null`,
        [eventId],
      );
      expect(rows.map((r) => r.name)).to.deep.equal([
        await weekPartition('webhook_deliveries', beforeBoundary()),
      ]);
    });
  });

  /**
   * Runs `work` in a transaction that is rolled back, whatever it did: partitions dropped there
   * come back for the other tests.
   */
  async function rolledBack<T>(work: (tx: EntityManager) => Promise<T>): Promise<T> {
    let seen: { value: T } | undefined;
    await em()
      .transactional(async (tx) => {
        seen = { value: await work(tx) };
        throw new Error('rollback');
      })
      .catch((e: Error) => {
        if (!seen || e.message !== 'rollback') throw e;
      });
    return seen!.value;
  }

  it('drops the weeks past WEBHOOK_LOG_RETENTION_DAYS, attempts before deliveries, by pg_partman or partition_maintain', async () => {
    const { config } = harness().service.deps;
    expect(config.WEBHOOK_LOG_RETENTION_DAYS).to.equal(30);
    const merchant = await payoutReadyMerchant();
    const now = new Date();
    const old = new Date(weekStart(now).getTime() - 9 * 7 * DAY + DAY);
    const seen = await rolledBack(async (tx) => {
      for (const table of TABLES) {
        await tx.execute(`select * from partition_maintain(?, 'week', 0, null, ?)`, [table, old]);
      }
      const deliveryId = await deliveryWithAttempt(tx, merchant, old, 'DEAD');
      const sql = emSql(tx);
      // 63 days old: kept with a retention of 90 days, dropped with the default 30.
      const kept = await maintainPartitions(sql, {
        now,
        config: { ...config, WEBHOOK_LOG_RETENTION_DAYS: 90 },
      });
      const dropped = await maintainPartitions(sql, { now, config });
      const left = await tx.execute<{ n: number }[]>(
        `select (select count(*) from webhook_deliveries where id = ?)::int
              + (select count(*) from webhook_delivery_attempts where delivery_id = ?)::int as n`,
        [deliveryId, deliveryId],
      );
      return { kept, dropped, left: left[0]!.n };
    });
    const oldWeek = (table: string) => weekPartition(table, old);
    const drops = (changes: PartitionChange[]) =>
      changes.filter((c) => c.action === 'dropped').map((c) => `${c.table}:${c.partition}`);
    expect(drops(seen.kept)).to.not.include(`webhook_deliveries:${await oldWeek('webhook_deliveries')}`);
    const droppedNow = drops(seen.dropped);
    const attempts = droppedNow.indexOf(
      `webhook_delivery_attempts:${await oldWeek('webhook_delivery_attempts')}`,
    );
    const deliveries = droppedNow.indexOf(`webhook_deliveries:${await oldWeek('webhook_deliveries')}`);
    expect(attempts, droppedNow.join()).to.be.at.least(0);
    expect(deliveries, droppedNow.join()).to.be.greaterThan(attempts);
    // pg_partman where the migration registered the tables with it, else the service's own.
    const [registered] = await em().execute<{ found: boolean }[]>(
      `select to_regclass('partman.part_config') is not null as found`,
    );
    const expected = registered?.found ? 'pg_partman' : 'partition_maintain';
    const by = seen.dropped.filter((c) => c.table !== 'payout_status_timeline').map((c) => c.by);
    expect([...new Set(by)]).to.deep.equal([expected]);
    expect(seen.left).to.equal(0);
  });

  it('keeps the attempts’ foreign key: a week of deliveries cannot go while its attempts are there', async () => {
    const merchant = await payoutReadyMerchant();
    const failed = await rolledBack(async (tx) => {
      const at = harness().clock.now();
      await deliveryWithAttempt(tx, merchant, at, 'PENDING');
      // The deliveries alone, far enough ahead that this week is past the retention.
      return tx
        .execute(`select * from partition_maintain('webhook_deliveries', 'week', 0, '30 days', ?)`, [
          new Date(at.getTime() + 60 * DAY),
        ])
        .then(
          () => null,
          (e: { code?: string; message?: string }) => ({ code: e.code, message: e.message }),
        );
    }).catch((e: { code?: string; message?: string }) => ({ code: e.code, message: e.message }));
    expect(failed?.code, failed?.message).to.equal('23503');
    expect(failed?.message).to.match(/foreign key/);
  });
});
