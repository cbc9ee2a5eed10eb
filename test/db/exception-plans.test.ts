import { expect } from 'chai';
import { countsStatementText } from '#src/compliance/counts.ts';
import { exceptionCounts, heldUnderpaidPage } from '#src/compliance/exceptions.ts';
import { type PlanNode, planNodes } from '#src/db/plan.ts';
import { committedModel } from '#src/docs/generate.ts';
import { createMerchant } from '../client.ts';
import { removeQueues, seedQueues } from '../compliance/fixtures.ts';
import { harness } from '../harness.ts';

/**
 * The operators' console reads its counts from indexes, never by reading a hot table whole: each
 * exception queue from the partial index that holds exactly its rows (its cost is the queue's
 * size, not the table's), and the live counts per state from an index that starts with the state
 * column. Planned, as prepared statements are, over a history where most rows are done and a few
 * wait for a person. The benchmark (bench/scenarios/console-counts.ts) times the same on 100,000 payouts.
 */

const HOT = ['payouts', 'inflows', 'refunds', 'webhook_deliveries'];

/** Every read of a hot table in the plan of `text`, generic (as a prepared statement settles on) and custom. */
async function scansOf(text: string, args = ''): Promise<string[][]> {
  const em = harness().service.deps.orm.em.fork();
  const plans: string[][] = [];
  for (const mode of ['force_generic_plan', 'force_custom_plan']) {
    const rolledBack = new Error('rolled back');
    await em
      .transactional(async (tx) => {
        await tx.execute(`set local plan_cache_mode = ${mode}`);
        await tx.execute(`prepare console_plan as ${text}`);
        const rows = (await tx.execute(`explain (format json) execute console_plan${args}`)) as {
          'QUERY PLAN': { Plan: PlanNode }[];
        }[];
        await tx.execute('deallocate console_plan');
        plans.push(
          planNodes(rows[0]!['QUERY PLAN'][0]!.Plan)
            .filter(
              (n) =>
                (n['Relation Name'] && HOT.includes(n['Relation Name'])) ||
                // The index of a bitmap read names its table only by its own name.
                (n['Node Type'] === 'Bitmap Index Scan' &&
                  HOT.some((table) => n['Index Name']?.startsWith(`${table}_`))),
            )
            .map(
              (n) =>
                `${n['Relation Name'] ? `${n['Relation Name']}: ` : ''}${n['Node Type']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`,
            ),
        );
        throw rolledBack;
      })
      .catch((err: unknown) => {
        if (err !== rolledBack) throw err;
      });
  }
  return plans;
}

describe('console count plans', () => {
  let tenantId: string;
  before(async () => {
    tenantId = (await createMerchant()).tenantId;
    // 3,000 of each over a year, one in 40 waiting for a person.
    await seedQueues(tenantId, { rows: 3000, at: new Date('2026-01-01T00:00:00Z'), every: 40 });
    // As autovacuum leaves a table of settled history: its pages all visible, its statistics fresh.
    await harness()
      .service.deps.orm.em.fork()
      .execute('vacuum analyze payouts, inflows, refunds, webhook_deliveries');
  });
  after(async () => {
    await removeQueues(tenantId);
  });

  it('admin.exceptions reads every queue from its own partial index, never the table', async () => {
    // In any order: the planner may take either side of the DEAD queue's join first.
    for (const scans of await scansOf(exceptionCounts.text)) {
      expect(scans).to.have.members([
        'payouts: Index Only Scan using payouts_held_underpaid_index',
        'inflows: Index Only Scan using inflows_unmatched_index',
        'refunds: Index Only Scan using refunds_failed_index',
        'payouts: Index Only Scan using payouts_money_held_index',
        'webhook_deliveries: Index Only Scan using webhook_deliveries_dead_since_index',
        // Whether a DEAD delivery's event was sent again: only redeliveries are looked at.
        'webhook_deliveries: Index Scan using webhook_deliveries_redeliveries_index',
      ]);
    }
  });

  it('admin.payouts.heldUnderpaid reads its page from the partial index of the queue, never the table', async () => {
    const pages = [
      ...(await scansOf(heldUnderpaidPage.text, '(null, null, 21)')),
      ...(await scansOf(heldUnderpaidPage.text, `('2026-03-01T00:00:00Z', '${tenantId}', 21)`)),
    ];
    for (const scans of pages) {
      const payouts = scans.filter((s) => !s.startsWith('payouts: Bitmap Heap Scan'));
      expect(payouts).to.have.length(1);
      expect(payouts[0]).to.match(
        /^(payouts: Index (Only )?Scan|Bitmap Index Scan) using payouts_held_underpaid_index$/,
      );
    }
  });

  // Payouts are the exception: their counts read the table (see the exception_queues migration for
  // why the status has no index of its own there); the exception queues never do.
  it('admin.machines counts the states of every other hot table from an index, without a sequential scan', async () => {
    for (const scans of await scansOf(countsStatementText(committedModel()))) {
      for (const table of HOT.filter((t) => t !== 'payouts')) {
        const reads = scans.filter((s) => s.startsWith(`${table}:`));
        expect(reads, table).to.not.be.empty;
        for (const read of reads) expect(read, table).to.not.match(/Seq Scan/);
      }
    }
  });
});
