import type pg from 'pg';
import { countsStatementText } from '#src/compliance/counts.ts';
import { EXCEPTION_QUEUES, exceptionCounts } from '#src/compliance/exceptions.ts';
import { loadConfig } from '#src/config.ts';
import { type PlanNode, planNodes } from '#src/db/plan.ts';
import { setLocal, WITHOUT_JIT } from '#src/db/sql.ts';
import { buildComplianceModel } from '#src/docs/compliance.ts';
import { MACHINE_DOCS } from '#src/docs/registry.ts';
import { type BenchContext, startService } from '../lib/context.ts';
import { median, round } from '../lib/report.ts';

/**
 * The operators' console on a history of `plan.listRows` payouts (100,000 in the full run), with
 * as many inflows, refunds for the failed ones and two webhook deliveries each; one object in a
 * hundred waits for a person. Measured:
 *
 * - the database time of `admin.exceptions`' counts (EXPLAIN ANALYZE's execution time, median),
 *   against the same counts read from the tables (index scans off): the baseline of this run;
 *   both without JIT compilation, as the service runs them (`WITHOUT_JIT`);
 * - the same for `admin.machines`' live counts per state;
 * - each procedure end to end through a service instance, whose counts must be the seeded ones.
 *
 * Checks: the exceptions take well under 100 ms of database time, and neither statement reads a
 * hot table with a sequential scan.
 */

// Refunds are few (one per failed payout): reading that table whole is what its size calls for.
const HOT = ['payouts', 'inflows', 'webhook_deliveries'];
/** One object in this many waits for a person. */
const EVERY = 100;

async function seed(db: pg.Pool, tenantId: string, rows: number): Promise<void> {
  const waiting = `n % ${EVERY} = 0`;
  const at = `now() - interval '400 days' + n * interval '5 minutes'`;
  await db.query(
    `insert into payouts (id, tenant_id, status, snapshot, merchant_reference, destination_type, destination_country,
        destination_currency, destination_amount, destination_account_unique, destination_provider_name,
        settlement_currency, settlement_amount, exchange_rate, mid_market_rate, platform_fee_amount,
        network_fee_amount, total_fee_amount, received_amount, is_refunded, created_at, updated_at)
     select gen_random_uuid(), $1, s.status, s.snapshot::jsonb, 'console-' || n, 'BANK_ACCOUNT', 'NG', 'NGN', 1000,
            '0123456789', 'Guaranty Trust Bank', 'NGN', 1000, 1, 1, 0, 0, 0, s.received, s.refunded, s.at, s.at
       from (select n, ${at} as at,
                    case when not (${waiting}) then (case when n % 7 = 0 then 'EXPIRED' else 'SUCCESSFUL' end)
                         when n % 3 = 0 then 'PENDING_PAYMENT' else 'FAILED' end as status,
                    case when not (${waiting}) then (case when n % 7 = 0 then '{"value":"EXPIRED","status":"done"}'
                                                         else '{"value":"SUCCESSFUL","status":"done"}' end)
                         when n % 3 = 0 then '{"value":{"PENDING_PAYMENT":"held"},"status":"active"}'
                         else '{"value":"FAILED","status":"done"}' end as snapshot,
                    case when ${waiting} then 400 else 1000 end as received,
                    (${waiting}) and n % 3 = 2 as refunded
               from generate_series(1, $2::int) as n) s`,
    [tenantId, rows],
  );
  await db.query(
    `insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code, created_at)
     select gen_random_uuid(), tenant_id, id, null, 'CREATED', 'API', 'PAYOUT_CREATED', created_at
       from payouts where merchant_reference like 'console-%'
     union all
     select gen_random_uuid(), tenant_id, id, 'PENDING_PAYMENT', 'PENDING_PAYMENT', 'SYSTEM', 'SETTLEMENT_UNDERPAID', created_at
       from payouts where merchant_reference like 'console-%' and status = 'PENDING_PAYMENT'`,
  );
  await db.query(
    `insert into inflows (id, tenant_id, rail, provider_name, amount, currency, external_ref, to_account, state,
        snapshot, is_matched, overpayment_amount, arrived_at, created_at, updated_at)
     select gen_random_uuid(), $1, 'BANK_TRANSFER', 'Sandbox Bank', 1000, 'NGN', 'console-' || n, '9000000000',
            case when ${waiting} then 'UNMATCHED' else 'MATCHED' end,
            case when ${waiting} then '{"value":"UNMATCHED","status":"active"}'
                 else '{"value":"MATCHED","status":"done"}' end::jsonb,
            not (${waiting}), 0, ${at}, ${at}, ${at}
       from generate_series(1, $2::int) as n`,
    [tenantId, rows],
  );
  await db.query(
    `insert into refunds (id, tenant_id, payout_id, status, snapshot, received_amount, received_currency,
        network_fee_amount, refund_amount, destination_id, destination_type, destination_provider_name,
        destination_masked, destination_account, created_at, updated_at)
     select gen_random_uuid(), p.tenant_id, p.id, 'FAILED', '{"value":"FAILED","status":"active"}'::jsonb,
            400, 'NGN', 0, 400, gen_random_uuid(), 'BANK_ACCOUNT', 'Guaranty Trust Bank', '******6789', 'sealed',
            p.updated_at, p.updated_at
       from payouts p where p.merchant_reference like 'console-%' and p.is_refunded`,
  );
  // One event per delivery, as publishing makes them.
  await db.query(
    `with events as (
       insert into outbox_events (id, tenant_id, event_type, payload, published_at, created_at)
       select gen_random_uuid(), $1, 'payout.created', '{}', now(), now() from generate_series(1, $2::int)
       returning id, created_at),
     numbered as (select id, created_at, row_number() over (order by id) as n from events)
     insert into webhook_deliveries (id, tenant_id, event_id, event_type, target_url, target_origin, status, snapshot,
        attempts, created_at, updated_at, event_created_at)
     select gen_random_uuid(), $1, numbered.id, 'payout.created', 'https://hooks.example/' || n,
            'https://hooks.example:443', case when ${waiting} then 'DEAD' else 'SUCCEEDED' end,
            case when ${waiting} then '{"value":"DEAD","status":"done"}'
                 else '{"value":"SUCCEEDED","status":"done"}' end::jsonb,
            5, ${at}, ${at}, numbered.created_at
       from numbered`,
    [tenantId, rows * 2],
  );
  // As autovacuum leaves settled history: pages all visible, statistics fresh.
  await db.query('vacuum analyze payouts, payout_status_timeline, inflows, refunds, webhook_deliveries');
}

