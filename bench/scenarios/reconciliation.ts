import type pg from 'pg';
import { dayBefore, dayEnd, dayOf, dayStart } from '#src/lib/days.ts';
import { DEFAULT_PROCESSOR_NAME } from '#src/providers/http-rails.ts';
import { pullSettlementChanges } from '#src/reconciliation/records.ts';
import type { SandboxChildOptions } from '../children/sandbox.ts';
import { startChild } from '../lib/children.ts';
import { type BenchContext, startService } from '../lib/context.ts';
import { benchDeps, closeBenchDeps } from '../lib/deps.ts';
import { OUTFLOW_AMOUNT_SQL, outflowAtSql } from '../lib/recon-outflows.ts';
import { round } from '../lib/report.ts';
import { roundRobin, roundsOf } from '../lib/rounds.ts';

/**
 * Reconciliation of one day of two rails. The bank: `RECON_ROWS` lines of the bank's statement,
 * as a run keeps them (`recon_rail_lines`), against as many inflows the service recorded that day
 * with their ledger entries (received on the virtual account, attributed to a payout: four entries
 * each, as the machines write them); one line in a thousand has an amount that differs (a break
 * each). The processor: `plan.reconOutflows` outflows paid that day (100,000 in a full run) with
 * their entries (handed to the processor, paid to the beneficiary: four each; the conversion legs
 * of the hand-over are left out, the run reads none), against the processor's settlement report
 * of the day, which lists each of them paid. The report is held by a sandbox of the scenario's
 * own (bench/children/sandbox.ts) and kept as the `reconciliation` job keeps it ahead of the runs
 * (`recon_processor_lines`, pulled from the processor's listing of report changes by the
 * service's own `pullSettlementChanges`, before the rounds), so that each run compares stored
 * lines, as it does in production.
 *
 * Measured: `recon run --date <day> --rail BANK_TRANSFER` then `--rail PROCESSOR` end to end
 * through a service instance (`admin.recon.run`: what is new in the statement and the
 * processor's report asked of the sandbox, nothing on either, each rail's day compared with the
 * ledger's entries in one statement, the runs' counts and breaks stored), against plain SQL full
 * joins of the same rows by reference (the day's statement lines with the entries of the day's
 * inflows on their collection accounts; the day's kept report lines with the entries of the day's
 * outflows on `world:beneficiaries`) that return each difference and the sums: the baseline of
 * the target, round-robin (one round in a quick run, three in a full one). Target: ≤ 1.5 ×. The
 * joins of the lines with the inflow and outflow rows alone, the baseline before the ledger's
 * entries were compared, are measured alongside and reported.
 *
 * The pull of the day's report into storage, which the job does ahead of the runs, is measured as
 * a row of its own (not judged, not part of the target): the day's report changes read from a
 * fresh cursor, 1,000 a request, and kept, against reading the same day's settlement report
 * (`GET /processor/settlements`, 1,000 lines a request) without keeping it, which is what each
 * run used to do inside it.
 */

/** Both sides of the day, in the quick run too: the figure is one day of 100,000. */
const RECON_ROWS = 100_000;
const DIFFER_EVERY = 1_000;

