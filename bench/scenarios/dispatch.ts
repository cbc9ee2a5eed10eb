import type pg from 'pg';
import { DISPATCH_BATCH } from '#src/dispatch/service.ts';
import { DEFAULT_PROCESSOR_NAME } from '#src/providers/http-rails.ts';
import type { Child } from '../lib/children.ts';
import { type BenchContext, startService, waitFor } from '../lib/context.ts';
import { cpuSample, cpuUse } from '../lib/cpu.ts';
import { fewerThan, resetWork, scalar, settle } from '../lib/db.ts';
import { insertEventsAndTasks } from '../lib/plain-steps.ts';
import { JOBS, judged, middleBy, round } from '../lib/report.ts';
import { roundRobin, workerRoundsOf } from '../lib/rounds.ts';
import {
  outflowSnapshots,
  payoutSnapshots,
  seedDepositAddresses,
  seedPayouts,
  seedSettlement,
} from '../lib/seed.ts';
import { traceWorkers } from '../lib/trace.ts';
import { plainSettlement } from './settlement.ts';

/**
 * Dispatch: `dispatchRows` PAYMENT_RECEIVED payouts, each with its DISPATCH task and the ledger
 * entries matching wrote (seeded as the settlement scenario's plain SQL leaves them), sent to the
 * sandbox processor over HTTP by the dispatch worker of one instance, timed until every payout's
 * attempt has the processor's answer (PROCESSING, its SENT flow in the ledger); then every payout
 * must have been submitted exactly once. Against the same writes done by plain set-based SQL plus
 * the same HTTP submits to the same processor, one after another as the worker makes them (the
 * processor's own cost is on both sides), round-robin, each run on a fresh seed.
 *
 * The destination accounts end in `1004` (docs/sandbox.md): the processor accepts and settles
 * without calling back, so neither side handles callbacks while it is timed (a callback is its
 * own path, not dispatch's).
 */

const REFERENCE = 'disp';
const BATCH = 500;
/** Accepted and settled by the sandbox processor, with no callback. */
const ACCOUNT = '0123451004';
const PROCESSOR_ACCOUNT = `transit:processor:${DEFAULT_PROCESSOR_NAME}`;
/** A dispatch instance: the status query falls outside the run (no outcome is queried while timed). */
const WORKER_INSTANCE = {
  jobs: ['dispatch'],
  config: { WORKER_POLL_INTERVAL_MS: 200, OUTFLOW_QUERY_GRACE_MS: 3_600_000 },
};
/** Entries of the SENT flow per accepted attempt: three legs, two entries each. */
const SENT_ENTRIES = 6;

const answered = (pool: pg.Pool) => scalar(pool, `select count(*) from outflows where status <> 'PENDING'`);
/** The SENT flow's entries (entries are never deleted, so each run counts what it added). */
const sentEntries = (pool: pg.Pool) =>
  scalar(pool, `select count(*) from ledger_entries where cause_object = 'outflow'`);

/** `rows` payouts in PAYMENT_RECEIVED, as matching leaves them: DISPATCH task, event, ledger entries. */
async function seed(ctx: BenchContext, rows: number): Promise<void> {
  const tenantIds = ctx.tenants.map((t) => t.id);
  await resetWork(ctx.pool);
  await seedPayouts(ctx.pool, { tenantIds, count: rows, status: 'PENDING_PAYMENT', reference: REFERENCE });
  await ctx.pool.query(`update payouts set destination_account_unique = $1`, [ACCOUNT]);
  await seedDepositAddresses(ctx.pool, tenantIds);
  await seedSettlement(ctx.pool, REFERENCE);
  await plainSettlement(ctx.pool, rows);
  const received = await scalar(ctx.pool, `select count(*) from payouts where status = 'PAYMENT_RECEIVED'`);
  if (received !== rows) throw new Error(`dispatch seed: ${received} of ${rows} payouts PAYMENT_RECEIVED`);
  await settle(ctx.pool);
}

