import type pg from 'pg';
import { dayBefore, dayEnd, dayOf, dayStart } from '#src/lib/days.ts';
import { type BenchContext, startService } from '../lib/context.ts';
import { round } from '../lib/report.ts';
import { roundRobin, roundsOf } from '../lib/rounds.ts';

/**
 * Reconciliation of one day of the bank rail: `RECON_ROWS` lines of the bank's statement, as a
 * run keeps them (`recon_rail_lines`), against as many inflows the service recorded that day with
 * their ledger entries (received on the virtual account, attributed to a payout: four entries
 * each, as the machines write them); one line in a thousand has an amount that differs (a break
 * each). Measured: `recon run --date <day> --rail BANK_TRANSFER` end to end through a service
 * instance (`admin.recon.run`: the statement's new lines asked of the sandbox, the day's lines
 * compared with the ledger's entries in one statement, the run's counts and breaks stored),
 * against a plain SQL full join of the same rows by reference (the day's lines with the entries
 * of the day's inflows on their collection accounts) that returns each difference and the sums:
 * the baseline of the target, round-robin (two rounds in a quick run, three in a full one).
 * Target: ≤ 1.5 ×. The join of the lines with the inflow rows alone, the baseline before the
 * ledger's entries were compared, is measured alongside and reported.
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
  await db.query('vacuum analyze inflows, ledger_entries, recon_rail_lines, recon_rail_totals');
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
  const day = dayBefore(dayOf(new Date()));
  ctx.log(`reconciliation: seeding ${RECON_ROWS} statement lines and ${RECON_ROWS} inflows of ${day}`);
  await seed(pool, ctx.tenants[0]!.id, day);
  const service = await startService(ctx);
  try {
    const serviceRun = async () => {
      const started = performance.now();
      const res = await fetch(`${service.url}/trpc/admin.recon.run`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ctx.secrets.adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ date: day, rail: 'BANK_TRANSFER' }),
      });
      const body = (await res.json()) as any;
      const ms = performance.now() - started;
      if (res.status !== 200) throw new Error(`admin.recon.run: ${res.status} ${JSON.stringify(body)}`);
      const account = body.result.data.runs[0].accounts.find((a: any) => a.account === 'collection:bank');
      return { ms: round(ms, 1), matched: account.matched_count, breaks: account.breaks };
    };
    const plainRun = async (text: string) => {
      const started = performance.now();
      const { rows } = await pool.query(text, [dayStart(day), dayEnd(day)]);
      const ms = performance.now() - started;
      const differ = rows.filter(
        (r) => r.rail_amount === null || r.ledger_amount === null || r.rail_amount !== r.ledger_amount,
      );
      return { ms: round(ms, 1), matched: Number(rows[0]?.matched ?? 0), breaks: differ.length };
    };
    const runs = await roundRobin(ctx, 'reconciliation', roundsOf(ctx.plan), {
      'recon run (service)': serviceRun,
      'plain SQL full join, lines with ledger entries': () => plainRun(PLAIN_JOIN),
      'plain SQL full join, lines with inflow rows': () => plainRun(ROWS_JOIN),
    });
    const service_ = runs['recon run (service)'];
    const plain = runs['plain SQL full join, lines with ledger entries'];
    const rowsJoin = runs['plain SQL full join, lines with inflow rows'];
    const expectedBreaks = RECON_ROWS / DIFFER_EVERY;
    ctx.results.check(
      'reconciliation: every row matched or one break, on both sides alike',
      [...service_, ...plain, ...rowsJoin].every(
        (r) => r.matched === RECON_ROWS - expectedBreaks && r.breaks === expectedBreaks,
      ),
      [
        ...service_.map((r) => `service ${r.matched} matched, ${r.breaks} breaks`),
        ...plain.map((r) => `plain ${r.matched} matched, ${r.breaks} differences`),
        ...rowsJoin.map((r) => `rows ${r.matched} matched, ${r.breaks} differences`),
      ].join('; '),
    );
    results.perRound(
      {
        scenario: 'reconciliation',
        metric: `one day of ${RECON_ROWS} statement lines + ${RECON_ROWS} inflows' ledger entries, ms vs plain SQL full join`,
        unit: 'ms',
        target: '≤ 1.5',
      },
      service_.map((r, i) => ({ value: r.ms, baseline: plain[i]!.ms })),
      { max: 1.5 },
    );
    results.perRound(
      {
        scenario: 'reconciliation',
        metric: `the same run, ms vs plain SQL full join of the lines with the inflow rows alone (shown, not judged)`,
        unit: 'ms',
      },
      service_.map((r, i) => ({ value: r.ms, baseline: rowsJoin[i]!.ms })),
    );
    results.details.reconciliation = { rows: RECON_ROWS, day, service: service_, plain, rowsJoin };
  } finally {
    await service.stop();
  }
}
