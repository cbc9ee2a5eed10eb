import { expect } from 'chai';
import sinon from 'sinon';
import { countsStatementText } from '#src/compliance/counts.ts';
import {
  EXCEPTION_QUEUES,
  exceptionCounts,
  heldUnderpaidPage,
  overpaymentsToReturnPage,
} from '#src/compliance/exceptions.ts';
import { type PlanNode, planNodes } from '#src/db/plan.ts';
import { committedModel } from '#src/docs/generate.ts';
import { heldPayeePage } from '#src/payees/held.ts';
import { inflowsNeedingAttention } from '#src/settlement/operator.ts';
import { claimHeldOfFailedPayouts } from '#src/settlement/payout-failure.ts';
import { createMerchant } from '../client.ts';
import { removeQueues, seedQueues } from '../compliance/fixtures.ts';
import { harness } from '../harness.ts';
import { partitionsAsParents, preparedPlans } from './prepared-plans.ts';

/**
 * The operators' console reads its counts from indexes, never by reading a hot table whole: each
 * exception queue from the partial index that holds exactly its rows (its cost is the queue's
 * size, not the table's), and the live counts per state from an index that starts with the state
 * column; its lists of a queue read a page from an index in page order, never sorting the queue.
 * Planned, as prepared statements are, over a history where most rows are done and a few wait for
 * a person. The benchmark (bench/scenarios/console-counts.ts, console-lists.ts) checks the same on
 * 100,000 payouts.
 */

const HOT = ['payouts', 'inflows', 'refunds', 'webhook_deliveries'];

/** Every read of a hot table in the plan of `text`, generic (as a prepared statement settles on) and custom. */
/**
 * `scans` with each bitmap read of a table (its Bitmap Heap Scan, then the Bitmap Index Scan of its
 * index) named as the index scan it is equivalent to here: which of the two the planner takes
 * depends on the rows it expects, and both read the queue's rows through its partial index.
 */
function bitmapsAsIndexScans(scans: string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < scans.length; i++) {
    const heap = /^(\w+): Bitmap Heap Scan$/.exec(scans[i]!);
    const index = heap && /^Bitmap Index Scan using (\w+)$/.exec(scans[i + 1] ?? '');
    if (heap && index) {
      out.push(`${heap[1]}: Index Scan using ${index[1]}`);
      i++;
    } else out.push(scans[i]!);
  }
  return out;
}

async function scansOf(text: string, args = ''): Promise<string[][]> {
  // A partitioned table (webhook_deliveries) is read partition by partition: each read is named
  // by the parent's table and index, once, and reads of small partitions are left out.
  const { parentOf, small } = await partitionsAsParents();
  return (await preparedPlans(text, args)).map((nodes) => [
    ...new Set(
      nodes
        .filter((n) => !(n['Relation Name'] && small.has(n['Relation Name'])))
        .map((n) => ({
          ...n,
          'Relation Name': n['Relation Name'] && parentOf(n['Relation Name']),
          'Index Name': n['Index Name'] && parentOf(n['Index Name']),
        }))
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
    ),
  ]);
}

type InflowsFilter = Parameters<typeof inflowsNeedingAttention>[1];

/**
 * How the statement the ORM sends for a page of `admin.settlement.inflows` reads inflows, and
 * whether anything sorts; with the cursor the first page gave when `later`.
 */