/** Median database time of `text` over `runs` (EXPLAIN ANALYZE), and the hot tables it reads whole. */
async function databaseTime(
  db: pg.Pool,
  text: string,
  runs: number,
  tablesOnly: boolean,
): Promise<{ ms: number; seqScans: string[]; scans: string[] }> {
  const client = await db.connect();
  try {
    await client.query('begin');
    // As the service runs them (src/compliance/exceptions.ts, counts.ts), both sides.
    for (const set of setLocal(WITHOUT_JIT)) await client.query(set);
    if (tablesOnly) {
      await client.query('set local enable_indexscan = off');
      await client.query('set local enable_indexonlyscan = off');
      await client.query('set local enable_bitmapscan = off');
    }
    const times: number[] = [];
    let plan: PlanNode | undefined;
    for (let i = 0; i < runs; i++) {
      const { rows } = await client.query(`explain (analyze, format json) ${text}`);
      const out = (rows[0] as { 'QUERY PLAN': { Plan: PlanNode; 'Execution Time': number }[] })[
        'QUERY PLAN'
      ][0]!;
      times.push(out['Execution Time']);
      plan = out.Plan;
    }
    await client.query('rollback');
    const hot = planNodes(plan!).filter((n) => n['Relation Name'] && HOT.includes(n['Relation Name']));
    return {
      ms: round(median(times), 2),
      seqScans: hot.filter((n) => n['Node Type'] === 'Seq Scan').map((n) => n['Relation Name']!),
      scans: hot.map(
        (n) => `${n['Relation Name']}: ${n['Node Type']}${n['Index Name'] ? ` ${n['Index Name']}` : ''}`,
      ),
    };
  } finally {
    client.release();
  }
}

