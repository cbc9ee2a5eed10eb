import { AsyncLocalStorage } from 'node:async_hooks';
import http from 'node:http';
import { expect } from 'chai';
import pg from 'pg';
import { TABLE_DISTRIBUTION } from '#src/db/distribution.ts';
import { runDispatchOnce } from '#src/dispatch/job.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { runSettlementOnce } from '#src/settlement/job.ts';
import { call, type Merchant } from '../client.ts';
import { callbacksDelivered, deps, merchantWith, mine, outflowsOf, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { trpcCall } from '../operators/fixtures.ts';
import { sandbox } from '../settlement/fixtures.ts';
import { configureWebhook, deliverFor, receiversClosedAfterEach } from '../webhooks/receiver.ts';

const DISTRIBUTED = Object.entries(TABLE_DISTRIBUTION)
  .filter(([, d]) => d === 'distributed')
  .map(([t]) => t);

const REFERENCE = Object.entries(TABLE_DISTRIBUTION)
  .filter(([, d]) => d === 'reference')
  .map(([t]) => t);

/** The path of the HTTP request the service is handling, in that request's async context. */
const request = new AsyncLocalStorage<string>();

/**
 * Who sent a statement: the request it was sent for (a merchant's `/v1/*`, a provider's
 * `/callbacks/*`, an operator's `/trpc/*`), so that a callback arriving on its own while a
 * merchant's call runs is counted as the callback's; outside any request, the test's phase
 * (a worker's pass it runs), or `background` while the test waits on merchants' calls.
 */
function sender(): string {
  const path = request.getStore();
  if (path === undefined) return phase === 'merchant' ? 'background' : phase;
  if (path.startsWith('/v1/')) return 'merchant';
  if (path.startsWith('/callbacks/')) return 'callback';
  if (path.startsWith('/trpc/')) return 'operator';
  return `request ${path}`;
}

/** Every statement text sent by any client of `pg` in this process while `work` runs. */
async function statementsOf(work: () => Promise<void>): Promise<{ text: string; during: string }[]> {
  const sent: { text: string; during: string }[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string };
    const text = typeof first === 'string' ? first : first?.text;
    if (text) sent.push({ text, during: sender() });
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  // A server emits 'request' synchronously from its parser: everything its handler does, to the
  // last statement, runs in the context entered here.
  const emit = http.Server.prototype.emit;
  const emitAny = emit as (this: http.Server, ...args: unknown[]) => boolean;
  http.Server.prototype.emit = function (this: http.Server, ...args: unknown[]) {
    if (args[0] !== 'request') return emitAny.apply(this, args);
    const url = (args[1] as http.IncomingMessage).url ?? '';
    return request.run(url, () => emitAny.apply(this, args));
  } as typeof emit;
  try {
    await work();
  } finally {
    pg.Client.prototype.query = query;
    http.Server.prototype.emit = emit;
  }
  return sent;
}

/** The statement's text with its values taken out: `$n` parameters and the values the ORM inlined. */
function shapeOf(text: string): string {
  return text
    .replace(/'(?:[^']|'')*'/g, '?')
    .replace(/\$\d+/g, '?')
    .replace(/\b\d+(\.\d+)?\b/g, '?')
    .replace(/\bin \(\?(, \?)*\)/g, 'in (?)')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The ORM's writes of one entity it loaded by id (the engine's transitions, the dispatch and
 * refund workers' updates): which columns they set depends on what changed.
 */
const ORM_WRITE_BY_ID =
  /^update "(payouts|outflows|refunds|inflows|payment_instructions)" set .+ where "id" = \?$/;

/**
 * Whether the statement constrains the tenant: `tenant_id` compared with a value the statement is
 * given (`= $1`, `in (...)`, `= any($2)`, a JSON row's `(u->>3)::uuid`, `(x, tenant_id) in (...)`)
 * or with a column of the rows it is given (an `unnest` or a JSON array of them), or written by an
 * insert. A join of two tables on `tenant_id` alone does not count: it keeps a statement on one
 * node once it is there, but does not say which. A textual check, of what the statement says, not
 * of its plan.
 */
function namesTenant(text: string): boolean {
  if (/^\s*insert\s/i.test(text)) return /\btenant_id\b/.test(text);
  if (/\btenant_id"?\s*(=\s*(\$\d+|\?|'|any\s*\(|\(\s*\w+\s*->>)|in\s*\(|,[^)]*\)\s*in\b)/i.test(text))
    return true;
  const given = new Set(
    [
      ...text.matchAll(
        /\b(?:unnest|jsonb_array_elements)\s*\((?:[^()]|\([^()]*\))*\)\s+(?:as\s+)?"?(\w+)"?/gi,
      ),
      // A reference table's row names one tenant (an API key's, an address's): the directory that
      // routes a sharded cluster's statements is keyed the same way.
      ...text.matchAll(
        new RegExp(`\\b(?:from|join)\\s+"?(?:${REFERENCE.join('|')})"?\\s+(?:as\\s+)?"?(\\w+)"?`, 'gi'),
      ),
    ].map((m) => m[1]!.toLowerCase()),
  );
  for (const m of text.matchAll(
    /(?:"?(\w+)"?\.)?"?tenant_id"?\s*=\s*(?:coalesce\s*\(\s*)?"?(\w+)"?\."?tenant_id\b/gi,
  )) {
    if (given.has(m[1]?.toLowerCase() ?? '') || given.has(m[2]!.toLowerCase())) return true;
  }
  return false;
}

/** The distributed tables a statement reads or writes. */
function distributedTablesOf(text: string): string[] {
  const found = new Set<string>();
  for (const m of text.matchAll(/\b(?:from|join|update|into)\s+"?([a-z_]+)"?/gi)) {
    const table = m[1]!.toLowerCase();
    if (DISTRIBUTED.includes(table)) found.add(table);
  }
  return [...found];
}

/**
 * The workers' statements on distributed tables that name no tenant (docs/scaling.md, "What would
 * fan out to every node"), as sent, with their values taken out: claims across tenants
 * (instruction expiry, settlement's due addresses and inflows, chain confirmations, held money of
 * failed payouts), the bank credit's lookup of its virtual account's owner, and the processor
 * callback's outflow (our id is its reference), counted, then locked with its payout as every
 * dispatch verdict locks it, a QUERY_OUTFLOW task's too. A statement sent prepared on PostgreSQL
 * and through the ORM on PGlite is here in both forms.
 */
const FAN_OUT: readonly string[] = [
  'select i.id, i.tenant_id, i.payout_id, i.status, i.snapshot from payment_instructions i join rail_cursors c on c.source = coalesce(i.chain, ?) where i.status = ? and i.expires_at <= ? and c.read_through >= i.expires_at and not exists ( select ? from inflows f where f.to_account = i.account_unique and f.rail = i.rail and f.tenant_id = i.tenant_id and f.state in (?) and f.arrived_at < i.expires_at) order by i.expires_at limit ? for update of i skip locked',
  'with counted as ( update inflows set confirmations_received = greatest(confirmations_received, ?::int - block_number + ?), updated_at = ? where rail = ? and network = ? and state = ? and (?::int - block_number + ? > confirmations_received or ?::int - block_number + ? >= confirmations_required) returning id, tenant_id, to_account, amount, currency, state, snapshot, confirmations_received, confirmations_required ) select id, tenant_id, to_account, amount, currency, state, snapshot, confirmations_received from counted where confirmations_received >= confirmations_required',
  'with oldest as ( select to_account, created_at from inflows where state = ? and rail = ? and id <> all(?::uuid[]) order by created_at, id limit ? ), due as (select to_account, min(created_at) as first, count(*) as n from oldest group by to_account) select a.address from deposit_addresses a join due d on d.to_account = a.address order by d.first, a.address limit (select greatest(?, ceil(?::numeric * count(*) / greatest(?, sum(n)))) from due) for update of a skip locked',
  'select id, tenant_id, rail, network, amount, currency, to_account, state, snapshot, arrived_at from inflows where state = ? and (rail = ? or to_account = any(?::text[])) and id <> all(?::uuid[]) order by created_at, id limit ? for update skip locked',
  'select f.id, f.tenant_id, f.state, f.snapshot from inflows f where f.state = ? and f.payout_id is not null and (select p.status from payouts p where p.id = f.payout_id and p.tenant_id = f.tenant_id) = ? limit ? for update of f skip locked',
  'select distinct on (account_unique) account_unique, tenant_id, provider_name from payment_instructions where account_unique = any(?::text[]) and rail = ? order by account_unique, created_at desc',
  'select count(*) as "count" from "outflows" as "o0" where "o0"."id" = ?',
  'select o.id, o.tenant_id, o.payout_id, o.status, o.snapshot, o.processor, o.attempt_number, o.destination_amount::text, o.destination_currency, o.processor_reference, o.failure_code, o.failure_reason, o.retryable, o.dispatched_at, o.settled_at, p.settlement_currency, (p.settlement_amount - p.total_fee_amount)::text as converted from outflows o join payouts p on p.id = o.payout_id and p.tenant_id = o.tenant_id where o.id = any(?::uuid[]) order by o.id for update of o',
];

/** The operators' lists and counts across tenants (the same table's first row), as sent. */
const OPERATOR_FAN_OUT: readonly string[] = [
  // The instructions of the bank accounts that the inflows waiting for a decision were paid to.
  'select "p0".* from "payment_instructions" as "p0" where "p0"."rail" = ? and "p0"."account_unique" in (?)',
  'select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select p.id, held.since from payouts p cross join lateral ( select min(t.created_at) as since from payout_status_timeline t where t.payout_id = p.id and t.reason_code = ?) held where p.status = ? and (p.snapshot->?->>?) = ?) q union all select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select p.id, held.since from payouts p cross join lateral ( select max(t.created_at) as since from payout_status_timeline t where t.payout_id = p.id and t.reason_code = ?) held where p.status = ? and (p.snapshot->?->>?) = ?) q union all select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select id, arrived_at as since from inflows where state = ? or (state = ? and payout_id is null)) q union all select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select id, updated_at as since from refunds where status = ?) q union all select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select p.id, p.updated_at as since from payouts p where p.status = ? and p.is_refunded = false and p.received_amount > ? and not exists ( select ? from tasks t where t.kind = ? and t.subject_id = p.id and t.done_at is null)) q union all select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select p.id, p.updated_at as since from payouts p where p.status = ? and p.received_amount > p.settlement_amount and (select count(*) from refunds r where r.payout_id = p.id and r.tenant_id = p.tenant_id) = ?) q union all select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select d.id, d.updated_at as since from webhook_deliveries d where d.status = ? and not exists ( select ? from webhook_deliveries r where r.event_id = d.event_id and r.redelivery_of is not null and r.id <> d.id and r.created_at >= d.created_at)) q union all select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select id, created_at as since from approvals where status = ?) q union all select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select id, created_at as since from recon_breaks where status = ?) q union all select ? as queue, count(*)::int as count, min(since) as oldest_at, (count(*) filter (where since <= ?::timestamptz))::int as overdue from (select id, first_seen_at as since from ledger_violations where resolved_at is null) q',
  '(select ? as machine, "status" as path, count(*)::int as count from "payouts" group by "status") union all (select ?, "status" || ? || ("snapshot"->?->>"status"), count(*)::int from "payouts" where "status" in (?) group by ?) union all (select ? as machine, "status" as path, count(*)::int as count from "payment_instructions" group by "status") union all (select ? as machine, "state" as path, count(*)::int as count from "inflows" group by "state") union all (select ?, "state" || ? || ("snapshot"->?->>"state"), count(*)::int from "inflows" where "state" in (?) group by ?) union all (select ? as machine, "status" as path, count(*)::int as count from "quotes" group by "status") union all (select ? as machine, "status" as path, count(*)::int as count from "outflows" group by "status") union all (select ? as machine, "status" as path, count(*)::int as count from "refunds" group by "status") union all (select ? as machine, "status" as path, count(*)::int as count from "webhook_deliveries" group by "status") union all (select ? as machine, "status" as path, count(*)::int as count from "approvals" group by "status") union all (select ? as machine, "status" as path, count(*)::int as count from "recon_breaks" group by "status")',
  'select p."status" as path, c.code, count(*)::int as count from "payouts" p cross join lateral ( select case when p.status = ? then case when coalesce(bool_or(b.kind in (?) and b.balance > ?), false) then ? when coalesce(bool_or(b.kind in (?) and b.balance > ?), false) then ? when coalesce(bool_or(b.kind in (?) and b.balance > ?), false) then ? when coalesce(bool_or(b.kind in (?) and b.balance > ?), false) then ? when coalesce(sum(b.entries) filter (where b.kind in (?)), ?) = ? then ? end end as code from (select case when e.account like ? then ? when e.account like ? then ? when e.account like ? then ? when e.account like ? then ? end as kind, e.currency, sum(e.amount) as balance, count(*) as entries from ledger_entries e where e.payout_id = p.id group by ?, ?) b ) c where p."status" in (?) group by ?, ?',
  'select p.id, p.tenant_id, p.settlement_currency, p.settlement_network, p.settlement_amount::text, p.received_amount::text, p.created_at, held.since as held_since from payouts p cross join lateral ( select min(t.created_at) as since from payout_status_timeline t where t.payout_id = p.id and t.reason_code = ?) held where p.status = ? and (p.snapshot->?->>?) = ? and (null::timestamptz is null or (p.created_at, p.id) > (null::timestamptz, null::uuid)) order by p.created_at, p.id limit ?',
  'select "r0".* from "refunds" as "r0" where "r0"."status" = ? order by "r0"."created_at" asc, "r0"."id" asc limit ?',
  'select "p0".* from "payouts" as "p0" where "p0"."status" = ? and "p0"."is_refunded" = false and "p0"."received_amount" > ? and not exists (select ? from tasks t where t.kind = ? and t.subject_id = p0.id and t.done_at is null) order by "p0"."created_at" asc, "p0"."id" asc limit ?',
  'select "w0".* from "webhook_deliveries" as "w0" where "w0"."status" = ? order by "w0"."created_at" desc, "w0"."id" desc limit ?',
  'select "i0".* from "inflows" as "i0" where "i0"."state" in (?) order by "i0"."created_at" asc, "i0"."id" asc limit ?',
  'select p.id, p.tenant_id, p.settlement_currency, p.settlement_network, p.settlement_amount::text, p.received_amount::text, p.created_at, held.since as held_since from payouts p cross join lateral ( select min(t.created_at) as since from payout_status_timeline t where t.payout_id = p.id and t.reason_code = ?) held where p.status = ? and (p.snapshot->?->>?) = ? and (?::timestamptz is null or (p.created_at, p.id) > (?::timestamptz, ?::uuid)) order by p.created_at, p.id limit ?',
  // The overpayments owed back (PAYOUTS_OVERPAYMENT_TO_RETURN), oldest first across tenants.
  'select p.id, p.tenant_id, p.settlement_currency, p.settlement_network, p.settlement_amount::text, p.received_amount::text, (p.received_amount - p.settlement_amount)::text as overpayment_amount, p.created_at, p.updated_at as succeeded_at, exists (select ? from refund_destinations d where d.tenant_id = p.tenant_id and d.currency = p.settlement_currency and d.is_active) as refund_destination_active from payouts p where p.status = ? and p.received_amount > p.settlement_amount and (select count(*) from refunds r where r.payout_id = p.id and r.tenant_id = p.tenant_id) = ? and (null::timestamptz is null or (p.created_at, p.id) > (null::timestamptz, null::uuid)) order by p.created_at, p.id limit ?',
  'select p.id, p.tenant_id, p.settlement_currency, p.settlement_network, p.settlement_amount::text, p.received_amount::text, (p.received_amount - p.settlement_amount)::text as overpayment_amount, p.created_at, p.updated_at as succeeded_at, exists (select ? from refund_destinations d where d.tenant_id = p.tenant_id and d.currency = p.settlement_currency and d.is_active) as refund_destination_active from payouts p where p.status = ? and p.received_amount > p.settlement_amount and (select count(*) from refunds r where r.payout_id = p.id and r.tenant_id = p.tenant_id) = ? and (?::timestamptz is null or (p.created_at, p.id) > (?::timestamptz, ?::uuid)) order by p.created_at, p.id limit ?',
];

/** The operators' procedures the test calls, with their input. */
const OPERATOR_READS: readonly (readonly [string, unknown])[] = [
  ['admin.exceptions', undefined],
  ['admin.machines', undefined],
  ['admin.payouts.heldUnderpaid', { limit: 10 }],
  ['admin.refunds.failed', { limit: 10 }],
  ['admin.refunds.held', { limit: 10 }],
  ['admin.refunds.overpayments', { limit: 10 }],
  ['admin.webhooks.dead', { limit: 10 }],
  ['admin.settlement.inflows', { limit: 10 }],
];

/**
 * What the service is doing while a statement is sent: a merchant's call, a worker's pass, a
 * provider's callback (they come on their own: the test waits for them before the merchant's
 * calls), or an operator's call.
 */
let phase = 'setup';

/** A payout through the API and the workers to PAYMENT_RECEIVED, read only through the API. */
async function paid(merchant: Merchant, body: Record<string, unknown>): Promise<string> {
  phase = 'merchant';
  const created = await call('POST', '/v1/payouts', { key: merchant.key, body });
  expect(created.status, created.text).to.equal(201);
  phase = 'worker';
  await runInstructionsOnce(deps());
  phase = 'merchant';
  const instruction = await call('GET', `/v1/payouts/${created.body.id}/payment-instruction`, {
    key: merchant.key,
  });
  expect(instruction.status, instruction.text).to.equal(200);
  const { account_unique: to, rail, network } = instruction.body;
  const amount = String(instruction.body.expected_amount);
  const chain = network === 'TRC20' ? 'TRON' : 'BSC';
  phase = 'worker';
  if (rail === 'CRYPTO') {
    expect(
      (
        await sandbox('/sandbox/crypto/transfers', {
          network: chain,
          to_address: to,
          amount,
          currency: 'USDT',
        })
      ).status,
    ).to.equal(201);
    await mine(chain, chain === 'TRON' ? deps().config.CONFIRMATIONS_TRON : deps().config.CONFIRMATIONS_BSC);
    await runSettlementOnce(deps());
  } else {
    expect(
      (await sandbox('/sandbox/bank/transfers', { account_number: to, amount, currency: 'NGN' })).status,
    ).to.equal(201);
  }
  phase = 'callback';
  for (let i = 0; ; i++) {
    const payout = await call('GET', `/v1/payouts/${created.body.id}`, { key: merchant.key });
    if (payout.body.status === 'PAYMENT_RECEIVED') break;
    expect(i, `payout ${created.body.id} still ${payout.body.status}`).to.be.lessThan(200);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return created.body.id;
}

/**
 * Every hot query names its tenant, so that Citus would route it to one node (docs/scaling.md,
 * "Sharding by tenant"): the statements the service sends through `pg` while a merchant's flow and
 * the workers' passes run, then the operators' lists and counts. A merchant's call never sends a
 * statement on a distributed table without `tenant_id`; a worker's, a callback's or an operator's
 * does only when it is one of the documented fan-outs.
 */
describe('every hot query names its tenant (docs/scaling.md, Citus)', () => {
  const startReceiver = receiversClosedAfterEach();

  it("constrains tenant_id in every statement of a merchant's flow, and in the workers' and operators' but for the documented fan-outs", async function () {
    this.timeout(120_000);
    const merchant = await merchantWith();
    const receiver = await startReceiver();
    // Work other files left due runs first, so that the passes below send this flow's statements.
    await runInstructionsOnce(deps());
    await runSettlementOnce(deps());
    await runDispatchOnce(deps());
    await runRefundsOnce(deps());
    const sent = await statementsOf(async () => {
      phase = 'merchant';
      await configureWebhook(merchant, receiver.url);
      const quote = await call('POST', '/v1/rates/quotes', {
        key: merchant.key,
        body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 150000 },
      });
      expect(quote.status, quote.text).to.equal(201);
      expect((await call('GET', `/v1/rates/quotes/${quote.body.id}`, { key: merchant.key })).status).to.equal(
        200,
      );

      const usdt = await paid(merchant, payoutTo('5678'));
      const ngn = await paid(merchant, payoutTo('5678', 'NGN'));
      const failed = await paid(merchant, payoutTo('1001'));
      phase = 'worker';
      await runDispatchOnce(deps());
      // The processor's callbacks come on their own, from here on: the merchant's calls below wait
      // until they have (these outflows are read again as the merchant's).
      phase = 'callback';
      const [outflow] = await outflowsOf(merchant, usdt);
      const [ngnOutflow] = await outflowsOf(merchant, ngn);
      await callbacksDelivered(outflow.id);
      await callbacksDelivered(ngnOutflow.id);
      for (
        let i = 0;
        (await call('GET', `/v1/payouts/${failed}`, { key: merchant.key })).body.status !== 'FAILED';
        i++
      ) {
        expect(i, `payout ${failed} to fail`).to.be.lessThan(200);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      phase = 'worker';
      await runRefundsOnce(deps());
      await mine('TRON');
      harness().clock.advance(10_000);
      await runRefundsOnce(deps());
      await deliverFor([merchant]);

      phase = 'merchant';
      for (const path of [
        '/v1/payouts',
        `/v1/payouts/${usdt}`,
        `/v1/payouts/${ngn}`,
        `/v1/payouts/${usdt}/outflows`,
        `/v1/payouts/${usdt}/payment-instruction`,
        `/v1/payouts/${usdt}/money-movements`,
        `/v1/payouts/${failed}/refunds`,
        `/v1/outflows/${outflow.id}`,
        '/v1/inflows',
        '/v1/refunds',
        '/v1/money-movements',
        '/v1/webhooks/deliveries',
        '/v1/webhooks/config',
        '/v1/refund-destinations',
      ]) {
        const res = await call('GET', path, { key: merchant.key });
        expect(res.status, `${path}: ${res.text}`).to.equal(200);
      }

      // The operators' lists and counts, across tenants.
      phase = 'operator';
      for (const [path, input] of OPERATOR_READS) {
        const res = await trpcCall(path, 'query', input, harness().adminToken);
        expect(res.status, `${path}: ${JSON.stringify(res.body)}`).to.equal(200);
      }
    });
    const untenanted = new Map<string, Set<string>>();
    for (const { text, during } of sent) {
      if (distributedTablesOf(text).length === 0 || namesTenant(text)) continue;
      if (!untenanted.has(during)) untenanted.set(during, new Set());
      untenanted.get(during)!.add(shapeOf(text));
    }
    const of = (...phases: string[]) => phases.flatMap((p) => [...(untenanted.get(p) ?? [])]);
    const known = ['setup', 'merchant', 'worker', 'callback', 'background', 'operator'];
    expect(
      [...untenanted.keys()].filter((p) => !known.includes(p)),
      'statements sent for a request no list covers',
    ).to.deep.equal([]);
    expect(of('merchant'), "a merchant's call that names no tenant").to.deep.equal([]);
    expect(
      of('worker', 'callback', 'background').filter((s) => !FAN_OUT.includes(s) && !ORM_WRITE_BY_ID.test(s)),
      "a worker's or callback's statement that names no tenant and is no documented fan-out",
    ).to.deep.equal([]);
    expect(
      of('operator').filter((s) => !OPERATOR_FAN_OUT.includes(s)),
      "an operator's statement that names no tenant and is no documented fan-out",
    ).to.deep.equal([]);
  });
});
