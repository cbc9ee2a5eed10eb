import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import pg from 'pg';
import { ABANDONED_REASON, webhookDeliveryMachine } from '#machines/webhook-delivery.machine.ts';
import { poolSql, type Sql, type Statement, statement, type TransactionSettings } from '#src/db/sql.ts';
import { initialState } from '#src/engine/engine.ts';
import { WebhookDelivery } from '#src/webhooks/delivery.entities.ts';
import {
  claimDueDeliveries,
  publishEvents,
  recordAttemptResults,
  type StartedAttempt,
} from '#src/webhooks/delivery.service.ts';
import { runWebhooksOnce } from '#src/webhooks/job.ts';
import type { Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  configureWebhook,
  createPayout,
  deliverFor,
  deliveryLog,
  receiversClosedAfterEach,
} from './receiver.ts';

const planCacheMode = statement('test_plan_cache_mode', `select current_setting('plan_cache_mode') as mode`);
const planSettings = statement(
  'test_plan_settings',
  `select current_setting('plan_cache_mode') || ' ' || current_setting('enable_seqscan') as plans`,
);
const backoff = () => harness().service.deps.config.WEBHOOK_BACKOFF_BASE_MS;
const leaseMs = () => harness().service.deps.config.WEBHOOK_TIMEOUT_MS + 30_000;

/** Publishes the merchant's events and starts one attempt on `sql`, as a worker's round would. */
async function startOne(sql: Sql, merchant: Merchant): Promise<StartedAttempt> {
  const deps = harness().service.deps;
  const scope = { tenantIds: [merchant.tenantId] };
  await publishEvents(sql, { now: harness().clock.now(), limit: 10, ...scope });
  const { started } = await claimDueDeliveries(sql, deps, {
    now: harness().clock.now(),
    slots: 1,
    perTarget: 1,
    leaseMs: leaseMs(),
    backoffBaseMs: backoff(),
    ...scope,
  });
  expect(started).to.have.length(1);
  return started[0]!;
}

/** An answer of 200 to `attempt`. */
const answered = (attempt: StartedAttempt) => ({
  attempt,
  result: { ok: true, responseStatus: 200, failureReason: null, durationMs: 3 },
});

async function jobsOf(merchant: Merchant): Promise<WebhookDelivery[]> {
  return harness()
    .service.deps.orm.em.fork()
    .find(WebhookDelivery, { tenant: merchant.tenantId }, { orderBy: { id: 'asc' } });
}

/**
 * The service's `Sql`, counting what it runs; `refuse` says which statements fail (the connection
 * is lost), told whether each is the first of its transaction (as one outside any is).
 */
function watchedSql(refuse: (name: string, first: boolean) => boolean = () => false): {
  sql: Sql;
  statements: string[];
  transactions: number;
} {
  const real = harness().service.deps.sql;
  const seen = { statements: [] as string[], transactions: 0 };
  // `ran`: the statements run so far in the transaction (none outside one).
  const wrap = (inner: Sql, ran: string[] | null): Sql => ({
    rows<R>(s: Statement, values?: readonly unknown[]): Promise<R[]> {
      seen.statements.push(s.name);
      const first = ran === null || ran.push(s.name) === 1;
      if (refuse(s.name, first)) return Promise.reject(new Error(`${s.name}: connection lost`));
      return inner.rows<R>(s, values);
    },
    transaction<T>(work: (tx: Sql) => Promise<T>, settings?: TransactionSettings): Promise<T> {
      seen.transactions++;
      return inner.transaction((tx) => work(wrap(tx, ran ?? [])), settings);
    },
    afterCommit: (callback) => inner.afterCommit(callback),
    origin: inner.origin,
  });
  return {
    sql: wrap(real, null),
    get statements() {
      return seen.statements;
    },
    get transactions() {
      return seen.transactions;
    },
  };
}

/** One pass of the webhooks job over these merchants with another `Sql`. */
function passWith(sql: Sql, merchants: Merchant[]) {
  const deps = harness().service.deps;
  return runWebhooksOnce({ ...deps, sql }, { tenantIds: merchants.map((m) => m.tenantId) });
}