async function inflowsPagePlan(
  filter: InflowsFilter,
  later: boolean,
): Promise<{ scans: string[]; sorted: boolean }> {
  const deps = harness().service.deps;
  const page = (cursor?: string) =>
    inflowsNeedingAttention(deps.orm.em.fork(), filter, {
      limit: 20,
      cursor,
      cursorKey: deps.secrets.cursorKey,
    });
  const cursor = later ? (await page()).meta.next_cursor : undefined;
  expect(cursor, 'a second page').to.not.equal(null);
  const spy = sinon.spy(deps.orm.em.getConnection(), 'execute');
  let sent: { query: string; params: unknown[] } | undefined;
  try {
    await page(cursor ?? undefined);
    const found = spy.getCalls().find((c) => /from "inflows"/.test(String(c.args[0])));
    if (!found) throw new Error('no query on inflows');
    sent = { query: String(found.args[0]), params: (found.args[1] ?? []) as unknown[] };
  } finally {
    spy.restore();
  }
  const rows = (await deps.orm.em.fork().execute(`explain (format json) ${sent.query}`, sent.params)) as {
    'QUERY PLAN': { Plan: PlanNode }[];
  }[];
  const plan = rows[0]!['QUERY PLAN'][0]!.Plan;
  const outer = planNodes(plan, { subplans: false });
  return {
    scans: outer
      .filter((n) => n['Relation Name'] === 'inflows' || n['Index Name']?.startsWith('inflows_'))
      .map((n) => `${n['Node Type']}${n['Index Name'] ? ` using ${n['Index Name']}` : ''}`),
    sorted: outer.some((n) => /Sort/.test(n['Node Type'])),
  };
}

