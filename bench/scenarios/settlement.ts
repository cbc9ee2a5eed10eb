import type pg from 'pg';
import type { Child } from '../lib/children.ts';
import { type BenchContext, startService, waitFor } from '../lib/context.ts';
import { cpuSample, cpuUse } from '../lib/cpu.ts';
import { fewerThan, resetWork, scalar } from '../lib/db.ts';
import { insertEventsAndTasks } from '../lib/plain-steps.ts';
import { JOBS, judged, middleBy, round } from '../lib/report.ts';
import { roundRobin, workerRoundsOf } from '../lib/rounds.ts';
import {
  inflowSnapshots,
  instructionSnapshots,
  payoutSnapshots,
  seedDepositAddresses,
  seedPayouts,
  seedSettlement,
} from '../lib/seed.ts';
import { traceWorkers } from '../lib/trace.ts';

/**
 * Settlement matching: `settlementRows` CONFIRMED inflows, each exactly the expected amount of
 * one open instruction on its tenant's shared address, matched by the settlement workers of two
 * instances racing over the same rows; then every payout must have been paid exactly once. Against
 * the same writes done by plain set-based SQL, round-robin (three rounds in a full run, one in a
 * quick one), each run on a fresh seed.
 */

const REFERENCE = 'settle';
const BATCH = 500;

const matched = (pool: pg.Pool) => scalar(pool, `select count(*) from inflows where state = 'MATCHED'`);
// Matching's ledger entries: the payout's side of each inflow's ATTRIBUTED flow (entries are
// never deleted, so each run counts what it added).
const received = (pool: pg.Pool) =>
  scalar(
    pool,
    `select count(*) from ledger_entries where cause_object = 'inflow' and movement = 'money_received'`,
  );

async function seed(ctx: BenchContext, count: number): Promise<void> {
  const tenantIds = ctx.tenants.map((t) => t.id);
  await resetWork(ctx.pool);
  await seedPayouts(ctx.pool, { tenantIds, count, status: 'PENDING_PAYMENT', reference: REFERENCE });
  await seedDepositAddresses(ctx.pool, tenantIds);
  await seedSettlement(ctx.pool, REFERENCE);
}