/** Ten thousand events of one tenant, waiting to be published. */
const burstSql = `insert into outbox_events (id, tenant_id, payout_id, event_type, payload, published_at, created_at)
  select gen_random_uuid(), $1, null, 'payout.created', '{}', null, now() from generate_series(1, 10000)`;

describe('webhook delivery in batches', () => {
  const receiver = receiversClosedAfterEach();

  describe('publishing', () => {
    it('publishes many events in one transaction of two statements, each job in the machine’s first state', async () => {
      const merchant = await payoutReadyMerchant();
      const tenantEndpoint = await receiver();
      const payoutEndpoint = await receiver();
      await configureWebhook(merchant, tenantEndpoint.url);
      const routed = await createPayout(merchant, { notification_url: payoutEndpoint.url });
      for (let i = 0; i < 11; i++) await createPayout(merchant);

      const watched = watchedSql();
      const now = harness().clock.now();
      const batch = await publishEvents(watched.sql, { now, limit: 100, tenantIds: [merchant.tenantId] });
      expect(batch).to.deep.equal({ published: 12, jobs: 12 });
      expect(watched.transactions).to.equal(1);
      expect(watched.statements).to.deep.equal([
        'webhook_outbox_any',
        'webhook_outbox_claim',
        'webhook_deliveries_publish',
      ]);

      const initial = initialState(webhookDeliveryMachine, { now });
      const jobs = await jobsOf(merchant);
      expect(jobs).to.have.length(12);
      for (const job of jobs) {
        expect(job.status).to.equal(initial.status);
        expect(job.snapshot).to.deep.equal(initial.snapshot);
        expect(job.attempts).to.equal(0);
        expect(job.dueAt?.getTime()).to.equal(now.getTime());
        expect(job.targetUrl).to.equal(job.payoutId === routed ? payoutEndpoint.url : tenantEndpoint.url);
        expect(job.targetOrigin).to.equal(new URL(job.targetUrl).origin);
      }
      // Published once: nothing is left for the next pass.
      expect(
        await publishEvents(watched.sql, { now, limit: 100, tenantIds: [merchant.tenantId] }),
      ).to.deep.equal({ published: 0, jobs: 0 });
    });

    it('a batch smaller than the backlog leaves the rest, oldest first, for the next batch', async () => {
      const merchant = await payoutReadyMerchant();
      await configureWebhook(merchant, (await receiver()).url);
      const payouts: string[] = [];
      for (let i = 0; i < 3; i++) payouts.push(await createPayout(merchant));
      const sql = harness().service.deps.sql;
      const now = harness().clock.now();
      expect(await publishEvents(sql, { now, limit: 2, tenantIds: [merchant.tenantId] })).to.include({
        published: 2,
      });
      expect((await jobsOf(merchant)).map((j) => j.payoutId).sort()).to.deep.equal(
        payouts.slice(0, 2).sort(),
      );
      expect(await publishEvents(sql, { now, limit: 2, tenantIds: [merchant.tenantId] })).to.include({
        published: 1,
      });
    });

    it('asks whether anything waits through the index of waiting events, even with statistics of a burst', async () => {
      const merchant = await payoutReadyMerchant();
      const real = harness().service.deps.sql;
      const probes: Statement[] = [];
      const sql: Sql = {
        rows: (s, values) => {
          if (s.name === 'webhook_outbox_any') probes.push(s);
          return real.rows(s, values);
        },
        transaction: (work, settings) => real.transaction(work, settings),
        afterCommit: (callback) => real.afterCommit(callback),
        origin: real.origin,
      };
      await publishEvents(sql, { now: harness().clock.now(), limit: 1, tenantIds: [] });
      const [probe] = probes;
      expect(probe, 'the probe ran').to.not.equal(undefined);

      // A burst is analysed while it waits, then published: the statistics still say nearly every
      // event waits. Rolled back: the outbox keeps none of it.
      const rolledBack = new Error('rolled back');
      let plan = '';
      let roots: string[] = [];
      await real
        .transaction(async (tx) => {
          await tx.rows({ name: 'test_outbox_burst', text: burstSql }, [merchant.tenantId]);
          await tx.rows({ name: 'test_outbox_analyze', text: 'analyze outbox_events' });
          await tx.rows(
            {
              name: 'test_outbox_publish_burst',
              text: `update outbox_events set published_at = now() where published_at is null and tenant_id = $1`,
            },
            [merchant.tenantId],
          );
          const rows = await tx.rows<Record<string, unknown>>(
            { name: 'test_outbox_probe_plan', text: `explain (format json) ${probe!.text}` },
            [null],
          );
          plan = JSON.stringify(rows);
          // The outbox is partitioned by week: each partition's copy of the index reads as its name.
          const indexes = [...new Set([...plan.matchAll(/"Index Name":"([^"]+)"/g)].map((m) => m[1]!))];
          const found = await tx.rows<{ root: string }>(
            {
              name: 'test_outbox_index_roots',
              text: 'select coalesce(pg_partition_root(i::regclass)::text, i) as root from unnest($1::text[]) i',
            },
            [indexes],
          );
          roots = found.map((r) => r.root);
          throw rolledBack;
        })
        .catch((err: unknown) => {
          if (err !== rolledBack) throw err;
        });
      expect(roots, plan).to.not.be.empty;
      for (const root of roots) expect(root, plan).to.equal('outbox_events_unpublished_index');
      expect(plan).to.not.include('Seq Scan');
    });
  });

  describe('recording', () => {
    it('records the outcomes of attempts in flight together, in one statement', async () => {
      const merchant = await payoutReadyMerchant();
      const endpoint = await receiver((_, i) => (i % 2 === 0 ? 200 : 500));
      await configureWebhook(merchant, endpoint.url);
      for (let i = 0; i < 4; i++) await createPayout(merchant);

      const watched = watchedSql();
      expect(await passWith(watched.sql, [merchant])).to.include({ attempted: 4, succeeded: 2, failed: 2 });
      // One claim round starts all four; their outcomes are the first statement of the next round.
      const applies = watched.statements.filter((s) => s.startsWith('webhook_deliveries_apply'));
      expect(applies.length).to.be.at.most(3);
      const log = await deliveryLog(merchant);
      expect(log.map((r) => r.status).sort()).to.deep.equal(['FAILED', 'FAILED', 'SUCCESS', 'SUCCESS']);
    });

    it('an outcome that could not be recorded is retried after the lease: delivered at least once, never lost', async () => {
      const merchant = await payoutReadyMerchant();
      const endpoint = await receiver();
      await configureWebhook(merchant, endpoint.url);
      await createPayout(merchant);
      await createPayout(merchant);

      // The attempts go out and are answered, then the database is lost before the outcomes are
      // written: the round that would record them fails, and so does the pass. (A round starts
      // attempts with the statement that records at the end of a pass, after its claim.)
      const broken = watchedSql(
        (name, first) =>
          name === 'webhook_deliveries_apply_turn' || (name === 'webhook_deliveries_apply' && first),
      );
      const failure = await passWith(broken.sql, [merchant]).then(
        () => null,
        (err: Error) => err,
      );
      expect(failure?.message).to.match(/connection lost/);
      expect(endpoint.received).to.have.length(2);
      expect((await jobsOf(merchant)).map((j) => j.status)).to.deep.equal(['ATTEMPTING', 'ATTEMPTING']);
      expect(await deliveryLog(merchant)).to.deep.equal([]);

      // Nobody touches them while their lease runs.
      harness().clock.advance(leaseMs() - 1);
      expect(await deliverFor([merchant])).to.include({ attempted: 0, abandoned: 0 });

      harness().clock.advance(1);
      expect(await deliverFor([merchant])).to.include({ attempted: 0, abandoned: 2 });
      harness().clock.advance(backoff());
      expect(await deliverFor([merchant])).to.include({ attempted: 2, succeeded: 2 });

      expect(endpoint.received).to.have.length(4);
      const perDelivery = new Map<string, number>();
      for (const r of endpoint.received) {
        const id = String(r.headers['x-service-delivery']);
        perDelivery.set(id, (perDelivery.get(id) ?? 0) + 1);
      }
      expect([...perDelivery.values()]).to.deep.equal([2, 2]);
      const log = (await deliveryLog(merchant)).reverse();
      expect(log.map((r) => [r.attempt_number, r.status, r.failure_reason])).to.deep.equal([
        [1, 'FAILED', ABANDONED_REASON],
        [1, 'FAILED', ABANDONED_REASON],
        [2, 'SUCCESS', null],
        [2, 'SUCCESS', null],
      ]);
      expect((await jobsOf(merchant)).map((j) => j.status)).to.deep.equal(['SUCCEEDED', 'SUCCEEDED']);
    });

    it('a late outcome of an attempt abandoned meanwhile writes nothing', async () => {
      const merchant = await payoutReadyMerchant();
      await configureWebhook(merchant, (await receiver()).url);
      await createPayout(merchant);
      const started = await startOne(harness().service.deps.sql, merchant);
      harness().clock.advance(leaseMs());
      expect(await deliverFor([merchant])).to.include({ abandoned: 1 });

      // The first attempt's answer arrives only now: the job is no longer in that attempt.
      const settled = await recordAttemptResults(harness().service.deps.sql, [answered(started)], {
        backoffBaseMs: backoff(),
        now: harness().clock.now(),
      });
      expect(settled).to.deep.equal([null]);
      expect((await jobsOf(merchant))[0]?.status).to.equal('RETRY_SCHEDULED');
      expect((await deliveryLog(merchant)).map((r) => [r.attempt_number, r.status])).to.deep.equal([
        [1, 'FAILED'],
      ]);
    });

    it('claims with generic plans and no sequential scans from the first statement of its transactions, never on the connection after them', async () => {
      const merchant = await payoutReadyMerchant();
      await configureWebhook(merchant, (await receiver()).url);
      await createPayout(merchant);
      // One connection, so that what a transaction leaves behind is seen by the next statement.
      const pool = harness().embedded
        ? null
        : new pg.Pool({ connectionString: harness().directUrl ?? harness().databaseUrl, max: 1 });
      const real = pool ? poolSql(pool) : harness().service.deps.sql;
      // Each transaction's settings as its first statement sees them, before the service's own.
      const seen: string[] = [];
      const sql: Sql = {
        rows: (s, values) => real.rows(s, values),
        transaction: (work, settings) =>
          real.transaction(async (tx) => {
            seen.push((await tx.rows<{ plans: string }>(planSettings))[0]!.plans);
            return work(tx);
          }, settings),
        afterCommit: (callback) => real.afterCommit(callback),
        origin: real.origin,
      };
      try {
        await publishEvents(real, { now: harness().clock.now(), limit: 10, tenantIds: [merchant.tenantId] });
        const started = await startOne(sql, merchant);
        const { started: none, settled } = await claimDueDeliveries(sql, harness().service.deps, {
          now: harness().clock.now(),
          slots: 1,
          perTarget: 1,
          leaseMs: leaseMs(),
          backoffBaseMs: backoff(),
          tenantIds: [merchant.tenantId],
          finished: [answered(started)],
        });
        expect(settled).to.deep.equal(['SUCCEEDED']);
        expect(none).to.deep.equal([]);
        // The round that started the attempt, the round that recorded it (publishing found nothing).
        expect(seen).to.deep.equal(['force_generic_plan off', 'force_generic_plan off']);
        expect((await real.rows<{ plans: string }>(planSettings))[0]?.plans).to.equal('auto on');
      } finally {
        await pool?.end();
      }
      expect((await jobsOf(merchant)).map((j) => j.status)).to.deep.equal(['SUCCEEDED']);
    });

    it('checks the records’ foreign key with generic plans in its own transaction, never on the connection after it', async () => {
      const merchant = await payoutReadyMerchant();
      await configureWebhook(merchant, (await receiver()).url);
      await createPayout(merchant);
      // One connection, so that what the transaction leaves behind is seen by the next statement.
      const pool = harness().embedded
        ? null
        : new pg.Pool({ connectionString: harness().directUrl ?? harness().databaseUrl, max: 1 });
      const sql = pool ? poolSql(pool) : harness().service.deps.sql;
      try {
        const started = await startOne(sql, merchant);
        const inside = await sql.transaction(async (tx) => {
          const settled = await recordAttemptResults(tx, [answered(started)], {
            backoffBaseMs: backoff(),
            now: harness().clock.now(),
          });
          expect(settled).to.deep.equal(['SUCCEEDED']);
          return (await tx.rows<{ mode: string }>(planCacheMode))[0]?.mode;
        });
        expect(inside).to.equal('force_generic_plan');
        expect((await sql.rows<{ mode: string }>(planCacheMode))[0]?.mode).to.equal('auto');
      } finally {
        await pool?.end();
      }
      expect((await jobsOf(merchant)).map((j) => j.status)).to.deep.equal(['SUCCEEDED']);
      expect((await deliveryLog(merchant)).map((r) => [r.attempt_number, r.status])).to.deep.equal([
        [1, 'SUCCESS'],
      ]);
    });
  });

  describe('the schedule under a failing receiver', () => {
    it('a retry due within the poll interval goes out in the same pass, not a pass later', async () => {
      const merchant = await payoutReadyMerchant();
      const endpoint = await receiver((_, i) => (i === 0 ? 500 : 200));
      await configureWebhook(merchant, endpoint.url);
      await createPayout(merchant);
      const config = { WEBHOOK_BACKOFF_BASE_MS: 200, WORKER_POLL_INTERVAL_MS: 1000 };
      // The clock reaches the retry's due time while the pass waits for it: once the first attempt's
      // failure is recorded (the backoff counts from then), not after a fixed real-time delay, which a
      // slow machine could outrun before that failure was recorded.
      let passOver = false;
      const moved = (async () => {
        while (!passOver) {
          if ((await deliveryLog(merchant)).some((r) => r.status === 'FAILED')) {
            harness().clock.advance(200);
            return;
          }
          await sleep(5);
        }
      })();
      const summary = await deliverFor([merchant], config).finally(() => {
        passOver = true;
      });
      await moved;
      expect(summary).to.include({ attempted: 2, failed: 1, succeeded: 1 });
      expect((await deliveryLog(merchant)).map((r) => [r.attempt_number, r.status])).to.deep.equal([
        [2, 'SUCCESS'],
        [1, 'FAILED'],
      ]);
    });

    it('every delivery keeps its own schedule (0, 10, 30, 70, 150 s, then DEAD) within the receiver’s limit', async () => {
      const merchant = await payoutReadyMerchant();
      const endpoint = await receiver(() => 500);
      await configureWebhook(merchant, endpoint.url);
      const payouts: string[] = [];
      for (let i = 0; i < 5; i++) payouts.push(await createPayout(merchant));
      const start = harness().clock.now().getTime();
      const limits = { WEBHOOK_CONCURRENCY_PER_TARGET: 2 };

      expect(await deliverFor([merchant], limits)).to.include({ attempted: 5, failed: 5 });
      for (const wait of [10_000, 20_000, 40_000, 80_000]) {
        harness().clock.advance(wait - 1);
        expect(await deliverFor([merchant], limits)).to.include({ attempted: 0 });
        harness().clock.advance(1);
        expect(await deliverFor([merchant], limits)).to.include({ attempted: 5, failed: 5 });
      }
      harness().clock.advance(24 * 60 * 60 * 1000);
      expect(await deliverFor([merchant], limits)).to.include({ attempted: 0 });

      expect(endpoint.received).to.have.length(25);
      expect(endpoint.maxConcurrent).to.be.at.most(2);
      const log = await deliveryLog(merchant);
      for (const payoutId of payouts) {
        const mine = log.filter((r) => r.payout_id === payoutId).reverse();
        expect(mine.map((r) => [r.attempt_number, r.status, r.response_status])).to.deep.equal([
          [1, 'FAILED', 500],
          [2, 'FAILED', 500],
          [3, 'FAILED', 500],
          [4, 'FAILED', 500],
          [5, 'DEAD', 500],
        ]);
        expect(mine.map((r) => Date.parse(r.created_at) - start)).to.deep.equal([
          0, 10_000, 30_000, 70_000, 150_000,
        ]);
      }
      expect((await jobsOf(merchant)).every((j) => j.status === 'DEAD' && j.dueAt === null)).to.equal(true);
    });
  });
});
