import { type PlanNode, planNodes } from '#src/db/plan.ts';
import type { Child } from '../lib/children.ts';
import { type BenchContext, startService } from '../lib/context.ts';
import { resetWork } from '../lib/db.ts';
import { type LoadRequest, runLoad } from '../lib/load.ts';
import { round } from '../lib/report.ts';
import { inflowSnapshots, seedPayouts } from '../lib/seed.ts';
import { traceRequests } from '../lib/trace.ts';

/**
 * The operations console's lists on `plan.listRows` payouts (100,000 in a full run), each with
 * its inflow: one in a hundred held short for a person, one in a hundred unmatched. The console
 * reads its lists through `admin.*` over tRPC with an operator's token, page by page with the
 * API's cursors. Measured through the service (first page, a page deep in the list, and a
 * payout's detail page and its money statement, read from the ledger's entries of that payout)
 * against the merchant's own first page of payouts in the same run; then
 * every list's page query is explained on the seeded tables: an index scan without a sort or a
 * sequential scan of a hot table, or the check fails.
 */

/**
 * Tables that grow with the business: a console list may never scan them whole once they are
 * big (on a nearly empty table a sequential scan is what the planner rightly prefers).
 */
const BIG_ROWS = 1_000;
const HOT_TABLES = [
  'payouts',
  'inflows',
  'payout_status_timeline',
  'refunds',
  'webhook_deliveries',
  'webhook_delivery_attempts',
  'audit_log',
  'approvals',
];

const CONNECTIONS = 16;

/** A tRPC query as the console sends it. */
function trpcPath(procedure: string, input: unknown): string {
  return `/trpc/${procedure}?input=${encodeURIComponent(JSON.stringify(input))}`;
}