async function seed(db: pg.Pool, tenantId: string, day: string): Promise<void> {
  // Spread over the day; `$n` is the parameter holding the day's start.
  const at = (n: number) => `$${n}::timestamptz + n * interval '1 second' * (86399.0 / ${RECON_ROWS})`;
  await db.query(`delete from recon_rail_lines where rail = 'BANK_TRANSFER'`);
  await db.query(`delete from recon_rail_totals where rail = 'BANK_TRANSFER'`);
  await db.query(`delete from rail_cursors where source = 'RECON_BANK'`);
  await db.query(`delete from inflows where external_ref like 'recon-bench-%'`);
  const inflowId = `md5('recon-bench-inflow-' || n)::uuid`;
  await db.query(
    `insert into inflows (id, tenant_id, rail, provider_name, amount, currency, external_ref, to_account, state,
        snapshot, is_matched, overpayment_amount, arrived_at, created_at, updated_at)
     select ${inflowId}, $1, 'BANK_TRANSFER', 'Sandbox Bank', 1000 + n % 500, 'NGN', 'recon-bench-' || n,
            '90' || lpad((n % 1000)::text, 8, '0'), 'MATCHED', '{"value":"MATCHED","status":"done"}'::jsonb, true, 0,
            ${at(2)}, ${at(2)}, ${at(2)}
       from generate_series(1, ${RECON_ROWS}) as n`,
    [tenantId, dayStart(day)],
  );
  // What the machines write for each: RECEIVED (collection → suspense), ATTRIBUTED (suspense → payout).
  const amount = `(1000 + n % 500)`;
  await db.query(
    `insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
        cause_object, cause_id, transition, created_at)
     select gen_random_uuid(), md5('recon-bench-tx-' || e.tx || '-' || n)::uuid, e.account, 'NGN', e.amount, $1::uuid, e.payout,
            e.movement, 'inflow', ${inflowId}, e.transition, ${at(2)}
       from generate_series(1, ${RECON_ROWS}) as n,
            lateral (values
              ('collection:bank:90' || lpad((n % 1000)::text, 8, '0'), -${amount}, null::uuid, null, 'RECEIVED (PENDING → CONFIRMED)', 1),
              ('tenants:' || $1::text || ':suspense', ${amount}, null::uuid, null, 'RECEIVED (PENDING → CONFIRMED)', 1),
              ('tenants:' || $1::text || ':suspense', -${amount}, null::uuid, null, 'ATTRIBUTED (CONFIRMED → MATCHED)', 2),
              ('tenants:' || $1::text || ':payouts:' || md5('recon-bench-payout-' || n)::uuid, ${amount},
               md5('recon-bench-payout-' || n)::uuid, 'money_received', 'ATTRIBUTED (CONFIRMED → MATCHED)', 2)
            ) as e(account, amount, payout, movement, transition, tx)`,
    [tenantId, dayStart(day)],
  );
  await db.query(
    `insert into recon_rail_lines (rail, kind, line_id, reference, account, ledger_account, amount, currency, occurred_at)
     select 'BANK_TRANSFER', 'CREDIT', 'recon-bench-' || n, 'recon-bench-' || n, 'collection:bank',
            'collection:bank:90' || lpad((n % 1000)::text, 8, '0'),
            1000 + n % 500 + case when n % ${DIFFER_EVERY} = 0 then 1 else 0 end, 'NGN', ${at(1)}
       from generate_series(1, ${RECON_ROWS}) as n`,
    [dayStart(day)],
  );
  await db.query(
    `insert into recon_rail_totals (account, currency, rail, amount)
     select account, currency, 'BANK_TRANSFER', sum(amount) from recon_rail_lines
      where rail = 'BANK_TRANSFER' group by account, currency`,
  );
}

/**
 * The day's outflows, each paid (SENT then PAID, as the outflow machine posts them), and their
 * payouts (SUCCESSFUL); the processor's report of them is the sandbox's (../lib/recon-outflows.ts).
 */
async function seedOutflows(db: pg.Pool, tenantId: string, day: string, rows: number): Promise<void> {
  const at = outflowAtSql(2, rows);
  const amount = OUTFLOW_AMOUNT_SQL;
  const outflowId = `md5('recon-bench-outflow-' || n)::uuid`;
  const payoutId = `md5('recon-bench-outpayout-' || n)::uuid`;
  await db.query(
    `delete from outflows where payout_id in (select id from payouts where merchant_reference like 'recon-bench-%')`,
  );
  await db.query(`delete from payouts where merchant_reference like 'recon-bench-%'`);
  await db.query(
    `insert into payouts (id, tenant_id, status, snapshot, merchant_reference, destination_type, destination_country,
        destination_currency, destination_amount, destination_account_unique, destination_provider_name,
        settlement_currency, settlement_amount, exchange_rate, mid_market_rate, platform_fee_amount,
        network_fee_amount, total_fee_amount, received_amount, is_refunded, created_at, updated_at)
     select ${payoutId}, $1, 'SUCCESSFUL', '{"value":"SUCCESSFUL","status":"done"}'::jsonb, 'recon-bench-' || n,
            'BANK_ACCOUNT', 'NG', 'NGN', ${amount}, '0123456789', 'Guaranty Trust Bank', 'NGN', ${amount}, 1, 1, 0, 0, 0,
            ${amount}, false, ${at}, ${at}
       from generate_series(1, ${rows}) as n`,
    [tenantId, dayStart(day)],
  );
  await db.query(
    `insert into outflows (id, tenant_id, payout_id, status, snapshot, processor, attempt_number, destination_amount,
        destination_currency, processor_reference, dispatched_at, settled_at, created_at, updated_at)
     select ${outflowId}, $1, ${payoutId}, 'SUCCESSFUL', '{"value":"SUCCESSFUL","status":"done"}'::jsonb, $3, 1,
            ${amount}, 'NGN', 'prc-recon-bench-' || n, ${at}, ${at}, ${at}, ${at}
       from generate_series(1, ${rows}) as n`,
    [tenantId, dayStart(day), DEFAULT_PROCESSOR_NAME],
  );
  await db.query(
    `insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
        cause_object, cause_id, transition, created_at)
     select gen_random_uuid(), md5('recon-bench-out-tx-' || e.tx || '-' || n)::uuid, e.account, 'NGN', e.amount, $1::uuid,
            ${payoutId}, e.movement, 'outflow', ${outflowId}, e.transition, ${at}
       from generate_series(1, ${rows}) as n,
            lateral (values
              ('tenants:' || $1::text || ':payouts:' || ${payoutId}, -${amount}, null, 'SENT (PENDING → PROCESSING)', 1),
              ('transit:processor:' || $3, ${amount}, null, 'SENT (PENDING → PROCESSING)', 1),
              ('transit:processor:' || $3, -${amount}, 'paid_out', 'PAID (PROCESSING → SUCCESSFUL)', 2),
              ('world:beneficiaries', ${amount}, null, 'PAID (PROCESSING → SUCCESSFUL)', 2)
            ) as e(account, amount, movement, transition, tx)`,
    [tenantId, dayStart(day), DEFAULT_PROCESSOR_NAME],
  );
}

