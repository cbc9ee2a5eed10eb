import { expect } from 'chai';
import pg from 'pg';
import { type PlanNode, planNodes } from '#src/db/plan.ts';
import { poolSql } from '#src/db/sql.ts';
import {
  claimDueDeliveries,
  type FinishedAttempt,
  publishEvents,
  recordAttemptResults,
  type StartedAttempt,
} from '#src/webhooks/delivery.service.ts';
import { createMerchant } from '../client.ts';
import { harness } from '../harness.ts';
import { needsPostgresServer, skipBecause } from '../skip.ts';
import { configureWebhook, receiversClosedAfterEach } from '../webhooks/receiver.ts';

/**
 * The webhook worker's plans stay key lookups in a week that was empty when they were made. A
 * prepared statement keeps its generic plan until the next ANALYZE of a table it reads; made while
 * a week's partitions were known empty (the weeks ahead, any week after a TRUNCATE and VACUUM),
 * a plan that scans that week costs nothing, and once the week fills it read the whole week for
 * every batch or row (bench/results/2026-11-29.webhooks-plans.md). Here the worker's own functions
 * run their rounds on one connection while a week's partitions are empty and analyzed, and record
 * outcomes at the end of passes on another (whose record statement is planned only there), the
 * week is then filled, and the next rounds' and end of pass's plans, as those connections run them
 * (auto_explain, the foreign-key checks inside the record statement included), must read by key:
 * no sequential scan of a partition that holds rows, and a bounded number of buffers per row.
 */

const DAY = 86_400_000;
const WEEK = 7 * DAY;
/** Events of the filled week, each with its delivery and one earlier attempt. */
const FILL = 3_000;
/** Rounds run while the week is empty: more than the five custom plans before a generic one. */
const WARM_ROUNDS = 8;
/** Deliveries started, and then recorded, per measured round. */
const BATCH = 64;

// Buffers per row read in the filled week's partitions (deliveries, attempts, events): on the
// worker as it is (PostgreSQL 15), 2 to 8 for the claim and the batch update, 3 to 5 for a
// foreign-key check. Plans made on the empty week read the whole week (about 170 pages of
// deliveries here): the batch update once per batch, the claim and the checks once per row.
const WEEK_BUFFERS_PER_ROW = 16;
// Buffers per row of a statement as a whole, per partition of the deliveries: a list of ids is
// probed in every week's index, empty or not (about 4 buffers per row each). On the worker as it
// is, with five partitions, about 30 for the claim and 26 for the batch update.
const BUFFERS_PER_ROW_AND_PARTITION = 16;

interface Explained extends PlanNode {
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: Explained[];
}

/** A statement's execution as auto_explain reports it (`log_format = json`). */
interface Logged {
  'Query Text': string;
  Plan: Explained;
}

/** Has `pool`'s one connection report, from now on, the plans it runs to `logged`. */
async function explainTo(pool: pg.Pool, logged: (l: Logged) => void): Promise<void> {
  const client = await pool.connect();
  client.on('notice', (msg) => {
    const text = msg.message ?? '';
    const json = text.indexOf('{');
    if (json >= 0 && text.includes('plan:')) logged(JSON.parse(text.slice(json)) as Logged);
  });
  await client.query(`load 'auto_explain';
    set auto_explain.log_min_duration = 0; set auto_explain.log_analyze = on;
    set auto_explain.log_buffers = on; set auto_explain.log_timing = off;
    set auto_explain.log_nested_statements = on; set auto_explain.log_format = json;
    set auto_explain.log_level = notice`);
  client.release();
}

const buffers = (n: Explained) => (n['Shared Hit Blocks'] ?? 0) + (n['Shared Read Blocks'] ?? 0);

/** What the worker runs, as auto_explain names it by its text. */
function kindOf(text: string): 'claim' | 'write' | 'check' | undefined {
  const t = text.trim();
  if (t.startsWith('with candidates as')) return 'claim';
  if (t.startsWith('with changed as')) return 'write';
  // The record's foreign-key check (PostgreSQL's own query, one per attempt recorded).
  if (/FOR KEY SHARE OF x/.test(t) && /"webhook_deliveries"/.test(t)) return 'check';
  return undefined;
}

