import type { EntityManager } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import sinon from 'sinon';
import { type PlanNode, planNodes } from '#src/db/plan.ts';
import { encodeCursor, listName } from '#src/http/pagination.ts';
import { type PayoutFilters, payoutPageQuery } from '#src/payouts/resource.ts';
import { call, createMerchant, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { partitionsAsParents } from './prepared-plans.ts';

/**
 * Every merchant list, filtered or not, first page or later, reads its page from an index in page
 * order: no sequential scan of the table, no sort of a tenant's rows, whatever the filters. The
 * queries are the service's own (the payouts' prepared statements, the ORM's SQL as sent), planned
 * over a tenant with a realistic history. The benchmark (bench/scenarios/api.ts) checks the same
 * on a table of 100,000 payouts.
 */

/** How `table` is read in the plan of `explain`, and whether anything sorts. */
async function planOf(
  explain: (em: EntityManager) => Promise<PlanNode>,
  table: string,
): Promise<{ scans: string[]; sorted: boolean }> {
  const em = harness().service.deps.orm.em.fork();
  const rolledBack = new Error('rolled back');
  let plan: PlanNode | undefined;
  // In a transaction rolled back at the end: the settings and the prepared statement end with it.
  await em
    .transactional(async (tx) => {
      plan = await explain(tx);
      throw rolledBack;
    })
    .catch((err: unknown) => {
      if (err !== rolledBack) throw err;
    });
  const all = planNodes(plan!);
  // A partitioned table is read partition by partition (`<table>_p…`, `<table>_default`), each
  // through its own copy of the parent's index: named here by the parent's, once, small
  // partitions left out (see partitionsAsParents).
  const { parentOf, small } = await partitionsAsParents();
  const ofTable = (name: string | undefined) => !!name && !small.has(name) && parentOf(name) === table;
  return {
    scans: [
      ...new Set(
        all
          .filter((n) => ofTable(n['Relation Name']))
          .map((n) => {
            const index = n['Index Name'] && parentOf(n['Index Name']);
            return [n['Node Type'], n['Scan Direction'], index && `using ${index}`].filter(Boolean).join(' ');
          }),
      ),
    ],
    // A sort inside a subplan orders one row's own children (a payout's timeline), not the list.
    sorted: planNodes(plan!, { subplans: false }).some((n) => /Sort/.test(n['Node Type'])),
  };
}

const jsonPlan = (rows: { 'QUERY PLAN': { Plan: PlanNode }[] }[]) => rows[0]!['QUERY PLAN'][0]!.Plan;

function literal(value: unknown): string {
  if (value instanceof Date) return `'${value.toISOString()}'`;
  if (typeof value === 'number') return String(value);
  return `'${String(value).replaceAll("'", "''")}'`;
}

/** The plan PostgreSQL settles on for a prepared statement after a few runs (generic), and one for these values (custom). */
async function payoutPlans(tenantId: string, filters: PayoutFilters, after: boolean) {
  const query = payoutPageQuery({
    tenantId,
    limit: 21,
    after: after ? { createdAt: new Date(), id: '019a0000-0000-7000-8000-000000000000' } : null,
    filters,
  });
  const plans = [];
  for (const mode of ['force_generic_plan', 'force_custom_plan']) {
    plans.push(
      await planOf(async (tx) => {
        await tx.execute(`set local plan_cache_mode = ${mode}`);
        await tx.execute(`prepare list_plan as ${query.statement.text}`);
        const rows = await tx.execute(
          `explain (format json) execute list_plan(${query.values.map(literal).join(', ')})`,
        );
        await tx.execute('deallocate list_plan');
        return jsonPlan(rows as never);
      }, 'payouts'),
    );
  }
  return plans;
}

/** The statement the ORM sends for a list request, explained with its values. */
async function ormListPlan(merchant: Merchant, path: string, table: string) {
  const connection = harness().service.deps.orm.em.getConnection();
  const spy = sinon.spy(connection, 'execute');
  let sent: { query: string; params: unknown[] } | undefined;
  try {
    const res = await call('GET', path, { key: merchant.key });
    expect(res.status, res.text).to.equal(200);
    const found = spy.getCalls().find((c) => new RegExp(`from "${table}"`).test(String(c.args[0])));
    if (!found) throw new Error(`no query on ${table} for ${path}`);
    sent = { query: String(found.args[0]), params: (found.args[1] ?? []) as unknown[] };
  } finally {
    spy.restore();
  }
  return planOf(
    async (tx) => jsonPlan((await tx.execute(`explain (format json) ${sent.query}`, sent.params)) as never),
    table,
  );
}

/** A cursor of a later page of a list, as the list would issue it. */
function cursorOf(list: string, filters: Record<string, string | boolean>): string {
  const position = {
    l: listName(list, filters),
    c: new Date().toISOString(),
    i: '019a0000-0000-7000-8000-000000000000',
  };
  return encodeURIComponent(encodeCursor(harness().service.deps.secrets.cursorKey, position));
}

const ROWS = 3000;

/**
 * A tenant with a history worth planning for: 3,000 payouts, inflows and delivery records, most of
 * them in the common state (SUCCESSFUL, matched, SUCCESS) and a few in each rare one, spread over
 * a year, so that the planner weighs each index as it would in production.
 */
async function seedHistory(tenantId: string): Promise<void> {
  const em = harness().service.deps.orm.em.fork();
  const at = `timestamptz '2026-01-01' + n * interval '3 hours'`;
  await em.execute(
    `insert into payouts (id, tenant_id, status, snapshot, merchant_reference, destination_type, destination_country,
        destination_currency, destination_amount, destination_account_unique, destination_provider_name,
        settlement_currency, settlement_amount, exchange_rate, mid_market_rate, platform_fee_amount,
        network_fee_amount, total_fee_amount, received_amount, created_at, updated_at)
     select gen_random_uuid(), ?, case when n % 50 = 0 then 'FAILED' when n % 7 = 0 then 'EXPIRED' else 'SUCCESSFUL' end,
            '{}', case when n % 3 = 0 then null else 'INV-' || n end, 'BANK_ACCOUNT', 'NG', 'NGN', 1000, '0123456789',
            'Guaranty Trust Bank', 'USDT', 1, 1, 1, 0, 0, 0, 1, ${at}, ${at}
       from generate_series(1, ${ROWS}) as n`,
    [tenantId],
  );
  await em.execute(
    `insert into inflows (id, tenant_id, rail, provider_name, amount, currency, external_ref, to_account, state,
        snapshot, is_matched, overpayment_amount, arrived_at, created_at, updated_at)
     select gen_random_uuid(), ?, 'BANK_TRANSFER', 'Sandbox Bank', 1000, 'NGN', 'plan-' || gen_random_uuid(),
            '9000000000', case when n % 40 = 0 then 'HELD' else 'MATCHED' end, '{}', n % 40 <> 0, 0, ${at}, ${at},
            ${at}
       from generate_series(1, ${ROWS}) as n`,
    [tenantId],
  );
  const [event] = await em.execute<{ id: string; created_at: Date }[]>(
    `insert into outbox_events (id, tenant_id, event_type, payload, published_at, created_at)
     values (gen_random_uuid(), ?, 'payout.created', '{}', now(), now()) returning id, created_at`,
    [tenantId],
  );
  const [delivery] = await em.execute<{ id: string }[]>(
    `insert into webhook_deliveries (id, tenant_id, event_id, event_type, target_url, target_origin, status, snapshot,
        attempts, created_at, updated_at, event_created_at)
     values (gen_random_uuid(), ?, ?, 'payout.created', 'https://hooks.example/x', 'https://hooks.example:443',
             'SUCCEEDED', '{}', 1, now(), now(), ?) returning id`,
    [tenantId, event!.id, event!.created_at],
  );
  await em.execute(
    `insert into webhook_delivery_attempts (id, tenant_id, delivery_id, event_id, payout_id, event_type, attempt_number,
        target_url, status, response_status, created_at, event_created_at)
     select gen_random_uuid(), ?, ?, ?, gen_random_uuid(),
            (array['payout.created', 'payout.pending_payment', 'payout.payment_received', 'payout.processing',
                   'payout.successful', 'payout.failed'])[1 + n % 6],
            n, 'https://hooks.example/x', case when n % 60 = 0 then 'DEAD' else 'SUCCESS' end, 200, ${at}, ?
       from generate_series(1, ${ROWS}) as n`,
    [tenantId, delivery!.id, event!.id, event!.created_at],
  );
  await em.execute('analyze payouts, inflows, webhook_delivery_attempts');
}

async function removeHistory(tenantId: string): Promise<void> {
  const em = harness().service.deps.orm.em.fork();
  for (const table of [
    'webhook_delivery_attempts',
    'webhook_deliveries',
    'outbox_events',
    'inflows',
    'payouts',
  ]) {
    await em.execute(`delete from ${table} where tenant_id = ?`, [tenantId]);
  }
}

describe('list query plans', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await createMerchant();
    await seedHistory(merchant.tenantId);
  });
  after(async () => {
    await removeHistory(merchant.tenantId);
  });

  const window = {
    createdAfter: new Date('2026-01-01T00:00:00Z'),
    createdBefore: new Date('2027-01-01T00:00:00Z'),
  };
  const payoutCases: [string, PayoutFilters, string][] = [
    ['the whole list', {}, 'payouts_tenant_id_created_at_id_index'],
    ['a status', { status: 'FAILED' }, 'payouts_status_index'],
    ['a merchant_reference', { merchantReference: 'INV-1' }, 'payouts_merchant_reference_index'],
    ['a creation window', window, 'payouts_tenant_id_created_at_id_index'],
    ['a status in a window', { status: 'FAILED', ...window }, 'payouts_status_index'],
    [
      'a merchant_reference in a window',
      { merchantReference: 'INV-1', ...window },
      'payouts_merchant_reference_index',
    ],
  ];
  for (const [name, filters, index] of payoutCases) {
    for (const after of [false, true]) {
      it(`payouts, ${name}, ${after ? 'a later page' : 'the first page'}: ${index}, no sort, generic and custom plans`, async () => {
        for (const plan of await payoutPlans(merchant.tenantId, filters, after)) {
          expect(plan).to.deep.equal({ scans: [`Index Scan Backward using ${index}`], sorted: false });
        }
      });
    }
  }

  // [path, table, index, the list and filters of a cursor for a later page]
  const ormCases: [string, string, string, [string, Record<string, string | boolean>]?][] = [
    ['/v1/inflows', 'inflows', 'inflows_tenant_id_created_at_id_index'],
    ['/v1/inflows?is_matched=false', 'inflows', 'inflows_is_matched_index'],
    [
      '/v1/inflows?is_matched=false',
      'inflows',
      'inflows_is_matched_index',
      ['inflows', { is_matched: false }],
    ],
    [
      '/v1/webhooks/deliveries',
      'webhook_delivery_attempts',
      'webhook_delivery_attempts_tenant_id_created_at_id_index',
    ],
    [
      '/v1/webhooks/deliveries?status=DEAD',
      'webhook_delivery_attempts',
      'webhook_delivery_attempts_status_index',
    ],
    [
      '/v1/webhooks/deliveries?event_type=payout.failed',
      'webhook_delivery_attempts',
      'webhook_delivery_attempts_event_type_index',
    ],
    [
      '/v1/webhooks/deliveries?event_type=payout.failed',
      'webhook_delivery_attempts',
      'webhook_delivery_attempts_event_type_index',
      ['webhook-deliveries', { event_type: 'payout.failed' }],
    ],
    [
      '/v1/webhooks/deliveries?payout_id=019a0000-0000-7000-8000-000000000000',
      'webhook_delivery_attempts',
      'webhook_delivery_attempts_payout_index',
    ],
    ['/v1/refunds?status=FAILED', 'refunds', 'refunds_tenant_id_created_at_id_index'],
  ];
  for (const [path, table, index, later] of ormCases) {
    it(`${path}, ${later ? 'a later page' : 'the first page'}: ${index}, no sort of more than one payout's records`, async () => {
      const sent = later ? `${path}&cursor=${cursorOf(...later)}` : path;
      const plan = await ormListPlan(merchant, sent, table);
      expect(plan.scans).to.deep.equal([`Index Scan Backward using ${index}`]);
      // One payout's records are a few dozen at most (nine events, five attempts each, and their
      // redeliveries'): over the partitions of the records (by week of their event) the planner
      // may gather them from the index and sort them rather than merge the weeks in order.
      const bounded = path.includes('payout_id=') && table === 'webhook_delivery_attempts';
      if (!bounded) expect(plan.sorted).to.equal(false);
    });
  }
});