async function trpcGet(ctx: BenchContext, url: string, path: string): Promise<any> {
  const res = await fetch(`${url}${path}`, {
    headers: { authorization: `Bearer ${ctx.secrets.adminToken}` },
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`${path}: ${res.status} ${text}`);
  return (JSON.parse(text) as { result: { data: unknown } }).result.data;
}

async function seed(ctx: BenchContext): Promise<void> {
  const db = ctx.pool;
  await resetWork(db);
  ctx.log(`console: seeding ${ctx.plan.listRows.toLocaleString('en-US')} payouts with their inflows`);
  await seedPayouts(db, {
    tenantIds: ctx.tenants.map((t) => t.id),
    count: ctx.plan.listRows,
    status: 'PENDING_PAYMENT',
    reference: 'console',
  });
  // Every payout has an inflow: 1 % held short against its payout, 1 % unmatched, the rest matched.
  const snapshots = inflowSnapshots();
  await db.query(
    `insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref, to_account,
        block_number, confirmations_received, confirmations_required, state, snapshot, overpayment_amount,
        payout_id, is_matched, is_underpaid, arrived_at, created_at, updated_at)
     select gen_random_uuid(), p.tenant_id, 'CRYPTO', 'TRON', 'TRON', 30, 'USDT', 'console-' || p.id,
            'Tconsole', 1, 19, 19,
            case when p.n % 100 = 0 then 'HELD' when p.n % 100 = 1 then 'UNMATCHED' else 'MATCHED' end,
            $2::jsonb, 0,
            case when p.n % 100 = 1 then null else p.id end,
            p.n % 100 > 1, p.n % 100 = 0, p.created_at, p.created_at, p.created_at
       from (select id, tenant_id, created_at, row_number() over (order by created_at, id) as n
               from payouts where merchant_reference like $1 || '-%') p`,
    ['console', snapshots.MATCHED],
  );
  // The ledger's entries of that money, as the machines write them: RECEIVED (the deposit address →
  // suspense) and ATTRIBUTED (suspense → the payout, a money_received movement carrying its id).
  await db.query(
    `insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
        cause_object, cause_id, transition, created_at)
     select gen_random_uuid(), md5('console-tx-' || e.tx || '-' || i.id)::uuid, e.account, 'USDT', e.amount,
            i.tenant_id, case when e.tx = 2 then i.payout_id end, e.movement, 'inflow', i.id, e.transition,
            i.created_at
       from inflows i,
            lateral (values
              ('collection:crypto:TRON:Tconsole', -30, null, 'RECEIVED (PENDING → CONFIRMED)', 1),
              ('tenants:' || i.tenant_id || ':suspense', 30, null, 'RECEIVED (PENDING → CONFIRMED)', 1),
              ('tenants:' || i.tenant_id || ':suspense', -30, null, 'ATTRIBUTED (CONFIRMED → MATCHED)', 2),
              ('tenants:' || i.tenant_id || ':payouts:' || i.payout_id, 30, 'money_received',
               'ATTRIBUTED (CONFIRMED → MATCHED)', 2)
            ) as e(account, amount, movement, transition, tx)
      where i.external_ref like 'console-%' and i.payout_id is not null`,
  );
  // The payouts those short inflows were held against wait as the console's held-underpaid queue.
  await db.query(
    `update payouts p set snapshot = jsonb_set(p.snapshot, '{value,PENDING_PAYMENT}', '"held"')
       from inflows i
      where i.payout_id = p.id and i.state = 'HELD' and i.external_ref like 'console-%'`,
  );
  await db.query('analyze');
}

interface ConsoleList {
  name: string;
  procedure: string;
  input: Record<string, unknown>;
  /**
   * Read in page order from an index and stopped at the page: no sort at all over a hot table,
   * not even of the few rows its queue holds.
   */
  indexOrder?: boolean;
}

const LISTS: ConsoleList[] = [
  { name: 'payouts held underpaid', procedure: 'admin.payouts.heldUnderpaid', input: {} },
  // The inflows waiting for a decision: all of them, the HELD ones (held against their payouts), the UNMATCHED.
  { name: 'inflows to decide', procedure: 'admin.settlement.inflows', input: {}, indexOrder: true },
  { name: 'held inflows', procedure: 'admin.settlement.inflows', input: { state: 'HELD' }, indexOrder: true },
  {
    name: 'unmatched inflows',
    procedure: 'admin.settlement.inflows',
    input: { state: 'UNMATCHED' },
    indexOrder: true,
  },
  { name: 'failed refunds', procedure: 'admin.refunds.failed', input: {} },
  { name: 'DEAD webhook deliveries', procedure: 'admin.webhooks.dead', input: {} },
  { name: 'tenants', procedure: 'admin.tenant.list', input: {} },
  { name: 'approvals', procedure: 'admin.approvals.list', input: {} },
  { name: 'audit trail', procedure: 'admin.audit.list', input: {} },
];

/** The cursor of a page halfway through a list (walked with pages of 100). */
async function deepCursor(ctx: BenchContext, url: string, list: ConsoleList): Promise<string | null> {
  let cursor: string | undefined;
  const pages: string[] = [];
  for (let i = 0; i < 1_000; i++) {
    const page = await trpcGet(ctx, url, trpcPath(list.procedure, { ...list.input, limit: 100, cursor }));
    if (!page.meta.has_more) break;
    cursor = page.meta.next_cursor;
    pages.push(cursor!);
  }
  return pages[Math.floor(pages.length / 2)] ?? null;
}

async function measure(ctx: BenchContext, service: Child, next: () => LoadRequest) {
  const base = { url: service.url, connections: CONNECTIONS, maxRequests: ctx.plan.maxRequests, next };
  await runLoad({ ...base, durationS: ctx.plan.warmupS });
  const result = await runLoad({ ...base, durationS: ctx.plan.listS });
  const failures = Object.values(result.non2xx).reduce((a, b) => a + b, 0) + result.errors;
  if (failures > 0)
    throw new Error(`console load had ${failures} failures: ${JSON.stringify(result.non2xx)}`);
  return result;
}

export async function consoleListsScenario(ctx: BenchContext): Promise<void> {
  await seed(ctx);
  const auth = { authorization: `Bearer ${ctx.secrets.adminToken}` };
  const service = await startService(ctx);
  const paths: { name: string; path: string; indexOrder?: boolean }[] = [];
  try {
    const merchant = ctx.tenants[0]!;
    const baseline = await measure(ctx, service, () => ({
      method: 'GET',
      path: '/v1/payouts?limit=20',
      headers: { 'x-api-key': merchant.apiKey },
    }));
    ctx.results.add({
      scenario: 'baseline',
      metric: `merchant list first page/s (${CONNECTIONS} conn)`,
      value: baseline.rps,
      unit: 'req/s',
    });
    const held = await trpcGet(ctx, service.url, trpcPath('admin.payouts.heldUnderpaid', { limit: 1 }));
    const payoutId = held.data[0]?.payout_id as string | undefined;
    if (!payoutId) throw new Error('console: the seed left no held payout');

    const runs: { name: string; path: string; indexOrder?: boolean }[] = [];
    for (const list of LISTS) {
      runs.push({
        name: `${list.name} first page`,
        path: trpcPath(list.procedure, { ...list.input, limit: 20 }),
        indexOrder: list.indexOrder,
      });
      const cursor = await deepCursor(ctx, service.url, list);
      if (cursor) {
        runs.push({
          name: `${list.name} deep page`,
          path: trpcPath(list.procedure, { ...list.input, limit: 20, cursor }),
          indexOrder: list.indexOrder,
        });
      }
    }
    runs.push({ name: 'payout detail', path: trpcPath('admin.payouts.get', { payout_id: payoutId }) });
    // The payout page's money statement, read with the detail: the payout's entries by its id.
    runs.push({ name: 'payout statement', path: trpcPath('admin.ledger.payout', { payout_id: payoutId }) });
    for (const run of runs) {
      ctx.log(`console: ${run.name}`);
      const measured = await measure(ctx, service, () => ({ method: 'GET', path: run.path, headers: auth }));
      ctx.results.ratio({
        scenario: 'console',
        metric: `${run.name} req/s vs merchant first page`,
        value: measured.rps,
        unit: 'req/s',
        baseline: baseline.rps,
      });
      ctx.results.add({ scenario: 'console', metric: `${run.name} p99`, value: measured.p99, unit: 'ms' });
      paths.push(run);
    }
  } finally {
    await service.stop();
  }

  ctx.log('console: query plans');
  const traced = await traceRequests(
    ctx,
    Object.fromEntries(
      paths.map((p) => [
        p.name,
        async (url: string) => {
          await trpcGet(ctx, url, p.path);
          return 1;
        },
      ]),
    ),
  );
  const client = await ctx.pool.connect();
  try {
    // The ledger's entries are read from their monthly partitions, each a table of its own.
    const { rows: sizes } = await client.query(
      `select relname, reltuples::bigint as rows from pg_class
        where relname = any($1::text[]) or (relname like 'ledger\\_entries\\_%' and relkind = 'r')`,
      [HOT_TABLES],
    );
    const big = new Set(
      (sizes as { relname: string; rows: string }[])
        .filter((r) => Number(r.rows) >= BIG_ROWS)
        .map((r) => r.relname),
    );
    ctx.log(`console: big tables ${[...big].join(', ')}`);
    const scansBig = (n: PlanNode) =>
      n['Node Type'] === 'Seq Scan' && n['Relation Name'] !== undefined && big.has(n['Relation Name']);
    const readsBig = (n: PlanNode) => n['Relation Name'] !== undefined && big.has(n['Relation Name']);
    for (const { name, indexOrder } of paths) {
      const trips = traced[name]!.trips.filter((t) => /^\s*(select|with)\b/i.test(t.sql));
      let worst = 0;
      const problems: string[] = [];
      for (const trip of trips) {
        const { rows } = await client.query(`explain (analyze, format json) ${trip.sql}`, trip.params);
        const explained = (rows[0] as { 'QUERY PLAN': { Plan: PlanNode; 'Execution Time': number }[] })[
          'QUERY PLAN'
        ][0]!;
        worst = Math.max(worst, explained['Execution Time']);
        for (const node of planNodes(explained.Plan)) {
          if (scansBig(node)) problems.push(`sequential scan of ${node['Relation Name']}`);
          // A sort of the few rows a page or a queue holds is fine; one over a whole big table is not.
          if (node['Node Type'] === 'Sort' && planNodes(node).some(scansBig))
            problems.push(`sort over all of ${planNodes(node).find(scansBig)!['Relation Name']}`);
        }
        // A list read in index order sorts no rows of a big table, however few (a subplan's sort
        // orders one row's own children, not the list).
        if (indexOrder) {
          for (const node of planNodes(explained.Plan, { subplans: false })) {
            const read = node['Node Type'] === 'Sort' && planNodes(node, { subplans: false }).find(readsBig);
            if (read) problems.push(`sort of ${read['Relation Name']} rows`);
          }
        }
      }
      ctx.results.check(
        indexOrder
          ? `console ${name}: read in index order, no sequential scan or sort of a hot table`
          : `console ${name}: no sequential scan or sort of a hot table`,
        problems.length === 0,
        problems.length === 0
          ? `${trips.length} statements, slowest ${round(worst, 2)} ms`
          : problems.join('; '),
      );
      ctx.results.add({
        scenario: 'console',
        metric: `${name}: slowest statement execution`,
        value: round(worst, 2),
        unit: 'ms',
      });
    }
  } finally {
    client.release();
  }
}
