import type { EntityManager } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import { type PlanNode, planNodes } from '#src/db/plan.ts';
import { dayEnd, dayStart } from '#src/lib/days.ts';
import {
  bankDay,
  bankPairs,
  chainDay,
  chainPairs,
  processorDay,
  processorPairs,
} from '#src/reconciliation/match.ts';
import { processorLinesOfDay, railLinesOfDay } from '#src/reconciliation/records.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { deps, dispatch, merchantWith, paidPayout, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { entryPartitions, isEntries } from './ledger-history.ts';
import { preparedPlans } from './prepared-plans.ts';

/**
 * A reconciliation run reads one day, never the whole history: the rail's kept lines of the day
 * and the ledger's side of the day (inflows by rail and arrival, outflows and bank refunds by when
 * they became final, those the rail names by reference, and their ledger entries by cause) come
 * through indexes. Planned as prepared statements are (generic and custom plans) over 5,000
 * copies of one real failed and refunded payout with its ledger entries, one an hour over seven
 * months long past (a day is 24 of them), removed afterwards.
 */

const COPIES = 5_000;
/** Outflows paid on the busy day of the processor's plan test. */
const DAY_OUTFLOWS = 2_000;
const TABLES = [
  'recon_rail_lines',
  'recon_processor_lines',
  'inflows',
  'outflows',
  'refunds',
  'ledger_entries',
];

/** Copies of the row of `table` picked by `where`, each with the fields `overrides` sets (SQL, `n` the copy). */
function copies(table: string, where: string, overrides: string, count = COPIES): string {
  return `insert into ${table}
    select (jsonb_populate_record(null::${table}, to_jsonb(t) || jsonb_build_object(${overrides}))).*
      from ${table} t, generate_series(1, ${count}) n
     where ${where}`;
}

/** The copy `n` of an id: the same for an object and for the entries it caused. */
const copyOf = (column: string) => `md5(t.${column}::text || n)::uuid`;
const at = "timestamptz '2001-01-01T00:00:00Z' + n * interval '1 hour'";

/** The scans of the tables a run reads, in the plans of `text` with `args`, generic and custom. */
async function scans(tx: EntityManager, text: string, args: string): Promise<string[][]> {
  // A partition of the entries (src/db/partitions.ts) counts as the entries, unless it is of one
  // page at most: read whole or through an index, it costs the same.
  const { small } = await entryPartitions(tx);
  return (await preparedPlans(text, args, tx)).map((nodes) =>
    nodes
      .filter(
        (n) =>
          TABLES.includes(n['Relation Name'] ?? '') ||
          (isEntries(n['Relation Name']) && !small.has(n['Relation Name']!)) ||
          (n['Node Type'] === 'Bitmap Index Scan' && !small.has(n['Index Name'] ?? '')),
      )
      .map(
        (n) =>
          `${n['Node Type']}${n['Index Name'] ? ` using ${n['Index Name']}` : n['Relation Name'] ? ` on ${n['Relation Name']}` : ''}`,
      ),
  );
}