describe('webhook worker plans over a week that was empty when they were made', function () {
  this.timeout(60_000);
  const receiver = receiversClosedAfterEach();

  before(async function () {
    needsPostgresServer(
      this,
      'the plans a connection runs for its prepared statements, the foreign-key checks inside them included, are read through auto_explain',
    );
    // auto_explain is loaded by the test's own connection, which takes a superuser.
    const client = new pg.Client({ connectionString: harness().directUrl ?? harness().databaseUrl });
    await client.connect();
    try {
      await client.query(`load 'auto_explain'`);
    } catch (err) {
      skipBecause(this, `auto_explain cannot be loaded on this server: ${(err as Error).message}`);
    } finally {
      await client.end();
    }
  });

  it('claims, writes and checks the week it filled by key, a few buffers per row', async () => {
    const deps = harness().service.deps;
    const em = () => deps.orm.em.fork();
    const merchant = await createMerchant();
    await configureWebhook(merchant, (await receiver()).url);
    const tenantIds = [merchant.tenantId];
    const now = harness().clock.now();
    const limits = {
      now,
      perTarget: BATCH,
      leaseMs: deps.config.WEBHOOK_TIMEOUT_MS + 30_000,
      backoffBaseMs: deps.config.WEBHOOK_BACKOFF_BASE_MS,
      tenantIds,
    };
    const answered = (attempt: StartedAttempt): FinishedAttempt => ({
      attempt,
      result: { ok: true, responseStatus: 200, failureReason: null, durationMs: 3 },
    });

    // A week ahead: its partitions exist, empty, and VACUUM ANALYZE leaves them known empty, as
    // the bench's TRUNCATE and VACUUM ANALYZE leaves every week. Autovacuum kept off them, so that
    // nothing analyzes the week once it fills (the shared server has it off altogether).
    // Its Tuesday, 00:00 UTC: the day's events stay in the week.
    const ahead = new Date(now.getTime() + 2 * WEEK);
    const week = new Date(
      Date.UTC(ahead.getUTCFullYear(), ahead.getUTCMonth(), ahead.getUTCDate()) -
        ((ahead.getUTCDay() + 6) % 7) * DAY +
        DAY,
    );
    const tables = ['outbox_events', 'webhook_deliveries', 'webhook_delivery_attempts'];
    const partitions: string[] = [];
    for (const table of tables) {
      await em().execute(`select * from partition_maintain(?, 'week', 0, null, ?)`, [table, week]);
      const [row] = await em().execute<{ name: string }[]>(
        `select ? || '_p' || to_char(?::timestamptz at time zone 'UTC', 'IYYY"w"IW') as name`,
        [table, week],
      );
      partitions.push(row!.name);
    }
    // The worker's connection: one, so that every statement is prepared and planned on it. And one
    // that only records at the end of passes: its record statement is planned outside any round.
    const pool = new pg.Pool({ connectionString: harness().directUrl ?? harness().databaseUrl, max: 1 });
    const sql = poolSql(pool);
    const endsPool = new pg.Pool({ connectionString: harness().directUrl ?? harness().databaseUrl, max: 1 });
    const ends = poolSql(endsPool);
    const logged: (Logged & { endOfPass: boolean })[] = [];
    /** The partitions of the deliveries and the attempts that hold rows, once the week filled. */
    let holding = new Set<string>();
    try {
      const reltuples = async () =>
        (
          await em().execute<{ reltuples: number }[]>(
            `select reltuples from pg_class where relname in (${partitions.map(() => '?').join(', ')})`,
            partitions,
          )
        ).map((r) => Number(r.reltuples));
      for (const p of partitions) {
        const [row] = await em().execute<{ n: number }[]>(`select count(*)::int as n from ${p}`);
        expect(row?.n, `${p} is empty`).to.equal(0);
        await em().execute(`alter table ${p} set (autovacuum_enabled = false)`);
        await em().execute(`vacuum analyze ${p}`);
      }
      expect(await reltuples(), 'the week known empty').to.deep.equal([0, 0, 0]);

      /** Events for the merchant created at `at` plus n seconds, published as the worker does. */
      const publish = async (count: number, at: Date) => {
        await em().execute(
          `insert into outbox_events (id, tenant_id, payout_id, event_type, payload, published_at, created_at)
         select gen_random_uuid(), ?, null, 'payout.created', '{"plan":' || n || '}', null,
                ?::timestamptz + n * interval '1 second'
           from generate_series(1, ?) n`,
          [merchant.tenantId, at, count],
        );
        const published = await publishEvents(deps.sql, { now, limit: count, tenantIds });
        expect(published.jobs).to.equal(count);
      };

      // Rounds as the worker runs them while only this week holds deliveries: each records the
      // attempt the round before started (the record's foreign-key check) and starts the next.
      await publish(2 * WARM_ROUNDS, now);
      let finished: FinishedAttempt[] = [];
      for (let round = 0; round < WARM_ROUNDS; round++) {
        const { started, settled } = await claimDueDeliveries(sql, deps, { ...limits, slots: 1, finished });
        expect(settled).to.deep.equal(finished.map(() => 'SUCCEEDED'));
        expect(started).to.have.length(1);
        finished = started.map(answered);
      }
      expect(await recordAttemptResults(sql, finished, limits)).to.deep.equal(['SUCCEEDED']);
      // Ends of passes on the other connection, each recording one attempt a round started.
      for (let round = 0; round < WARM_ROUNDS; round++) {
        const { started } = await claimDueDeliveries(sql, deps, { ...limits, slots: 1 });
        expect(started).to.have.length(1);
        expect(await recordAttemptResults(ends, started.map(answered), limits)).to.deep.equal(['SUCCEEDED']);
      }

      // The week fills: its events, their deliveries, one earlier attempt each.
      await publish(FILL, week);
      await em().execute(
        `insert into webhook_delivery_attempts (id, tenant_id, delivery_id, event_id, payout_id, event_type,
             attempt_number, target_url, status, response_status, failure_reason, secret_version, duration_ms,
             created_at, event_created_at)
         select gen_random_uuid(), d.tenant_id, d.id, d.event_id, d.payout_id, d.event_type, 0, d.target_url,
                a.status, 500, 'plan test', null, 3, d.created_at, d.event_created_at
           from webhook_deliveries d,
                (select status from webhook_delivery_attempts where tenant_id = ? limit 1) a
          where d.tenant_id = ? and d.event_created_at >= ?`,
        [merchant.tenantId, merchant.tenantId, week],
      );
      holding = new Set(
        (
          await em().execute<{ name: string }[]>(
            `select distinct tableoid::regclass::text as name from webhook_deliveries
             union select distinct tableoid::regclass::text from webhook_delivery_attempts`,
          )
        ).map((r) => r.name),
      );
      for (const p of partitions.slice(1)) expect(holding, 'the week filled').to.include(p);

      // What the connections run from now on, reported to them as notices.
      await explainTo(pool, (l) => logged.push({ ...l, endOfPass: false }));
      await explainTo(endsPool, (l) => logged.push({ ...l, endOfPass: true }));

      // A round that starts a batch of the week's deliveries, one that records them and starts the
      // next, and the end of a pass recording those (on the connection that only records).
      const first = await claimDueDeliveries(sql, deps, { ...limits, slots: BATCH });
      expect(first.started).to.have.length(BATCH);
      const second = await claimDueDeliveries(sql, deps, {
        ...limits,
        slots: BATCH,
        finished: first.started.map(answered),
      });
      expect(second.settled).to.deep.equal(first.started.map(() => 'SUCCEEDED'));
      expect(second.started).to.have.length(BATCH);
      const last = await recordAttemptResults(ends, second.started.map(answered), limits);
      expect(last).to.deep.equal(second.started.map(() => 'SUCCEEDED'));

      // Still the plans made on the empty week: nothing analyzed it since.
      expect(await reltuples(), 'the week still known empty').to.deep.equal([0, 0, 0]);
    } finally {
      await pool.end();
      await endsPool.end();
      // The week as it was: empty, known empty, with its autovacuum.
      for (const table of [...tables].reverse()) {
        await em().execute(`delete from ${table} where tenant_id = ?`, [merchant.tenantId]);
      }
      for (const p of partitions) {
        await em().execute(`alter table ${p} reset (autovacuum_enabled)`);
        await em().execute(`vacuum analyze ${p}`);
      }
    }

    const runs = logged.flatMap((l) => {
      const kind = kindOf(l['Query Text']);
      return kind
        ? [{ kind, plan: l.Plan, nodes: planNodes(l.Plan) as Explained[], endOfPass: l.endOfPass }]
        : [];
    });
    const of = (kind: string) => runs.filter((r) => r.kind === kind);
    expect(of('claim'), 'claims').to.have.length(2);
    // Each round's start of attempts, the second round's record, the end of the pass's record.
    expect(of('write'), 'batch updates').to.have.length(4);
    expect(
      runs.filter((r) => r.endOfPass && r.kind === 'write'),
      'the end of the pass’s record',
    ).to.have.length(1);
    expect(of('check'), 'foreign-key checks').to.have.length(2 * BATCH);

    // Every rule broken, by statement and rule: how many times, and the most buffers per row.
    const broken = new Map<string, { times: number; most: number }>();
    const breaks = (what: string, perRow = 0) => {
      const seen = broken.get(what) ?? { times: 0, most: 0 };
      broken.set(what, { times: seen.times + 1, most: Math.max(seen.most, Math.round(perRow)) });
    };
    const filled = new Set(partitions);
    const [, deliveries] = partitions;
    const [{ n: deliveryPartitions } = { n: 1 }] = await em().execute<{ n: number }[]>(
      `select count(*)::int as n from pg_inherits where inhparent = 'webhook_deliveries'::regclass`,
    );
    for (const { kind, plan, nodes, endOfPass } of runs) {
      const what = `${kind}${endOfPass ? ' (end of pass)' : ''}`;
      const rows = kind === 'check' ? 1 : BATCH;
      const reads = nodes.filter((n) => n['Relation Name'] && n['Node Type'] !== 'ModifyTable');
      // No partition holding rows read whole.
      for (const n of reads) {
        if (n['Node Type'] === 'Seq Scan' && holding.has(n['Relation Name']!)) {
          breaks(`${what}: Seq Scan on ${n['Relation Name']}`, buffers(n) / rows);
        }
      }
      // The filled week read by key: a few buffers per row.
      const inWeek = reads
        .filter((n) => filled.has(n['Relation Name']!))
        .reduce((sum, n) => sum + buffers(n), 0);
      if (inWeek / rows > WEEK_BUFFERS_PER_ROW) {
        breaks(`${what}: over ${WEEK_BUFFERS_PER_ROW} buffers per row in the filled week`, inWeek / rows);
      }
      // And the statement as a whole.
      const bound =
        kind === 'check' ? WEEK_BUFFERS_PER_ROW : BUFFERS_PER_ROW_AND_PARTITION * deliveryPartitions;
      if (buffers(plan) / rows > bound)
        breaks(`${what}: over ${bound} buffers per row`, buffers(plan) / rows);
      if (kind === 'claim') expect(plan['Actual Rows'], 'rows claimed').to.equal(BATCH);
      // The claim and every check read the filled week's deliveries (the checks nothing else).
      if (kind !== 'write' && !nodes.some((n) => n['Relation Name'] === deliveries)) {
        breaks(`${what}: no read of ${deliveries}`);
      }
    }
    expect(Object.fromEntries(broken)).to.deep.equal({});
  });
});