async function adminQuery(url: string, token: string, procedure: string): Promise<{ ms: number; data: any }> {
  const started = performance.now();
  const res = await fetch(`${url}/trpc/${procedure}`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { result?: { data: unknown } };
  if (!res.ok || !body.result) throw new Error(`${procedure}: ${res.status} ${JSON.stringify(body)}`);
  return { ms: performance.now() - started, data: body.result.data };
}

/** The exceptions' counts with every queue's overdue cut-off at the moment the statement runs. */
const exceptionsText = exceptionCounts.text.replace(/\$\d+(?=::timestamptz)/g, 'now()');

export async function consoleCountsScenario(ctx: BenchContext): Promise<void> {
  const { plan, results } = ctx;
  const rows = plan.listRows;
  const before = await ctx.pool.query(exceptionsText);
  const already = new Map(
    (before.rows as { queue: string; count: number }[]).map((r) => [r.queue, Number(r.count)]),
  );
  ctx.log(`console-counts: seeding ${rows.toLocaleString('en-US')} payouts, inflows, refunds and deliveries`);
  await seed(ctx.pool, ctx.listTenant.id, rows);

  const runs = plan.quick ? 5 : 21;
  const model = buildComplianceModel(MACHINE_DOCS, loadConfig({})).model;
  const statements: [string, string][] = [
    ['exceptions', exceptionsText],
    ['machines', countsStatementText(model)],
  ];
  for (const [name, text] of statements) {
    ctx.log(`console-counts: ${name} counts, database time`);
    const indexed = await databaseTime(ctx.pool, text, runs, false);
    const tables = await databaseTime(ctx.pool, text, runs, true);
    results.ratio(
      {
        scenario: 'console-counts',
        metric: `admin.${name} counts, database time vs reading the tables`,
        value: indexed.ms,
        unit: 'ms',
        baseline: tables.ms,
        target: name === 'exceptions' ? '≤ 0.25' : undefined,
      },
      name === 'exceptions' ? { max: 0.25 } : undefined,
    );
    // The machines' counts read payouts whole: their status has no index of its own (see the
    // exception_queues migration); every other hot table, and every exception queue, from an index.
    const whole = name === 'machines' ? indexed.seqScans.filter((t) => t !== 'payouts') : indexed.seqScans;
    results.check(
      `admin.${name} reads no hot table whole${name === 'machines' ? ' but payouts' : ''} (${rows.toLocaleString('en-US')} payouts)`,
      whole.length === 0,
      indexed.scans.join('; '),
    );
    if (name === 'exceptions') {
      results.check(
        `admin.exceptions counts take well under 100 ms of database time`,
        indexed.ms < 50,
        `${indexed.ms} ms (median of ${runs})`,
      );
    }
    results.details[`console_${name}`] = { indexed, tables };
  }

  ctx.log('console-counts: admin.exceptions and admin.machines through the service');
  const service = await startService(ctx);
  try {
    const times: Record<string, number[]> = { 'admin.exceptions': [], 'admin.machines': [] };
    let exceptions: any;
    for (let i = 0; i < runs; i++) {
      for (const procedure of Object.keys(times)) {
        const { ms, data } = await adminQuery(service.url, ctx.secrets.adminToken, procedure);
        times[procedure]!.push(ms);
        if (procedure === 'admin.exceptions') exceptions = data;
      }
    }
    for (const [procedure, ms] of Object.entries(times)) {
      results.add({
        scenario: 'console-counts',
        metric: `${procedure} response time (median, one client)`,
        value: round(median(ms), 1),
        unit: 'ms',
      });
    }
    // Row n waits when n % 100 = 0: a third of those held underpaid, a third holding money, a third with a failed refund.
    const waiting = Math.floor(rows / EVERY);
    const third = (r: number) => Math.floor((waiting + ((3 - r) % 3)) / 3);
    const expected: Record<string, number> = {
      PAYOUTS_HELD_UNDERPAID: third(0),
      INFLOWS_UNMATCHED: waiting,
      REFUNDS_FAILED: third(2),
      MONEY_HELD_NO_REFUND_DESTINATION: third(1),
      WEBHOOK_DELIVERIES_DEAD: Math.floor((rows * 2) / EVERY),
    };
    const counted = Object.fromEntries(
      (exceptions.queues as { code: string; count: number }[]).map((q) => [q.code, q.count]),
    );
    const wanted = Object.fromEntries(
      EXCEPTION_QUEUES.map((q) => [q, (expected[q] ?? 0) + (already.get(q) ?? 0)]),
    );
    results.check(
      'admin.exceptions counts what was seeded',
      JSON.stringify(counted) === JSON.stringify(wanted),
      JSON.stringify(counted),
    );
  } finally {
    await service.stop();
  }
}