export async function dispatchScenario(ctx: BenchContext): Promise<void> {
  const { plan, pool, results } = ctx;
  const rows = plan.dispatchRows;

  const workerRun = async () => {
    await seed(ctx, rows);
    const entriesBefore = await sentEntries(pool);
    let instance: Child | undefined;
    let seconds: number;
    let finished: boolean;
    let cpu: ReturnType<typeof cpuUse>;
    try {
      instance = await startService(ctx, WORKER_INSTANCE);
      // From the moment the instance is up (its worker starts dispatching at once).
      const started = performance.now();
      const before = cpuSample([instance.pid]);
      finished = await waitFor(
        async () =>
          (await fewerThan(pool, `tasks where kind = 'DISPATCH' and done_at is null`, 100)) &&
          (await answered(pool)) >= rows,
        plan.workerCapS,
        100,
      );
      seconds = (performance.now() - started) / 1000;
      cpu = cpuUse(before, cpuSample([instance.pid]), rows);
    } finally {
      await instance?.stop();
    }
    const count = await answered(pool);
    return {
      count,
      finished,
      seconds: round(seconds, 2),
      rate: Math.round(count / seconds),
      cpu,
      once: await submittedOnce(ctx, rows),
      ledgerEntries: (await sentEntries(pool)) - entriesBefore,
    };
  };
  const plainRun = async () => {
    await seed(ctx, rows);
    const entriesBefore = await sentEntries(pool);
    const plain = await plainDispatch(pool, ctx.sandboxUrl, rows);
    return {
      ...plain,
      answered: await answered(pool),
      once: await submittedOnce(ctx, rows),
      ledgerEntries: (await sentEntries(pool)) - entriesBefore,
    };
  };
  const runs = await roundRobin(ctx, 'dispatch', workerRoundsOf(plan), {
    'one instance dispatching': workerRun,
    'plain SQL batches + the same submits': plainRun,
  });
  const workers = runs['one instance dispatching'];
  const plains = runs['plain SQL batches + the same submits'];
  const jobs = JOBS.dispatch;

  // Not finishing within the cap is a measurement (too slow), not a correctness failure.
  const count = workers.reduce((n, w) => n + w.count, 0);
  results.add({
    scenario: 'dispatch',
    metric: `payouts dispatched within ${plan.workerCapS} s`,
    value: count,
    unit: `of ${rows * workers.length}`,
    jobs,
    pass: workers.every((w) => w.finished) && count === rows * workers.length,
  });
  results.check(
    'dispatch: every payout submitted exactly once, one attempt each',
    workers.every((w) => w.once.ok),
    workers.map((w) => w.once.detail).join('; '),
  );
  results.check(
    'dispatch: every accepted attempt posted its SENT flow to the ledger, as the plain SQL does',
    [...workers, ...plains].every((r) => r.ledgerEntries === rows * SENT_ENTRIES),
    `${[...workers.map((w) => `service ${w.ledgerEntries}`), ...plains.map((p) => `plain ${p.ledgerEntries}`)].join('; ')} outflow entries, of ${rows * SENT_ENTRIES} (${SENT_ENTRIES} per attempt)`,
  );
  results.check(
    'dispatch: plain SQL dispatched every payout, each submitted once',
    plains.every((p) => p.answered === rows && p.once.ok),
    plains.map((p) => `${p.answered} of ${rows} in ${p.seconds} s; ${p.once.detail}`).join('; '),
  );
  results.perRound(
    {
      scenario: 'dispatch',
      metric: 'payouts dispatched per s (1 instance) vs plain SQL with the same submits',
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
    scenario: 'dispatch',
    metric: 'service CPU per payout (median round)',
    value: middle.cpu.serverMsPerOp,
    unit: 'ms',
    jobs,
  });
  results.add({
    scenario: 'dispatch',
    metric: 'PostgreSQL CPU per payout (median round)',
    value: middle.cpu.postgresMsPerOp,
    unit: 'ms',
    jobs,
  });
  results.details.dispatch = { rows, workers, plains };

  const items = plan.traceItems;
  await seed(ctx, items);
  const trace = await traceWorkers(ctx, {
    ...WORKER_INSTANCE,
    items,
    done: async () => (await answered(pool)) >= items,
  });
  results.add({
    scenario: 'round trips',
    metric: 'dispatch: round trips / payout',
    value: trace.roundTripsPerOp,
    unit: '',
  });
  results.add({
    scenario: 'round trips',
    metric: 'dispatch: transactions / payout',
    value: trace.transactionsPerOp,
    unit: '',
  });
  results.details.traceDispatch = { ...trace, trips: trace.trips.slice(0, 60) };
  // Dispatch records a batch's answers in one transaction: one ledger statement for the outflows'
  // flows, whatever their entries, and none from the payouts (DISPATCH_ACCEPTED moves no money).
  const ledgerStatements = trace.statements
    .filter((st) => /^\s*insert into ledger_entries/i.test(st.sql))
    .reduce((n, st) => n + st.count, 0);
  const batches = Math.ceil(items / DISPATCH_BATCH);
  results.check(
    'dispatch: the ledger written in one statement per batch of accepted attempts',
    ledgerStatements >= 1 && ledgerStatements <= batches,
    `${ledgerStatements} ledger inserts for ${items} traced payouts (${batches} batch(es) of up to ${DISPATCH_BATCH})`,
  );
}