export async function settlementScenario(ctx: BenchContext): Promise<void> {
  const { plan, pool, results } = ctx;
  const rows = plan.settlementRows;

  // The two instances and plain SQL, round-robin, each run on a fresh seed of the same rows.
  const config = { WORKER_POLL_INTERVAL_MS: 200 };
  const workerRun = async () => {
    await seed(ctx, rows);
    const entriesBefore = await received(pool);
    const instances: Child[] = [];
    let seconds: number;
    let finished: boolean;
    let cpu: ReturnType<typeof cpuUse>;
    try {
      instances.push(
        ...(await Promise.all([
          startService(ctx, { jobs: ['settlement'], config }),
          startService(ctx, { jobs: ['settlement'], config }),
        ])),
      );
      // From the moment both instances are up (their workers start matching at once).
      const started = performance.now();
      const before = cpuSample(instances.map((i) => i.pid));
      // Counted (a scan of every inflow) only once few are left to match.
      finished = await waitFor(
        async () =>
          (await fewerThan(pool, `inflows where state = 'CONFIRMED'`, 100)) && (await matched(pool)) >= rows,
        plan.workerCapS,
        // The end is known to within this; a look is an index probe of at most 100 inflows.
        100,
      );
      seconds = (performance.now() - started) / 1000;
      cpu = cpuUse(before, cpuSample(instances.map((i) => i.pid)), rows);
    } finally {
      await Promise.all(instances.map((i) => i.stop()));
    }
    const count = await matched(pool);
    return {
      count,
      finished,
      seconds: round(seconds, 2),
      rate: Math.round(count / seconds),
      cpu,
      doubles: await doubleMatches(pool, count),
      ledgerEntries: (await received(pool)) - entriesBefore,
    };
  };
  const plainRun = async () => {
    await seed(ctx, rows);
    const entriesBefore = await received(pool);
    const plain = await plainSettlement(pool, rows);
    return { ...plain, matched: await matched(pool), ledgerEntries: (await received(pool)) - entriesBefore };
  };
  const runs = await roundRobin(ctx, 'settlement', workerRoundsOf(plan), {
    'two instances matching': workerRun,
    'plain SQL batches': plainRun,
  });
  const workers = runs['two instances matching'];
  const plains = runs['plain SQL batches'];
  const jobs = JOBS.settlement;

  // Not finishing within the cap is a measurement (too slow), not a correctness failure.
  const count = workers.reduce((n, w) => n + w.count, 0);
  results.add({
    scenario: 'settlement',
    metric: `inflows matched within ${plan.workerCapS} s`,
    value: count,
    unit: `of ${rows * workers.length}`,
    jobs,
    pass: workers.every((w) => w.finished) && count === rows * workers.length,
  });
  ctx.results.check(
    'settlement: zero double matches',
    workers.every((w) => w.doubles.ok),
    workers.map((w) => w.doubles.detail).join('; '),
  );
  ctx.results.check(
    'settlement: matching posted each inflow to the ledger, as the plain SQL does',
    [...workers, ...plains].every((r) => r.ledgerEntries === rows),
    `${[...workers.map((w) => `service ${w.ledgerEntries}`), ...plains.map((p) => `plain ${p.ledgerEntries}`)].join('; ')} money_received entries, of ${rows} inflows`,
  );
  ctx.results.check(
    'settlement: plain SQL matched every inflow',
    plains.every((p) => p.matched === rows),
    plains.map((p) => `${p.matched} of ${rows} in ${p.seconds} s`).join('; '),
  );
  results.perRound(
    {
      scenario: 'settlement',
      metric: 'inflows matched per s (2 instances) vs plain SQL',
      unit: '/s',
      jobs,
      target: judged(plan, '≥ 0.6'),
    },
    workers.map((w, i) => ({ value: w.rate, baseline: plains[i]!.rate })),
    plan.quick ? undefined : { min: 0.6 },
  );
  // The CPU figures of the round whose rate was the median.
  const middle = middleBy(workers, (w) => w.rate);
  results.add({
    scenario: 'settlement',
    metric: 'service CPU per inflow (median round)',
    value: middle.cpu.serverMsPerOp,
    unit: 'ms',
    jobs,
  });
  results.add({
    scenario: 'settlement',
    metric: 'PostgreSQL CPU per inflow (median round)',
    value: middle.cpu.postgresMsPerOp,
    unit: 'ms',
    jobs,
  });
  results.details.settlement = {
    rows,
    openInstructionsPerAddress: Math.round(rows / ctx.tenants.length),
    workers,
    plains,
  };

  const items = plan.traceItems;
  await seed(ctx, items);
  const trace = await traceWorkers(ctx, {
    jobs: ['settlement'],
    items,
    config,
    done: async () => (await matched(pool)) >= items,
  });
  results.add({
    scenario: 'round trips',
    metric: 'settlement: round trips / inflow',
    value: trace.roundTripsPerOp,
    unit: '',
  });
  results.add({
    scenario: 'round trips',
    metric: 'settlement: transactions / inflow',
    value: trace.transactionsPerOp,
    unit: '',
  });
  results.details.traceSettlement = { ...trace, trips: trace.trips.slice(0, 60) };
}

/**
 * Every matched inflow went to exactly one payout, every payout was paid exactly once, by its own
 * inflow, with exactly one event and one dispatch task: `rows` is how many inflows were matched.
 */
async function doubleMatches(pool: pg.Pool, rows: number): Promise<{ ok: boolean; detail: string }> {
  const doubles = await scalar(
    pool,
    `select count(*) from (select payout_id from inflows where state = 'MATCHED' group by payout_id having count(*) > 1) d`,
  );
  const paidTwice = await scalar(
    pool,
    `select count(*) from (select payout_id from payout_status_timeline where to_status = 'PAYMENT_RECEIVED'
                            group by payout_id having count(*) > 1) d`,
  );
  const received = await scalar(pool, `select count(*) from payouts where status = 'PAYMENT_RECEIVED'`);
  const paid = await scalar(pool, `select count(*) from payment_instructions where status = 'PAID'`);
  const wrong = await scalar(
    pool,
    `select count(*) from inflows f join payment_instructions i on i.id = f.instruction_id
      where f.state = 'MATCHED' and (f.payout_id <> i.payout_id or f.amount <> i.expected_amount)`,
  );
  const events = await scalar(
    pool,
    `select count(*) from outbox_events where event_type = 'payout.payment_received'`,
  );
  const dispatch = await scalar(pool, `select count(*) from tasks where kind = 'DISPATCH'`);
  return {
    ok:
      doubles === 0 &&
      paidTwice === 0 &&
      wrong === 0 &&
      received === rows &&
      paid === rows &&
      events === rows &&
      dispatch === rows,
    detail:
      `payouts with two matched inflows ${doubles}, paid twice ${paidTwice}, mismatched ${wrong}; ` +
      `PAYMENT_RECEIVED ${received}, instructions PAID ${paid}, events ${events}, dispatch tasks ${dispatch} ` +
      `for ${rows} matched inflows`,
  };
}

