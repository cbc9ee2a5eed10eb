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
import { sandbox } from '../settlement/fixtures.ts';
import { configureWebhook, deliverFor, receiversClosedAfterEach } from '../webhooks/receiver.ts';

const DISTRIBUTED = Object.entries(TABLE_DISTRIBUTION)
  .filter(([, d]) => d === 'distributed')
  .map(([t]) => t);

/** Every statement text sent by any client of `pg` in this process while `work` runs. */
async function statementsOf(work: () => Promise<void>): Promise<{ text: string; during: string }[]> {
  const sent: { text: string; during: string }[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, ...args: unknown[]) {
    const first = args[0] as string | { text?: string };
    const text = typeof first === 'string' ? first : first?.text;
    if (text) sent.push({ text, during: phase });
    return (query as (...a: unknown[]) => unknown).apply(this, args);
  } as typeof query;
  try {
    await work();
  } finally {
    pg.Client.prototype.query = query;
  }
  return sent;
}

/** The statement's text with its values taken out: `$n` parameters and the values the ORM inlined. */
function shapeOf(text: string): string {
  return text
    .replace(/'(?:[^']|'')*'/g, '?')
    .replace(/\$\d+/g, '?')
    .replace(/\b\d+(\.\d+)?\b/g, '?')
    .replace(/\s+/g, ' ')
    .trim();
}

/**
 * The ORM's writes of one entity it loaded by id (the engine's transitions, the dispatch and
 * refund workers' updates): which columns they set depends on what changed.
 */
const ORM_WRITE_BY_ID =
  /^update "(payouts|outflows|refunds|inflows|payment_instructions)" set .+ where "id" = \?$/;

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
 * The statements on distributed tables that name no tenant, each a worker's (docs/scaling.md, "What
 * would fan out to every node"): claims across tenants (instruction expiry, settlement matching,
 * held money of failed payouts), batch writes of the rows a claim took (by id), and the engine's
 * and the refund worker's reads, locks and ORM writes of one row by id (a task names its subject,
 * not its tenant). As sent, with the values the ORM inlined taken out. No merchant's call is here.
 */