/**
 * The same comparison in one plain statement: every line of the day joined by reference with the
 * ledger's entries of the day's inflows on their collection accounts (found by their cause, as
 * the run finds them), each difference and the sums returned.
 */
const PLAIN_JOIN = `
  with rail as (select reference, amount, currency, account from recon_rail_lines
                 where rail = 'BANK_TRANSFER' and kind = 'CREDIT' and occurred_at >= $1 and occurred_at < $2),
       books as (select i.external_ref as reference, -e.amount as amount, e.currency
                   from inflows i join ledger_entries e on e.cause_id = i.id and left(e.account, 11) = 'collection:'
                  where i.rail = 'BANK_TRANSFER' and i.arrived_at >= $1 and i.arrived_at < $2)
  select coalesce(r.reference, b.reference) as reference, r.amount as rail_amount, b.amount as ledger_amount,
         count(*) filter (where r.amount = b.amount and r.currency = b.currency) over () as matched,
         sum(r.amount) over () as rail_sum, sum(b.amount) over () as ledger_sum
    from rail r full join books b on b.reference = r.reference
   order by (r.amount = b.amount and r.currency = b.currency) nulls first
   limit 1000`;

/** The day's kept report lines ($3 the processor), as the run finds them. */
const REPORT_OF_DAY = `
  rail as (select reference, amount, currency from recon_processor_lines
            where processor = $3 and ((settled_at >= $1 and settled_at < $2) or (returned_at >= $1 and returned_at < $2)))`;

/**
 * The processor's side in one plain statement: the day's kept report lines joined by reference
 * with the ledger's entries of the day's paid outflows on `world:beneficiaries`.
 */
const PLAIN_PROCESSOR_JOIN = `
  with ${REPORT_OF_DAY},
       books as (select o.id::text as reference, e.amount, e.currency
                   from outflows o join ledger_entries e on e.cause_id = o.id and e.account = 'world:beneficiaries'
                  where o.status = 'SUCCESSFUL' and o.settled_at >= $1 and o.settled_at < $2)
  select coalesce(r.reference, b.reference) as reference, r.amount as rail_amount, b.amount as ledger_amount,
         count(*) filter (where r.amount = b.amount and r.currency = b.currency) over () as matched,
         sum(r.amount) over () as rail_sum, sum(b.amount) over () as ledger_sum
    from rail r full join books b on b.reference = r.reference
   order by (r.amount = b.amount and r.currency = b.currency) nulls first
   limit 1000`;

/** The processor's baseline before the ledger's entries were compared: the report with the outflow rows alone. */
const ROWS_PROCESSOR_JOIN = `
  with ${REPORT_OF_DAY},
       books as (select id::text as reference, destination_amount as amount, destination_currency as currency
                   from outflows where status = 'SUCCESSFUL' and settled_at >= $1 and settled_at < $2)
  select coalesce(r.reference, b.reference) as reference, r.amount as rail_amount, b.amount as ledger_amount,
         count(*) filter (where r.amount = b.amount and r.currency = b.currency) over () as matched,
         sum(r.amount) over () as rail_sum, sum(b.amount) over () as ledger_sum
    from rail r full join books b on b.reference = r.reference
   order by (r.amount = b.amount and r.currency = b.currency) nulls first
   limit 1000`;