/**
 * The same writes as matching, set-based: take a batch of CONFIRMED inflows oldest first, join
 * each to the open instruction of exactly its amount on its address, and write inflow MATCHED
 * (with its machine's snapshot),
 * instruction PAID, payout PAYMENT_RECEIVED with its total, the timeline row, the event, the
 * dispatch task and the ledger's entries (two per inflow, balanced, as matching posts them).
 * One transaction per batch.
 */
export async function plainSettlement(
  pool: pg.Pool,
  rows: number,
): Promise<{ rate: number; seconds: number }> {
  const now = new Date();
  const payoutSnapshot = payoutSnapshots(now).PAYMENT_RECEIVED;
  const paidSnapshot = instructionSnapshots(new Date(now.getTime() + 3_600_000)).PAID;
  const matchedSnapshot = inflowSnapshots().MATCHED;
  const started = performance.now();
  let done = 0;
  for (let batch = 0; done < rows && batch < rows; batch++) {
    const client = await pool.connect();
    try {
      await client.query('begin');
      const { rows: pairs } = await client.query(
        `with due as (select id, to_account, amount, tenant_id from inflows where state = 'CONFIRMED'
                       order by created_at, id limit $1 for update skip locked)
         select due.id as inflow_id, i.id as instruction_id, i.payout_id
           from due join payment_instructions i
             on i.account_unique = due.to_account and i.tenant_id = due.tenant_id
            and i.expected_amount = due.amount and i.status = 'UNPAID'
            for update of i`,
        [BATCH],
      );
      if (pairs.length === 0) {
        await client.query('commit');
        break;
      }
      const inflowIds = pairs.map((p: { inflow_id: string }) => p.inflow_id);
      const instructionIds = pairs.map((p: { instruction_id: string }) => p.instruction_id);
      const payoutIds = pairs.map((p: { payout_id: string }) => p.payout_id);
      await client.query(
        `update inflows f set state = 'MATCHED', snapshot = jsonb_set($4::jsonb, '{context,payoutId}', to_jsonb(x.payout_id)),
                is_matched = true, matched_at = now(), payout_id = x.payout_id,
                instruction_id = x.instruction_id, updated_at = now()
           from unnest($1::uuid[], $2::uuid[], $3::uuid[]) as x(inflow_id, instruction_id, payout_id)
          where f.id = x.inflow_id`,
        [inflowIds, instructionIds, payoutIds, matchedSnapshot],
      );
      await client.query(
        `update payment_instructions set status = 'PAID', snapshot = $2, paid_at = now(), updated_at = now() where id = any($1)`,
        [instructionIds, paidSnapshot],
      );
      await client.query(
        `update payouts p set status = 'PAYMENT_RECEIVED', snapshot = $2, received_amount = p.settlement_amount,
                updated_at = now() where id = any($1)`,
        [payoutIds, payoutSnapshot],
      );
      await client.query(
        `insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code, reason_detail, created_at)
         select gen_random_uuid(), p.tenant_id, p.id, 'PENDING_PAYMENT', 'PAYMENT_RECEIVED', 'SYSTEM', 'PAYMENT_RECEIVED',
                jsonb_build_object('match_rule', 'EXACT', 'received_total', p.received_amount, 'expected_amount', p.settlement_amount), now()
           from payouts p where p.id = any($1)`,
        [payoutIds],
      );
      await insertEventsAndTasks(client, payoutIds, 'payout.payment_received', 'DISPATCH');
      // The ledger, as matching posts it in the same transaction (the inflow's ATTRIBUTED flow):
      // one balanced transaction per inflow, its money from the tenant's suspense to the payout.
      await client.query(
        `with f as (select id, tenant_id, payout_id, amount, currency, gen_random_uuid() as tx
                      from inflows where id = any($1))
         insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
             cause_object, cause_id, transition, created_at)
         select gen_random_uuid(), f.tx, e.account, f.currency, e.amount, f.tenant_id, f.payout_id, e.movement,
                'inflow', f.id, 'MATCH (CONFIRMED → MATCHED)', now()
           from f cross join lateral (values
             ('tenants:' || f.tenant_id || ':suspense', -f.amount, null),
             ('tenants:' || f.tenant_id || ':payouts:' || f.payout_id, f.amount, 'money_received'))
             as e(account, amount, movement)`,
        [inflowIds],
      );
      await client.query('commit');
      done += pairs.length;
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }
  const seconds = (performance.now() - started) / 1000;
  return { rate: Math.round(done / seconds), seconds: round(seconds, 2) };
}
