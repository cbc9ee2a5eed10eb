import type { EntityManager } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import {
  bankRefundBooks,
  bankRefundBooksOf,
  dayLines,
  inflowBooks,
  inflowBooksOf,
  processorBooks,
  processorBooksOf,
} from '#src/reconciliation/records.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { deps, dispatch, merchantWith, paidPayout, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { preparedPlans } from './prepared-plans.ts';

/**
 * A reconciliation run reads one day, never the whole history: the rail's kept lines of the day
 * and the books of the day (inflows by rail and arrival, outflows and bank refunds by when they
 * became final, and those the rail names by reference) come through indexes. Planned as prepared
 * statements are (generic and custom plans) over 5,000 copies of one real failed and refunded
 * payout, one an hour over seven months long past (a day is 24 of them), removed afterwards.
 */

const COPIES = 5_000;
const TABLES = ['recon_rail_lines', 'inflows', 'outflows', 'refunds'];

/** Copies of the row of `table` picked by `where`, each with the fields `overrides` sets (SQL, `n` the copy). */
function copies(table: string, where: string, overrides: string): string {
  return `insert into ${table}
    select (jsonb_populate_record(null::${table}, to_jsonb(t) || jsonb_build_object(${overrides}))).*
      from ${table} t, generate_series(1, ${COPIES}) n
     where ${where}`;
}

const id = (kind: string) => `md5('recon-plan-${kind}' || n)::uuid`;
const at = "timestamptz '2001-01-01T00:00:00Z' + n * interval '1 hour'";

/** The scans of the tables a run reads, in the plans of `text` with `args`, generic and custom. */
async function scans(tx: EntityManager, text: string, args: string): Promise<string[][]> {
  return (await preparedPlans(text, args, tx)).map((nodes) =>
    nodes
      .filter((n) => TABLES.includes(n['Relation Name'] ?? '') || n['Node Type'] === 'Bitmap Index Scan')
      .map((n) => `${n['Node Type']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`),
  );
}

describe('reconciliation’s reads, planned over a long history', function () {
  this.timeout(180_000);

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
        await tx.execute(copies('payouts', payout, `'id', ${id('p')}`));
        await tx.execute(
          copies(
            'inflows',
            ofPayout,
            `'id', ${id('i')}, 'payout_id', ${id('p')}, 'external_ref', 'plan-' || n, 'arrived_at', ${at}`,
          ),
        );
        await tx.execute(
          copies(
            'outflows',
            ofPayout,
            `'id', ${id('o')}, 'payout_id', ${id('p')}, 'status', case when n % 10 = 0 then 'FAILED' else 'SUCCESSFUL' end, 'settled_at', ${at}, 'updated_at', ${at}`,
          ),
        );
        await tx.execute(
          copies(
            'refunds',
            ofPayout,
            `'id', ${id('r')}, 'payout_id', ${id('p')}, 'status', 'SUCCESSFUL', 'settled_at', ${at}`,
          ),
        );
        await tx.execute(`insert into recon_rail_lines (rail, kind, line_id, reference, account, ledger_account,
              amount, currency, occurred_at)
            select 'BANK_TRANSFER', 'CREDIT', 'plan-' || n, 'plan-' || n, 'collection:bank', null, 100, 'NGN', ${at}
              from generate_series(1, ${COPIES}) n`);
        for (const table of [...TABLES, 'payouts']) await tx.execute(`analyze ${table}`);
        await plan(tx);
        throw rolledBack;
      })
      .catch((err: unknown) => {
        if (err !== rolledBack) throw err;
      });
  }

  it("reads one day's rail lines and books through indexes, and the rail's references by key", async () => {
    const day = "('2001-03-05T00:00:00Z', '2001-03-06T00:00:00Z'";
    const refs = "'{plan-1,plan-2}'";
    const uuids = "'{00000000-0000-0000-0000-000000000001}'";
    const cases: [string, string, string][] = [
      [
        'rail lines of the day',
        dayLines.text,
        "('BANK_TRANSFER', '2001-03-05T00:00:00Z', '2001-03-06T00:00:00Z')",
      ],
      ['inflows of the day', inflowBooks.text, `${day}, ${refs}, 'BANK_TRANSFER')`],
      ['inflows by reference', inflowBooksOf.text, `${day}, ${refs}, 'BANK_TRANSFER')`],
      ['outflows of the day', processorBooks.text, `${day}, ${uuids})`],
      ['outflows by id', processorBooksOf.text, `${day}, ${uuids})`],
      ['bank refunds of the day', bankRefundBooks.text, `${day}, ${uuids})`],
      ['bank refunds by id', bankRefundBooksOf.text, `${day}, ${uuids})`],
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