/** The baseline before the ledger's entries were compared: the lines with the inflow rows alone. */
const ROWS_JOIN = `
  with rail as (select reference, amount, currency, account from recon_rail_lines
                 where rail = 'BANK_TRANSFER' and kind = 'CREDIT' and occurred_at >= $1 and occurred_at < $2),
       books as (select external_ref as reference, amount, currency from inflows
                  where rail = 'BANK_TRANSFER' and arrived_at >= $1 and arrived_at < $2)
  select coalesce(r.reference, b.reference) as reference, r.amount as rail_amount, b.amount as ledger_amount,
         count(*) filter (where r.amount = b.amount and r.currency = b.currency) over () as matched,
         sum(r.amount) over () as rail_sum, sum(b.amount) over () as ledger_sum
    from rail r full join books b on b.reference = r.reference
   order by (r.amount = b.amount and r.currency = b.currency) nulls first
   limit 1000`;

export async function reconciliationScenario(ctx: BenchContext): Promise<void> {
  const { pool, results } = ctx;
  const outflows = ctx.plan.reconOutflows;
  const day = dayBefore(dayOf(new Date()));
  ctx.log(
    `reconciliation: seeding ${RECON_ROWS} statement lines and ${RECON_ROWS} inflows, ` +
      `${outflows} outflows and the processor's report of them, of ${day}`,
  );
  await seed(pool, ctx.tenants[0]!.id, day);
  await seedOutflows(pool, ctx.tenants[0]!.id, day, outflows);
  // The processor of this scenario's own sandbox has paid the day's outflows.
  const sandboxOptions: SandboxChildOptions = {
    callbackSecret: ctx.secrets.callbackSecret,
    paidOutflows: { day, rows: outflows },
  };
  const sandbox = await startChild('sandbox', sandboxOptions, { readyTimeoutMs: 120_000 });
  // The service's own pull, in this process, as the job runs it: from a fresh cursor, every line kept.
  const deps = await benchDeps(ctx, sandbox.url);
  const freshPull = async () => {
    // Kept anew, as the job keeps a day the first time: no line of the day, none of an earlier pull left behind.
    await pool.query(`delete from rail_cursors where source = 'RECON_PROCESSOR'`);
    await pool.query('truncate recon_processor_lines');
    const started = performance.now();
    const read = await pullSettlementChanges(deps);
    const ms = performance.now() - started;
    // The new lines analysed and marked visible now, not by autovacuum during the next contestant.
    await pool.query('vacuum analyze recon_processor_lines');
    return { ms: round(ms, 1), kept: read.recorded };
  };
  await freshPull();
  await pool.query(
    'vacuum analyze inflows, outflows, payouts, ledger_entries, recon_rail_lines, recon_rail_totals, rail_cursors',
  );
  const service = await startService({ ...ctx, sandboxUrl: sandbox.url });
  try {
    const runRail = async (rail: 'BANK_TRANSFER' | 'PROCESSOR', account: (name: string) => boolean) => {
      const started = performance.now();
      const res = await fetch(`${service.url}/trpc/admin.recon.run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.secrets.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ date: day, rail }),
      });
      const body = (await res.json()) as any;
      const ms = performance.now() - started;
      if (res.status !== 200)
        throw new Error(`admin.recon.run ${rail}: ${res.status} ${JSON.stringify(body)}`);
      const found = body.result.data.runs[0].accounts.find((a: any) => account(a.account));
      return { ms, matched: found?.matched_count ?? 0, breaks: found?.breaks ?? 0 };
    };
    const serviceRun = async () => {
      const bank = await runRail('BANK_TRANSFER', (a) => a === 'collection:bank');
      const processor = await runRail('PROCESSOR', (a) => a.startsWith('transit:processor:'));
      return {
        ms: round(bank.ms + processor.ms, 1),
        bankMs: round(bank.ms, 1),
        processorMs: round(processor.ms, 1),
        matched: bank.matched,
        breaks: bank.breaks,
        processorMatched: processor.matched,
        processorBreaks: processor.breaks,
      };
    };
    const differences = (rows: any[]) =>
      rows.filter(
        (r) => r.rail_amount === null || r.ledger_amount === null || r.rail_amount !== r.ledger_amount,
      ).length;
    const plainRun = async (bankText: string, processorText: string) => {
      const window = [dayStart(day), dayEnd(day)];
      const started = performance.now();
      const bank = (await pool.query(bankText, window)).rows;
      const bankMs = performance.now() - started;
      const processor = (await pool.query(processorText, [...window, DEFAULT_PROCESSOR_NAME])).rows;
      const ms = performance.now() - started;
      return {
        ms: round(ms, 1),
        bankMs: round(bankMs, 1),
        processorMs: round(ms - bankMs, 1),
        matched: Number(bank[0]?.matched ?? 0),
        breaks: differences(bank),
        processorMatched: Number(processor[0]?.matched ?? 0),
        processorBreaks: differences(processor),
      };
    };
    // What each run read inside it before the report was kept: the day's report, page by page.
    const reportRead = async () => {
      const started = performance.now();
      let lines = 0;
      let cursor: string | null = null;
      do {
        const page = await deps.rails.processor.settlementReport(day, { cursor, limit: 1000 });
        lines += page.payouts.length;
        cursor = page.nextCursor;
      } while (cursor !== null);
      return { ms: round(performance.now() - started, 1), lines };
    };
    const runs = await roundRobin(ctx, 'reconciliation', roundsOf(ctx.plan), {
      'recon run (service)': serviceRun,
      'plain SQL full join, lines with ledger entries': () => plainRun(PLAIN_JOIN, PLAIN_PROCESSOR_JOIN),
      'plain SQL full join, lines with inflow and outflow rows': () =>
        plainRun(ROWS_JOIN, ROWS_PROCESSOR_JOIN),
      "pull of the day's report changes into storage": freshPull,
      "read of the day's settlement report, not kept": reportRead,
    });
    const service_ = runs['recon run (service)'];
    const plain = runs['plain SQL full join, lines with ledger entries'];
    const rowsJoin = runs['plain SQL full join, lines with inflow and outflow rows'];
    const all = [...service_, ...plain, ...rowsJoin];
    const expectedBreaks = RECON_ROWS / DIFFER_EVERY;
    const describe = (r: (typeof all)[number]) =>
      `bank ${r.matched} matched, ${r.breaks} breaks; processor ${r.processorMatched} matched, ${r.processorBreaks} breaks`;
    ctx.results.check(
      'reconciliation: every bank line matched or one break, on both sides alike',
      all.every((r) => r.matched === RECON_ROWS - expectedBreaks && r.breaks === expectedBreaks),
      [
        ...service_.map((r) => `service ${describe(r)}`),
        ...plain.map((r) => `plain ${describe(r)}`),
        ...rowsJoin.map((r) => `rows ${describe(r)}`),
      ].join('; '),
    );
    ctx.results.check(
      "reconciliation: the processor rail matched every line of the processor's report, no break",
      all.every((r) => r.processorMatched === outflows && r.processorBreaks === 0),
      all.map(describe).join('; '),
    );
    results.perRound(
      {
        scenario: 'reconciliation',
        metric:
          `one day of ${RECON_ROWS} statement lines + ${RECON_ROWS} inflows' ledger entries and ` +
          `${outflows} report lines + ${outflows} outflows' ledger entries (both rails), ms vs plain SQL full joins`,
        unit: 'ms',
        target: '≤ 1.5',
      },
      service_.map((r, i) => ({ value: r.ms, baseline: plain[i]!.ms })),
      { max: 1.5 },
    );
    results.perRound(
      {
        scenario: 'reconciliation',
        metric:
          'the same runs, ms vs plain SQL full joins of the lines with the inflow and outflow rows alone (shown, not judged)',
        unit: 'ms',
      },
      service_.map((r, i) => ({ value: r.ms, baseline: rowsJoin[i]!.ms })),
    );
    const pulls = runs["pull of the day's report changes into storage"];
    const reads = runs["read of the day's settlement report, not kept"];
    ctx.results.check(
      "reconciliation: the pull keeps every line of the processor's day, the report lists every one",
      pulls.every((p) => p.kept === outflows) && reads.every((r) => r.lines === outflows),
      `kept ${pulls.map((p) => p.kept).join(', ')}; listed ${reads.map((r) => r.lines).join(', ')}`,
    );
    results.perRound(
      {
        scenario: 'reconciliation',
        metric:
          `the pull of the day's ${outflows} report changes into storage (ahead of the runs, by the job), ` +
          "ms vs reading the day's settlement report without keeping it (shown, not judged)",
        unit: 'ms',
      },
      pulls.map((p, i) => ({ value: p.ms, baseline: reads[i]!.ms })),
    );
    results.details.reconciliation = {
      rows: RECON_ROWS,
      outflows,
      day,
      service: service_,
      plain,
      rowsJoin,
      pulls,
      reads,
    };
  } finally {
    await service.stop();
    await closeBenchDeps(deps);
    await sandbox.stop();
  }
}