describe('reconciliation’s reads, planned over a long history', function () {
  // Copying the history is slow on the embedded database of a loaded machine.
  this.timeout(420_000);

  let payoutId: string;
  before(async () => {
    const merchant = await merchantWith();
    payoutId = await paidPayout(merchant, payoutTo('1001', 'NGN'));
    await dispatch(merchant, payoutId);
    await runRefundsOnce(deps());
  });

  /** Runs `plan` in a transaction holding the copies, rolled back after: nothing to clean up. */
  async function overHistory(plan: (tx: EntityManager) => Promise<void>): Promise<void> {
    const rolledBack = new Error('rolled back');
    await harness()
      .service.deps.orm.em.fork()
      .transactional(async (tx) => {
        const payout = `t.id = '${payoutId}'`;
        const ofPayout = `t.payout_id = '${payoutId}'`;
        await tx.execute(copies('payouts', payout, `'id', ${copyOf('id')}`));
        await tx.execute(
          copies(
            'inflows',
            ofPayout,
            `'id', ${copyOf('id')}, 'payout_id', ${copyOf('payout_id')}, 'external_ref', 'plan-' || n, 'arrived_at', ${at}`,
          ),
        );
        await tx.execute(
          copies(
            'outflows',
            ofPayout,
            `'id', ${copyOf('id')}, 'payout_id', ${copyOf('payout_id')}, 'status', case when n % 10 = 0 then 'FAILED' else 'SUCCESSFUL' end, 'settled_at', ${at}, 'updated_at', ${at}`,
          ),
        );
        await tx.execute(
          copies(
            'refunds',
            ofPayout,
            `'id', ${copyOf('id')}, 'payout_id', ${copyOf('payout_id')}, 'status', 'SUCCESSFUL', 'settled_at', ${at}`,
          ),
        );
        // The entries the statements read (money in, on its way and gone, by inflow, outflow or
        // refund): enough of the ledger to make reading all of it the worse plan.
        await tx.execute(
          copies(
            'ledger_entries',
            `${ofPayout} and t.cause_object in ('inflow', 'outflow', 'refund') and (left(t.account, 11) = 'collection:' or left(t.account, 8) = 'transit:' or left(t.account, 6) = 'world:')`,
            `'id', gen_random_uuid(), 'transaction_id', ${copyOf('transaction_id')}, 'payout_id', ${copyOf('payout_id')}, 'cause_id', ${copyOf('cause_id')}, 'created_at', ${at}`,
          ),
        );
        await tx.execute(`insert into recon_rail_lines (rail, kind, line_id, reference, account, ledger_account,
              amount, currency, occurred_at)
            select 'BANK_TRANSFER', 'CREDIT', 'plan-' || n, 'plan-' || n, 'collection:bank', null, 100, 'NGN', ${at}
              from generate_series(1, ${COPIES}) n`);
        // The processor's kept report over the same months, one payout in ten returned a day later.
        await tx.execute(`insert into recon_processor_lines (processor, reference, amount, currency, status,
              settled_at, returned_at, changed_at)
            select 'p', 'plan-' || n, 100, 'NGN', case when n % 10 = 0 then 'RETURNED' else 'SUCCESSFUL' end,
                   ${at}, case when n % 10 = 0 then ${at} + interval '1 day' end, ${at}
              from generate_series(1, ${COPIES}) n`);
        for (const table of [...TABLES, 'payouts']) await tx.execute(`analyze ${table}`);
        await plan(tx);
        throw rolledBack;
      })
      .catch((err: unknown) => {
        if (err !== rolledBack) throw err;
      });
  }

  it("reads the entries of the processor's day once, not once per outflow", async () => {
    const day = '2001-09-10';
    const at = `timestamptz '${day}T00:00:00Z' + n * interval '40 seconds'`;
    await overHistory(async (tx) => {
      // A busy day after the history: DAY_OUTFLOWS attempts paid, each with its entries of SENT
      // (payout → processor) and PAID (processor → beneficiaries), written when it was paid.
      await tx.execute(
        copies(
          'outflows',
          `t.payout_id = '${payoutId}'`,
          `'id', md5('day' || t.id::text || n)::uuid, 'payout_id', ${copyOf('payout_id')}, 'attempt_number', t.attempt_number + 100, 'status', 'SUCCESSFUL', 'created_at', ${at}, 'settled_at', ${at}, 'updated_at', ${at}`,
          DAY_OUTFLOWS,
        ),
      );
      await tx.execute(`insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id,
            payout_id, movement, cause_object, cause_id, transition, created_at)
          select gen_random_uuid(), md5(o.id::text || e.tx)::uuid, e.account, o.destination_currency,
                 e.sign * o.destination_amount, o.tenant_id, o.payout_id, null, 'outflow', o.id, e.tx, o.settled_at
            from outflows o
           cross join lateral (values
             ('tenants:' || o.tenant_id || ':payouts:' || o.payout_id, -1, 'SENT (PENDING → PROCESSING)'),
             ('transit:processor:' || o.processor, 1, 'SENT (PENDING → PROCESSING)'),
             ('transit:processor:' || o.processor, -1, 'PAID (PROCESSING → SUCCESSFUL)'),
             ('world:beneficiaries', 1, 'PAID (PROCESSING → SUCCESSFUL)')) as e(account, sign, tx)
           where o.attempt_number > 100`);
      // The processor's report of the day, kept as its pull keeps it: each of them paid.
      await tx.execute(`insert into recon_processor_lines (processor, reference, amount, currency, status,
            settled_at, returned_at, changed_at)
          select processor, id::text, destination_amount, destination_currency, 'SUCCESSFUL', settled_at, null,
                 settled_at
            from outflows where attempt_number > 100`);
      for (const table of ['outflows', 'ledger_entries', 'recon_processor_lines'])
        await tx.execute(`analyze ${table}`);
      const [report] = await tx.execute<{ processor: string; n: number }[]>(
        `select min(processor) as processor, count(*)::int as n from outflows where attempt_number > 100`,
      );
      expect(report!.n).to.be.at.least(DAY_OUTFLOWS);
      const args = `('${dayStart(day).toISOString()}', '${dayEnd(day).toISOString()}', '${report!.processor}')`;
      const { rootIndex } = await entryPartitions(tx);
      for (const mode of ['force_generic_plan', 'force_custom_plan']) {
        await tx.execute(`set local plan_cache_mode = ${mode}`);
        await tx.execute(`prepare planned as ${processorDay.text}`);
        const [found] = await tx.execute<{ matched_count: number; breaks: number }[]>(
          `execute planned${args}`,
        );
        expect(found, mode).to.include({ matched_count: report!.n, breaks: 0 });
        const [explained] = await tx.execute<{ 'QUERY PLAN': { Plan: PlanNode }[] }[]>(
          `explain (analyze, format json) execute planned${args}`,
        );
        await tx.execute('deallocate planned');
        const nodes = planNodes(explained!['QUERY PLAN'][0]!.Plan);
        const entries = nodes.filter(
          (n) =>
            isEntries(n['Relation Name']) ||
            (rootIndex.get(n['Index Name'] ?? '') ?? '').startsWith('ledger_entries'),
        );
        const shown = JSON.stringify(
          entries.map((n) => [n['Node Type'], n['Relation Name'] ?? n['Index Name'], n['Actual Loops']]),
        );
        expect(entries, `${mode}: ${shown}`).to.not.be.empty;
        // Each scan of the entries ran once at most: none is repeated for each outflow of the day.
        for (const n of entries) expect(n['Actual Loops'], `${mode}: ${shown}`).to.be.at.most(1);
      }
    });
  });

  it("compares one day's rail lines with the ledger through indexes, and the rail's references by key", async () => {
    const day = "('2001-03-05T00:00:00Z', '2001-03-06T00:00:00Z'";
    const refs = "'{plan-1,plan-2}'::text[]";
    const uuids = "'{00000000-0000-0000-0000-000000000001,00000000-0000-0000-0000-000000000002:1}'::text[]";
    const cases: [string, string, string][] = [
      [
        'rail lines of the day',
        railLinesOfDay.text,
        "('BANK_TRANSFER', '2001-03-05T00:00:00Z', '2001-03-06T00:00:00Z')",
      ],
      [
        'processor lines of the day',
        processorLinesOfDay.text,
        "('p', '2001-03-05T00:00:00Z', '2001-03-06T00:00:00Z')",
      ],
      ['the bank day', bankDay.text, `${day}, 'BANK_TRANSFER')`],
      ['the bank day, by reference', bankPairs.text, `${day}, ${refs}, 'BANK_TRANSFER')`],
      ['the bank day, refunds by reference', bankPairs.text, `${day}, ${uuids}, 'BANK_TRANSFER')`],
      ['the chain day', chainDay.text, `${day}, 'CRYPTO')`],
      ['the chain day, by reference', chainPairs.text, `${day}, ${refs}, 'CRYPTO')`],
      ['the processor day', processorDay.text, `${day}, 'p')`],
      ['the processor day, by reference', processorPairs.text, `${day}, ${uuids}, 'p')`],
      ['the processor day, lines by reference', processorPairs.text, `${day}, ${refs}, 'p')`],
    ];
    await overHistory(async (tx) => {
      for (const [what, text, args] of cases) {
        for (const plan of await scans(tx, text, args)) {
          expect(plan, `${what}: ${JSON.stringify(plan)}`).to.not.be.empty;
          for (const node of plan) expect(node, `${what}: ${JSON.stringify(plan)}`).to.not.match(/^Seq Scan/);
        }
      }
    });
  });
});