const FAN_OUT: readonly string[] = [
  // Settlement's batch write of the inflows it matched, as sent prepared (below: as the ORM sends it).
  'update inflows f set state = u.state, snapshot = u.snapshot::jsonb, is_matched = coalesce(u.is_matched, f.is_matched), matched_at = coalesce(u.matched_at, f.matched_at), is_underpaid = coalesce(u.is_underpaid, f.is_underpaid), payout_id = coalesce(u.payout_id, f.payout_id), instruction_id = coalesce(u.instruction_id, f.instruction_id), overpayment_amount = coalesce(u.overpayment_amount, f.overpayment_amount), updated_at = ? from unnest(?::uuid[], ?::text[], ?::boolean[], ?::timestamptz[], ?::boolean[], ?::uuid[], ?::uuid[], ?::numeric[], ?::text[]) as u(id, state, is_matched, matched_at, is_underpaid, payout_id, instruction_id, overpayment_amount, snapshot) where f.id = any(?::uuid[]) and f.id = u.id',
  'update payouts p set status = u->>?, snapshot = u->?, settlement_amount = coalesce((u->>?)::numeric, p.settlement_amount), exchange_rate = coalesce((u->>?)::numeric, p.exchange_rate), mid_market_rate = coalesce((u->>?)::numeric, p.mid_market_rate), platform_fee_amount = coalesce((u->>?)::numeric, p.platform_fee_amount), network_fee_amount = coalesce((u->>?)::numeric, p.network_fee_amount), total_fee_amount = coalesce((u->>?)::numeric, p.total_fee_amount), received_amount = coalesce((u->>?)::numeric, p.received_amount), updated_at = (u->>?)::timestamptz from jsonb_array_elements(?::jsonb) as u where p.id = (u->>?)::uuid',
  'select i.id, i.payout_id, i.status, i.snapshot from payment_instructions i join rail_cursors c on c.source = coalesce(i.chain, ?) where i.status = ? and i.expires_at <= ? and c.read_through >= i.expires_at and not exists ( select ? from inflows f where f.to_account = i.account_unique and f.rail = i.rail and f.state in (?, ?) and f.arrived_at < i.expires_at) order by i.expires_at limit ? for update of i skip locked',
  'update inflows f set state = u->>?, snapshot = u->?, updated_at = ? from jsonb_array_elements(?::jsonb) as u where f.id = (u->>?)::uuid',
  'with oldest as ( select to_account, created_at from inflows where state = ? and rail = ? and id <> all(?::uuid[]) order by created_at, id limit ? ), due as (select to_account, min(created_at) as first, count(*) as n from oldest group by to_account) select a.address from deposit_addresses a join due d on d.to_account = a.address order by d.first, a.address limit (select greatest(?, ceil(?::numeric * count(*) / greatest(?, sum(n)))) from due) for update of a skip locked',
  'select id, payout_id, amount, state, snapshot from inflows where payout_id = any(?::uuid[]) and state = ? order by created_at, id',
  'update inflows f set state = u.state, snapshot = u.snapshot::jsonb, is_matched = coalesce(u.is_matched, f.is_matched), matched_at = coalesce(u.matched_at, f.matched_at), is_underpaid = coalesce(u.is_underpaid, f.is_underpaid), payout_id = coalesce(u.payout_id, f.payout_id), instruction_id = coalesce(u.instruction_id, f.instruction_id), overpayment_amount = coalesce(u.overpayment_amount, f.overpayment_amount), updated_at = ? from unnest(?::uuid[], ?::text[], ?::boolean[], ?::timestamptz[], ?::boolean[], ?::uuid[], ?::uuid[], ?::numeric[], E?::text[]) as u(id, state, is_matched, matched_at, is_underpaid, payout_id, instruction_id, overpayment_amount, snapshot) where f.id = any(?::uuid[]) and f.id = u.id',
  'update payment_instructions i set status = u->>?, snapshot = u->?, paid_at = coalesce((u->>?)::timestamptz, i.paid_at), updated_at = ? from jsonb_array_elements(?::jsonb) as u where i.id = (u->>?)::uuid',
  'select f.id, f.state, f.snapshot from inflows f where f.state = ? and f.payout_id is not null and (select p.status from payouts p where p.id = f.payout_id) = ? limit ? for update of f skip locked',
  'select "p0".* from "payouts" as "p0" where "p0"."id" = ? limit ? for update',
  'select "o0".* from "outflows" as "o0" where "o0"."payout_id" = ? order by "o0"."attempt_number" desc limit ?',
  'select "o0".* from "outflows" as "o0" where "o0"."id" = ? limit ? for update',
  'select count(*) as "count" from "outflows" as "o0" where "o0"."id" = ?',
  'select "p0".* from "payouts" as "p0" where "p0"."id" = ? limit ?',
  'update "payouts" set "status" = ?, "snapshot" = ? where "id" = ?',
  'update "outflows" set "status" = ?, "snapshot" = ?, "processor_reference" = ?, "dispatched_at" = ? where "id" = ?',
  'update "outflows" set "status" = ?, "snapshot" = ?, "settled_at" = ? where "id" = ?',
  'update "outflows" set "status" = ?, "snapshot" = ?, "failure_reason" = ?, "failure_code" = ? where "id" = ?',
  'select "r0".* from "refunds" as "r0" where "r0"."payout_id" = ? limit ?',
  'select "i0".* from "inflows" as "i0" where "i0"."payout_id" = ? order by "i0"."created_at" asc, "i0"."id" asc limit ?',
  'update "payouts" set "is_refunded" = true, "refund_reference" = ? where "id" = ?',
  'select "r0".* from "refunds" as "r0" where "r0"."id" = ? limit ?',
  'select "r0".* from "refunds" as "r0" where "r0"."id" = ? limit ? for update',
  'update "refunds" set "status" = ?, "snapshot" = ? where "id" = ?',
  'update "refunds" set "processor_reference" = ?, "dispatched_at" = ? where "id" = ?',
  'update "refunds" set "status" = ?, "snapshot" = ?, "updated_at" = ? where "id" = ?',
  'update "refunds" set "settled_at" = ? where "id" = ?',
];

/** What the service is doing while a statement is sent: a merchant's call or a worker's pass. */
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

describe('every hot query names its tenant (docs/scaling.md, Citus)', () => {
  const startReceiver = receiversClosedAfterEach();

  it("names tenant_id in every statement of a merchant's flow and of the workers' passes, the documented fan-outs aside", async function () {
    this.timeout(120_000);
    const merchant = await merchantWith();
    const receiver = await startReceiver();
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
    });
    const merchantCalls = new Set<string>();
    const untenanted = new Set<string>();
    for (const { text, during } of sent) {
      if (distributedTablesOf(text).length === 0 || /\btenant_id\b/.test(text)) continue;
      const shape = shapeOf(text);
      untenanted.add(shape);
      if (during === 'merchant') merchantCalls.add(shape);
    }
    expect([...merchantCalls], "a merchant's call that names no tenant").to.deep.equal([]);
    expect(
      [...untenanted].filter((s) => !FAN_OUT.includes(s) && !ORM_WRITE_BY_ID.test(s)),
      'statements on distributed tables that name no tenant, and are no documented fan-out',
    ).to.deep.equal([]);
  });
});