/** How many of the processor's records are looked at one by one (every one in a quick run). */
const RECORDS_CHECKED = 1000;

/**
 * Every payout has exactly one attempt, accepted, whose reference the processor has; and the
 * processor received each reference once (its own count of submissions, read for every attempt
 * up to {@link RECORDS_CHECKED}, a sample beyond: its listing scans every payout it ever took).
 */
async function submittedOnce(ctx: BenchContext, rows: number): Promise<{ ok: boolean; detail: string }> {
  const { pool, sandboxUrl } = ctx;
  const attempts = await scalar(pool, `select count(*) from outflows`);
  const twice = await scalar(
    pool,
    `select count(*) from (select payout_id from outflows group by payout_id having count(*) > 1) d`,
  );
  const processing = await scalar(pool, `select count(*) from payouts where status = 'PROCESSING'`);
  const { rows: outflows } = await pool.query<{ id: string }>(`select id from outflows order by random()`);
  let unknown = 0;
  let resent = 0;
  const get = async (path: string) => {
    const res = await fetch(`${sandboxUrl}${path}`);
    if (res.status === 404) return null;
    if (!res.ok) throw new Error(`GET ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as { data?: { submissions: number }[] };
  };
  // Eight requests in flight at a time: the processor has every reference (a lookup by key).
  for (let i = 0; i < outflows.length; i += 8) {
    await Promise.all(
      outflows.slice(i, i + 8).map(async ({ id }, j) => {
        if ((await get(`/processor/payouts/${id}`)) === null) unknown++;
        else if (i + j < RECORDS_CHECKED) {
          const list = await get(`/sandbox/processor/payouts?reference=${id}`);
          if (list?.data?.length !== 1 || list.data[0]!.submissions !== 1) resent++;
        }
      }),
    );
  }
  const checked = Math.min(outflows.length, RECORDS_CHECKED);
  return {
    ok: attempts === rows && twice === 0 && processing === rows && unknown === 0 && resent === 0,
    detail:
      `${attempts} attempts for ${rows} payouts (${twice} with two), ${processing} PROCESSING; ` +
      `unknown to the processor ${unknown}; submitted more than once ${resent} of ${checked} checked`,
  };
}

/** One submit, as the service's processor client sends it; the processor's status back. */
async function submit(
  sandboxUrl: string,
  p: { outflow_id: string; destination_amount: string; destination_account_unique: string },
): Promise<{ status: string; processor_reference: string | null }> {
  const res = await fetch(`${sandboxUrl}/processor/payouts`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      reference: p.outflow_id,
      attempt: 1,
      destination_type: 'BANK_ACCOUNT',
      country: 'NG',
      currency: 'NGN',
      amount: p.destination_amount,
      account_unique: p.destination_account_unique,
      provider_code: '058',
      provider_name: 'Guaranty Trust Bank',
      account_name: 'ADAEZE OKONKWO',
      // Never called: the accounts' processor sends no callback.
      callback_url: 'http://127.0.0.1:9/callbacks/processor',
    }),
  });
  const body = (await res.json()) as { status: string; processor_reference: string | null };
  if (!res.ok) throw new Error(`submit ${p.outflow_id}: ${res.status} ${JSON.stringify(body)}`);
  return body;
}

/**
 * The same writes as dispatch, set-based, with the same submits: per batch, one transaction
 * claims the DISPATCH tasks and inserts the PENDING attempts; then each attempt is submitted to
 * the processor, one after another as the worker does (no transaction open meanwhile); then one
 * transaction writes the answers: outflow PROCESSING with its reference, payout PROCESSING, the
 * timeline row, the payout.processing event, the QUERY_OUTFLOW task, the ledger's SENT flow
 * (six entries per attempt, balanced per currency, as dispatch posts them) and the DISPATCH task
 * done.
 */
async function plainDispatch(
  pool: pg.Pool,
  sandboxUrl: string,
  rows: number,
): Promise<{ rate: number; seconds: number }> {
  const now = new Date();
  const outflow = outflowSnapshots(now);
  const payoutSnapshot = payoutSnapshots(now).PROCESSING;
  const started = performance.now();
  let done = 0;
  const inTransaction = async <T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> => {
    const client = await pool.connect();
    try {
      await client.query('begin');
      const out = await work(client);
      await client.query('commit');
      return out;
    } catch (err) {
      await client.query('rollback').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  };
  for (let batch = 0; done < rows && batch < rows; batch++) {
    const attempts = await inTransaction(async (client) => {
      const { rows: claimed } = await client.query(
        `with due as (select id from tasks where kind = 'DISPATCH' and done_at is null and due_at <= now()
                       and (leased_until is null or leased_until < now())
                       order by due_at limit $1 for update skip locked),
              leased as (update tasks t set leased_until = now() + interval '1 minute', attempts = attempts + 1,
                                updated_at = now()
                           from due where t.id = due.id returning t.id, t.subject_id),
              attempts as (
                insert into outflows (id, tenant_id, payout_id, status, snapshot, processor, attempt_number,
                    destination_amount, destination_currency, retryable, created_at, updated_at)
                select gen_random_uuid(), p.tenant_id, p.id, 'PENDING', $2, $3, 1, p.destination_amount,
                       p.destination_currency, false, now(), now()
                  from leased join payouts p on p.id = leased.subject_id and p.status = 'PAYMENT_RECEIVED'
                returning id, payout_id, destination_amount)
         select a.id as outflow_id, a.payout_id, a.destination_amount::text, p.destination_account_unique
           from attempts a join payouts p on p.id = a.payout_id`,
        [BATCH, outflow.PENDING, DEFAULT_PROCESSOR_NAME],
      );
      return claimed as {
        outflow_id: string;
        payout_id: string;
        destination_amount: string;
        destination_account_unique: string;
      }[];
    });
    if (attempts.length === 0) break;
    const references: string[] = [];
    for (const attempt of attempts) {
      const answer = await submit(sandboxUrl, attempt);
      if (answer.status !== 'ACCEPTED') {
        throw new Error(`plain dispatch: ${attempt.outflow_id} answered ${answer.status}`);
      }
      references.push(answer.processor_reference ?? '');
    }
    const outflowIds = attempts.map((a) => a.outflow_id);
    const payoutIds = attempts.map((a) => a.payout_id);
    await inTransaction(async (client) => {
      await client.query(
        `update outflows o set status = 'PROCESSING',
                snapshot = jsonb_set($3::jsonb, '{context,processorReference}', to_jsonb(x.reference)),
                processor_reference = x.reference, dispatched_at = now(), updated_at = now()
           from unnest($1::uuid[], $2::text[]) as x(id, reference) where o.id = x.id`,
        [outflowIds, references, outflow.PROCESSING],
      );
      await client.query(
        `update payouts set status = 'PROCESSING', snapshot = $2, updated_at = now() where id = any($1)`,
        [payoutIds, payoutSnapshot],
      );
      await client.query(
        `insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code, metadata, created_at)
         select gen_random_uuid(), o.tenant_id, o.payout_id, 'PAYMENT_RECEIVED', 'PROCESSING', 'SYSTEM', 'DISPATCHED',
                jsonb_build_object('outflow_id', o.id, 'attempt_number', o.attempt_number,
                                   'processor_reference', o.processor_reference), now()
           from outflows o where o.id = any($1)`,
        [outflowIds],
      );
      await insertEventsAndTasks(client, payoutIds, 'payout.processing', 'QUERY_OUTFLOW');
      // The SENT flow, one balanced transaction per attempt: the payout's money converted at
      // its locked rate (settlement amount less fees), the destination amount to the processor.
      await client.query(
        `with o as (select o.id, o.tenant_id, o.payout_id, o.destination_amount, o.destination_currency,
                           p.settlement_amount - p.total_fee_amount as converted, p.settlement_currency,
                           'tenants:' || o.tenant_id || ':payouts:' || o.payout_id as payout_account,
                           gen_random_uuid() as tx
                      from outflows o join payouts p on p.id = o.payout_id where o.id = any($1))
         insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
             cause_object, cause_id, transition, created_at)
         select gen_random_uuid(), o.tx, e.account, e.currency, e.amount, o.tenant_id, o.payout_id, e.movement,
                'outflow', o.id, 'ACCEPTED (PENDING → PROCESSING)', now()
           from o cross join lateral (values
             (o.payout_account, o.settlement_currency, -o.converted, 'conversion'),
             ('conversion', o.settlement_currency, o.converted, null),
             ('conversion', o.destination_currency, -o.destination_amount, null),
             (o.payout_account, o.destination_currency, o.destination_amount, 'conversion'),
             (o.payout_account, o.destination_currency, -o.destination_amount, null),
             ($2, o.destination_currency, o.destination_amount, null))
             as e(account, currency, amount, movement)`,
        [outflowIds, PROCESSOR_ACCOUNT],
      );
      await client.query(
        `update tasks set done_at = now(), leased_until = null, updated_at = now()
          where kind = 'DISPATCH' and done_at is null and subject_id = any($1)`,
        [payoutIds],
      );
    });
    done += attempts.length;
  }
  const seconds = (performance.now() - started) / 1000;
  return { rate: Math.round(done / seconds), seconds: round(seconds, 2) };
}