describe('console count plans', () => {
  let tenantId: string;
  before(async () => {
    tenantId = (await createMerchant()).tenantId;
    // 3,000 of each over a year, one in 20 waiting for a person: even the shortest list (the HELD
    // money of the 50 payouts held) runs past its second page of 20, so that a next page is
    // planned as one from the middle of a queue, not as its last few rows.
    await seedQueues(tenantId, { rows: 3000, at: new Date('2026-01-01T00:00:00Z'), every: 20 });
    // One successful payout in 20 was overpaid, and half of those had their excess returned
    // (a refund of the payout): PAYOUTS_OVERPAYMENT_TO_RETURN holds the others, a page and more.
    const x = harness().service.deps.orm.em.fork();
    await x.execute(
      `update payouts set received_amount = settlement_amount + 100
        where tenant_id = ? and status = 'SUCCESSFUL' and (extract(epoch from created_at)::bigint / 10800) % 20 = 1`,
      [tenantId],
    );
    // The seeded history has a refund for every successful payout: half of the overpaid lose theirs.
    await x.execute(
      `delete from refunds r using payouts p
        where r.payout_id = p.id and p.tenant_id = ? and p.status = 'SUCCESSFUL'
          and p.received_amount > p.settlement_amount
          and (extract(epoch from p.created_at)::bigint / 10800) % 40 = 1`,
      [tenantId],
    );
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
    const cutoffs = EXCEPTION_QUEUES.map(() => `'2026-03-01T00:00:00Z'`).join(', ');
    for (const scans of await scansOf(exceptionCounts.text, `(${cutoffs})`)) {
      expect(bitmapsAsIndexScans(scans)).to.have.members([
        'payouts: Index Only Scan using payouts_held_underpaid_index',
        'payouts: Index Only Scan using payouts_held_payee_index',
        'inflows: Index Only Scan using inflows_unmatched_index',
        'refunds: Index Only Scan using refunds_failed_index',
        // Its rows' ids are read too (whether a RAISE_REFUND task is still open): from the queue's own
        // rows, found through its partial index.
        'payouts: Index Scan using payouts_money_held_index',
        'webhook_deliveries: Index Only Scan using webhook_deliveries_dead_since_index',
        // Whether a DEAD delivery's event was sent again: only redeliveries are looked at.
        'webhook_deliveries: Index Scan using webhook_deliveries_redeliveries_index',
        // The overpaid successful payouts, each probed for a refund by the refunds' unique key.
        'payouts: Index Only Scan using payouts_overpayment_index',
        'refunds: Index Only Scan using refunds_payout_id_tenant_id_unique',
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

  it('admin.refunds.overpayments reads its page from the partial index of the queue, never the table', async () => {
    const pages = [
      ...(await scansOf(overpaymentsToReturnPage.text, '(null, null, 21)')),
      ...(await scansOf(overpaymentsToReturnPage.text, `('2026-03-01T00:00:00Z', '${tenantId}', 21)`)),
    ];
    for (const scans of pages) {
      const payouts = scans.filter(
        (s) => s.includes('payouts') && !s.startsWith('payouts: Bitmap Heap Scan'),
      );
      expect(payouts).to.have.length(1);
      expect(payouts[0]).to.match(
        /^(payouts: Index (Only )?Scan|Bitmap Index Scan) using payouts_overpayment_index$/,
      );
      expect(scans.filter((s) => s.startsWith('refunds:'))).to.deep.equal([
        'refunds: Index Only Scan using refunds_payout_id_tenant_id_unique',
      ]);
    }
  });

  it('admin.payees.held reads its page from the partial index of the queue, never the table', async () => {
    const pages = [
      ...(await scansOf(heldPayeePage.text, '(null, null, 21)')),
      ...(await scansOf(heldPayeePage.text, `('2026-03-01T00:00:00Z', '${tenantId}', 21)`)),
    ];
    for (const scans of pages) {
      const payouts = scans.filter(
        (s) => s.includes('payouts') && !s.startsWith('payouts: Bitmap Heap Scan'),
      );
      expect(payouts).to.have.length(1);
      expect(payouts[0]).to.match(
        /^(payouts: Index (Only )?Scan|Bitmap Index Scan) using payouts_held_payee_index$/,
      );
    }
  });

  // The operators' list of money waiting for a decision, every variant, first page and the next:
  // read in page order from the index of the HELD and UNMATCHED inflows (all tenants, or one) and
  // stopped at the page, with no look at payouts (a failed payout's money is FOR_REFUND, not in
  // the index); never a sort of the queue.
  const states: (InflowsFilter['state'] | undefined)[] = [undefined, 'HELD', 'UNMATCHED'];
  for (const state of states) {
    for (const byTenant of [false, true]) {
      for (const later of [false, true]) {
        const index = byTenant ? 'inflows_tenant_attention_index' : 'inflows_attention_index';
        it(`admin.settlement.inflows${state ? ` (${state})` : ''}${byTenant ? ' of a tenant' : ''}, ${later ? 'the next page' : 'the first page'}: ${index}, no sort`, async () => {
          const filter = { state, tenantId: byTenant ? tenantId : undefined };
          expect(await inflowsPagePlan(filter, later)).to.deep.equal({
            scans: [`Index Scan using ${index}`],
            sorted: false,
          });
        });
      }
    }
  }

  // The console's INFLOWS_UNMATCHED queue: from an index of its own.
  for (const later of [false, true]) {
    it(`admin.settlement.inflows (unattributed), ${later ? 'the next page' : 'the first page'}: inflows_unattributed_index, no sort`, async () => {
      expect(await inflowsPagePlan({ unattributed: true }, later)).to.deep.equal({
        scans: ['Index Scan using inflows_unattributed_index'],
        sorted: false,
      });
    });
  }

  // The settlement job's look for money still HELD against a FAILED payout, on every pass: the
  // HELD inflows from an index, each one's payout by its key; never a read of either table whole.
  it('the settlement job finds money held against failed payouts from indexes, never the tables', async () => {
    for (const scans of await scansOf(claimHeldOfFailedPayouts.text, '(100)')) {
      const inflows = scans.filter((s) => s.startsWith('inflows:') || s.includes('using inflows_'));
      expect(inflows, 'inflows').to.not.be.empty;
      for (const read of scans) expect(read).to.not.match(/Seq Scan/);
      const payouts = scans.filter((s) => s.startsWith('payouts:'));
      expect(payouts).to.have.length(1);
      expect(payouts[0]).to.match(/^payouts: Index (Only )?Scan using payouts_/);
    }
    // Each payout by its id, in the index's condition (the primary key at scale; on a small table
    // the planner may take the tenant's status index, whose entries also hold the id and status).
    for (const nodes of await preparedPlans(claimHeldOfFailedPayouts.text, '(100)')) {
      const read = nodes.find((n) => n['Relation Name'] === 'payouts');
      expect(read?.['Index Cond'], JSON.stringify(read)).to.match(/\bid = /);
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
