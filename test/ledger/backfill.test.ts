import { randomBytes } from 'node:crypto';
import { MikroORM } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import { run } from '#src/cli/admin.ts';
import { loadConfig } from '#src/config.ts';
import { startEmbeddedPostgres } from '#src/db/embedded.ts';
import { ormConfig } from '#src/db/orm.ts';
import { emSql } from '#src/db/sql.ts';
import { outflowLedger } from '#src/dispatch/money.ts';
import type { MachineAction } from '#src/engine/engine.ts';
import { type CheckRun, checkLedger } from '#src/ledger/checks.ts';
import { type LedgerTransaction, post } from '#src/ledger/ledger.ts';
import { newId } from '#src/lib/ids.ts';
import { createLogger } from '#src/lib/log.ts';
import { toDecimal } from '#src/lib/money.ts';
import { payoutLedger } from '#src/payouts/money.ts';
import { refundLedger } from '#src/refunds/money.ts';
import { secretsFrom } from '#src/secrets.ts';
import { type RunningService, startService } from '#src/service.ts';
import { inflowLedger } from '#src/settlement/money.ts';
import { issueApiKey } from '#src/tenants/service.ts';
import { BACKFILL } from '../../migrations/Migration20261128160000_ledger_backfill.ts';
import { harness } from '../harness.ts';
import { createScratchDatabase } from '../scratch-database.ts';
import { skipBecause } from '../skip.ts';

/**
 * The ledger's backfill (migrations/Migration20261128160000_ledger_backfill.ts) on a database
 * filled by the release before the ledger: the migrations of that release, then rows in every
 * state written in SQL for its schema, then the service of this release started on it (which
 * applies the remaining migrations, as an upgrade does). A database of its own, beside the run's.
 */

const LEDGER_MIGRATION = 'Migration20261128100000_ledger';
const BACKFILL_MIGRATION = 'Migration20261128160000_ledger_backfill';

/** The last migration named before `name`, of those not applied yet. */
async function migrationBefore(orm: MikroORM, name: string): Promise<string> {
  const pending = (await orm.migrator.getPending()).map((m) => m.name).filter((n) => n < name);
  const last = pending.at(-1);
  if (!last) throw new Error(`no pending migration before ${name}`);
  return last;
}

const T = newId();
const BASE = Date.parse('2026-11-27T09:00:00.000Z');
/** A moment `minutes` after the payouts of the filled database were made. */
const at = (minutes: number) => new Date(BASE + minutes * 60_000).toISOString();
const sqlText = (v: string | null) => (v === null ? 'null' : `'${v.replace(/'/g, "''")}'`);

/** Pricing of the USDT payouts: 101.50 asked, 1.00 + 0.50 in fees, 100.00 converted at 129.35. */
const USDT = {
  settlement: '101.50',
  platform: '1.00',
  network: '0.50',
  fees: '1.50',
  rate: '129.35',
  destination: '12935.00',
};
/** The NGN payouts: 80,000 asked with 500 of fees; 79,500 converted at 0.0807. */
const NGN = {
  settlement: '80000.00',
  platform: '500.00',
  network: '0',
  fees: '500.00',
  rate: '0.0807',
  destination: '6415.65',
};

interface PayoutRow {
  id: string;
  status: string;
  value: unknown;
  currency: 'USDT' | 'NGN';
  received: string;
}

const rows: string[] = [];

function payout(status: string, value: unknown, currency: 'USDT' | 'NGN', received: string): PayoutRow {
  const id = newId();
  const price = currency === 'USDT' ? USDT : NGN;
  const snapshot = JSON.stringify({
    status: typeof value === 'string' ? 'done' : 'active',
    value,
    context: {},
  });
  rows.push(`insert into payouts (id, tenant_id, status, snapshot, destination_type, destination_country,
      destination_currency, destination_amount, destination_account_unique, destination_provider_name,
      settlement_currency, settlement_network, settlement_amount, exchange_rate, mid_market_rate,
      platform_fee_amount, network_fee_amount, total_fee_amount, received_amount, is_refunded, created_at, updated_at)
    values ('${id}', '${T}', '${status}', ${sqlText(snapshot)}, 'MOBILE_MONEY', 'KE', 'KES', ${price.destination},
      '+254712345678', 'M-Pesa', '${currency}', ${currency === 'USDT' ? "'TRON'" : 'null'}, ${price.settlement},
      ${price.rate}, ${price.rate}, ${price.platform}, ${price.network}, ${price.fees}, ${received}, false,
      '${at(0)}', '${at(6)}')`);
  return { id, status, value, currency, received };
}

function inflow(args: {
  state: string;
  amount: string;
  currency?: 'USDT' | 'NGN';
  payout?: PayoutRow | null;
  matched?: boolean;
  overpayment?: string;
}): string {
  const id = newId();
  const currency = args.currency ?? 'USDT';
  const crypto = currency === 'USDT';
  rows.push(`insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref,
      to_account, confirmations_received, confirmations_required, state, is_matched, matched_at, payout_id,
      is_underpaid, overpayment_amount, created_at, updated_at, arrived_at, snapshot)
    values ('${id}', '${T}', '${crypto ? 'CRYPTO' : 'BANK_TRANSFER'}', 'sandbox', ${crypto ? "'TRON'" : 'null'},
      ${args.amount}, '${currency}', '${randomBytes(16).toString('hex')}',
      '${crypto ? 'TXbackfillDepositAddress0000000001' : '9000000001'}', 20, ${crypto ? 19 : 0}, '${args.state}',
      ${args.matched ? 'true' : 'false'}, ${args.matched ? `'${at(2)}'` : 'null'},
      ${args.payout ? `'${args.payout.id}'` : 'null'}, ${args.state === 'HELD' && args.payout ? 'true' : 'false'},
      ${args.overpayment ?? '0'}, '${at(1)}', '${at(2)}', '${at(1)}',
      ${sqlText(JSON.stringify({ status: 'active', value: args.state, context: {} }))})`);
  return id;
}

function outflow(p: PayoutRow, attempt: number, status: string): string {
  const id = newId();
  const sent = status === 'PROCESSING' || status === 'SUCCESSFUL';
  rows.push(`insert into outflows (id, tenant_id, payout_id, status, snapshot, processor, attempt_number,
      destination_amount, destination_currency, retryable, dispatched_at, settled_at, created_at, updated_at)
    values ('${id}', '${T}', '${p.id}', '${status}', ${sqlText(JSON.stringify({ status: 'active', value: status, context: {} }))},
      'sandbox', ${attempt}, ${p.currency === 'USDT' ? USDT.destination : NGN.destination}, 'KES', false,
      ${sent ? `'${at(3)}'` : 'null'}, ${status === 'SUCCESSFUL' ? `'${at(4)}'` : 'null'}, '${at(3)}', '${at(4)}')`);
  return id;
}

/** A refund keeping a 1.00 USDT fee of the 101.50 received. */
function refund(p: PayoutRow, status: string): string {
  const id = newId();
  const sent = status === 'PROCESSING' || status === 'SUCCESSFUL';
  rows.push(`insert into refunds (id, tenant_id, payout_id, status, snapshot, received_amount, received_currency,
      network_fee_amount, refund_amount, destination_id, destination_type, destination_provider_name,
      destination_masked, destination_network, destination_account, attempt_number, dispatched_at, settled_at,
      created_at, updated_at)
    values ('${id}', '${T}', '${p.id}', '${status}', ${sqlText(JSON.stringify({ status: 'active', value: status, context: {} }))},
      ${p.received}, '${p.currency}', 1.00, 100.50, '${newId()}', 'CRYPTO_ADDRESS', 'TRON', 'TX…0001', 'TRON',
      'TXbackfillRefundAddress00000000001', 1, ${sent ? `'${at(5)}'` : 'null'},
      ${status === 'SUCCESSFUL' ? `'${at(5.5)}'` : 'null'}, '${at(5)}', '${at(5.5)}')`);
  rows.push(`update payouts set is_refunded = true, refund_reference = '${id}' where id = '${p.id}'`);
  return id;
}

// Every state of the release before the ledger that holds or moved money, and those that hold none.
const awaiting = payout('PENDING_PAYMENT', { PENDING_PAYMENT: 'awaiting' }, 'USDT', '0');
const expired = payout('EXPIRED', 'EXPIRED', 'USDT', '0');
const funded = payout('PAYMENT_RECEIVED', 'PAYMENT_RECEIVED', 'USDT', USDT.settlement);
inflow({ state: 'MATCHED', amount: USDT.settlement, payout: funded, matched: true });
outflow(funded, 1, 'PENDING');
const inFlight = payout('PROCESSING', { PROCESSING: 'inFlight' }, 'USDT', USDT.settlement);
inflow({ state: 'MATCHED', amount: USDT.settlement, payout: inFlight, matched: true });
outflow(inFlight, 1, 'PROCESSING');
const paid = payout('SUCCESSFUL', 'SUCCESSFUL', 'USDT', USDT.settlement);
inflow({ state: 'MATCHED', amount: USDT.settlement, payout: paid, matched: true });
outflow(paid, 1, 'FAILED');
outflow(paid, 2, 'SUCCESSFUL');
const overpaid = payout('SUCCESSFUL', 'SUCCESSFUL', 'USDT', '120.00');
inflow({ state: 'MATCHED', amount: '120.00', payout: overpaid, matched: true, overpayment: '18.50' });
outflow(overpaid, 1, 'SUCCESSFUL');
const refunded = payout('FAILED', 'FAILED', 'USDT', USDT.settlement);
inflow({ state: 'MATCHED', amount: USDT.settlement, payout: refunded, matched: true });
outflow(refunded, 1, 'FAILED');
refund(refunded, 'SUCCESSFUL');
const awaitingRefund = payout('FAILED', 'FAILED', 'USDT', USDT.settlement);
inflow({ state: 'MATCHED', amount: USDT.settlement, payout: awaitingRefund, matched: true });
outflow(awaitingRefund, 1, 'FAILED');
refund(awaitingRefund, 'PENDING');
const refunding = payout('FAILED', 'FAILED', 'USDT', USDT.settlement);
inflow({ state: 'MATCHED', amount: USDT.settlement, payout: refunding, matched: true });
outflow(refunding, 1, 'FAILED');
refund(refunding, 'PROCESSING');
const refundFailed = payout('FAILED', 'FAILED', 'USDT', USDT.settlement);
inflow({ state: 'MATCHED', amount: USDT.settlement, payout: refundFailed, matched: true });
outflow(refundFailed, 1, 'FAILED');
refund(refundFailed, 'FAILED');
const held = payout('PENDING_PAYMENT', { PENDING_PAYMENT: 'held' }, 'NGN', '50000.00');
inflow({ state: 'HELD', amount: '50000.00', currency: 'NGN', payout: held });
const heldFailed = payout('FAILED', 'FAILED', 'NGN', '30000.00');
inflow({ state: 'FOR_REFUND', amount: '30000.00', currency: 'NGN', payout: heldFailed });
// Money no payout has: suspense is 25 + 3 + 10 (+ 12 below); returned and unconfirmed money is not in it.
inflow({ state: 'UNMATCHED', amount: '25.00' });
inflow({ state: 'HELD', amount: '3.00' });
inflow({ state: 'CONFIRMED', amount: '10.00' });
inflow({ state: 'RETURNED', amount: '7.00' });
inflow({ state: 'PENDING_CONFIRMATION', amount: '40.00' });

// A deployment that ran the ledger before this backfill: objects that moved on since, partly posted.
const partly = payout('SUCCESSFUL', 'SUCCESSFUL', 'USDT', USDT.settlement);
const partlyInflow = inflow({ state: 'MATCHED', amount: USDT.settlement, payout: partly, matched: true });
const partlyOutflow = outflow(partly, 1, 'SUCCESSFUL');
const lateInflow = inflow({ state: 'UNMATCHED', amount: '12.00' });

/** What the machines posted for those once the ledger ran: the outflow's PAID, the payout's SETTLED, the late money's RECEIVED. */
function postedLive(): LedgerTransaction[] {
  const step = (flow: string, from: string, to: string) => ({
    actions: [{ type: 'post', params: { flow } }] as MachineAction[],
    from,
    to,
  });
  const when = new Date(at(4));
  return [
    ...outflowLedger(
      {
        id: partlyOutflow,
        tenantId: T,
        payoutId: partly.id,
        processor: 'sandbox',
        settlementCurrency: 'USDT',
        converted: toDecimal('100.00'),
        destinationAmount: toDecimal(USDT.destination),
        destinationCurrency: 'KES',
      },
      step('PAID', 'PROCESSING', 'SUCCESSFUL'),
      'SUCCEEDED',
      when,
    ),
    ...payoutLedger(
      {
        id: partly.id,
        tenantId: T,
        settlementCurrency: 'USDT',
        settlementAmount: toDecimal(USDT.settlement),
        platformFee: toDecimal(USDT.platform),
        networkFee: toDecimal(USDT.network),
        received: toDecimal(USDT.settlement),
      },
      step('SETTLED', 'PROCESSING', 'SUCCESSFUL'),
      'PROCESSOR_SUCCEEDED',
      when,
    ),
    ...inflowLedger(
      {
        id: lateInflow,
        tenantId: T,
        rail: 'CRYPTO',
        network: 'TRON',
        toAccount: 'TXbackfillDepositAddress0000000001',
        amount: toDecimal('12.00'),
        currency: 'USDT',
        payoutId: null,
      },
      step('RECEIVED', 'PENDING_CONFIRMATION', 'CONFIRMED'),
      'CONFIRMATIONS',
      when,
    ),
  ];
}

/** The flows each object's state implies, as the machines post them (see the backfill's comment). */
const FLOWS_OF = {
  inflow: (state: string, payoutId: string | null) => [
    ...(state === 'PENDING_CONFIRMATION' ? [] : ['RECEIVED']),
    ...(['MATCHED', 'HELD', 'FOR_REFUND'].includes(state) && payoutId ? ['ATTRIBUTED'] : []),
    ...(state === 'RETURNED' ? ['RETURNED'] : []),
  ],
  outflow: (status: string) => ({ PROCESSING: ['SENT'], SUCCESSFUL: ['SENT', 'PAID'] })[status] ?? [],
  payout: (status: string) => (status === 'SUCCESSFUL' ? ['SETTLED'] : []),
  refund: (status: string) => ({ PROCESSING: ['SENT'], SUCCESSFUL: ['SENT', 'DELIVERED'] })[status] ?? [],
};

/** An object's state and the facts its flows take, as read back from its row. */
type Facts = Record<
  | 'object'
  | 'id'
  | 'state'
  | 'payout_id'
  | 'tenant_id'
  | 'rail'
  | 'network'
  | 'to_account'
  | 'amount'
  | 'currency'
  | 'processor'
  | 'settlement_currency'
  | 'converted'
  | 'destination_amount'
  | 'destination_currency'
  | 'settlement_amount'
  | 'platform_fee'
  | 'network_fee'
  | 'received'
  | 'fee'
  | 'refund'
  | 'rail_name',
  string | null
>;

describe('the ledger backfill, on a database filled by the release before the ledger', function () {
  this.timeout(180_000);

  const stops: (() => Promise<void>)[] = [];
  let service: RunningService;
  const adminToken = `adm_test_${randomBytes(16).toString('hex')}`;
  let apiKey: string;
  let found: CheckRun;

  before(async function () {
    let databaseUrl: string;
    if (harness().embedded) {
      const pg = await startEmbeddedPostgres({});
      stops.push(pg.stop);
      databaseUrl = pg.url;
    } else {
      const scratch = await createScratchDatabase(harness().databaseUrl);
      if ('refused' in scratch)
        skipBecause(this, `needs a role that may create databases: ${scratch.refused}`);
      stops.push(scratch.drop);
      databaseUrl = scratch.url;
    }
    const orm = await MikroORM.init(ormConfig({ url: databaseUrl, poolSize: 2 }));
    try {
      // The release before the ledger: its migrations, then its rows.
      await orm.migrator.up({ to: await migrationBefore(orm, LEDGER_MIGRATION) });
      const em = orm.em.fork();
      await em.execute(`insert into tenants (id, name, payouts_approved, created_at, updated_at)
                        values ('${T}', 'Backfilled merchant', true, '${at(0)}', '${at(0)}')`);
      for (const row of rows) await em.execute(row);
      // The ledger's release, run for a while before this backfill existed.
      await orm.migrator.up({ to: await migrationBefore(orm, BACKFILL_MIGRATION) });
      const sql = emSql(orm.em.fork());
      await sql.transaction((tx) => post(tx, postedLive()));
      // What that ledger's checks found: the money it never saw.
      found = await checkLedger(sql, {
        since: null,
        now: new Date(),
        log: createLogger({ level: 'silent' }),
      });
    } finally {
      await orm.close();
    }
    // This release starts on it and applies the rest, the backfill among them.
    service = await startService({
      config: loadConfig({ PORT: '0', DATABASE_URL: databaseUrl, JOBS: 'none', LOG_LEVEL: 'silent' }),
      databaseUrl,
      providersUrl: harness().sandboxUrl,
      secrets: secretsFrom({
        encryptionKey: randomBytes(32),
        adminToken,
        callbackSecret: randomBytes(32).toString('base64url'),
      }),
      log: createLogger({ level: 'silent' }),
    });
    stops.push(service.close);
    apiKey = (await issueApiKey(service.deps.orm.em.fork(), { tenantId: T })).plaintext;
  });

  after(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  const query = <R>(text: string) => service.deps.orm.em.fork().execute<R[]>(text);

  async function movementsOf(p: PayoutRow): Promise<string[]> {
    const res = await fetch(`${service.url}/v1/payouts/${p.id}/money-movements`, {
      headers: { 'x-api-key': apiKey },
    });
    expect(res.status).to.equal(200);
    const body = (await res.json()) as {
      type: string;
      currency: string;
      amount: string;
      source: { object: string };
    }[];
    return body.map((m) => `${m.type} ${m.currency} ${m.amount} ${m.source.object}`);
  }

  it('before it, the checks find every payout and suspense the ledger lacks, each payout once', () => {
    const payouts = found.violations.filter((v) => v.check === 'PAYOUT_MONEY');
    const off = (p: PayoutRow) => payouts.filter((v) => v.subject === p.id);
    // In flight: off in the settlement and the destination currency, one violation naming both.
    expect(off(inFlight)).to.have.length(1);
    const currencies = (off(inFlight)[0]!.detail as { currencies: { currency: string }[] }).currencies;
    expect(currencies.map((c) => c.currency).sort()).to.deep.equal(['KES', 'USDT']);
    for (const p of [funded, refunding, awaitingRefund, refundFailed, held, heldFailed, partly]) {
      expect(off(p), p.status).to.have.length(1);
    }
    expect(off(awaiting)).to.deep.equal([]);
    expect(found.violations.filter((v) => v.check === 'SUSPENSE').map((v) => v.subject)).to.deep.equal([
      `${T}:USDT`,
    ]);
  });

  it('leaves nothing out of balance: `ledger check --all` finds no violation', async () => {
    const check = (await run(['ledger', 'check', '--all'], {
      serviceUrl: service.url,
      token: adminToken,
    })) as {
      checks: { name: string }[];
      violations: unknown[];
      resolved: number;
    };
    expect(check.checks.map((c) => c.name)).to.include.members([
      'PAYOUT_MONEY',
      'SUSPENSE',
      'COLLECTION_MATCHES_RAIL',
    ]);
    expect(check.violations).to.deep.equal([]);
    expect(check.resolved).to.equal(found.violations.length);
  });

  it("shows each payout's money movements as its state implies, to the unit", async () => {
    const received = (currency: string, amount: string) => `money_received ${currency} ${amount} inflow`;
    const paidOut = [
      received('USDT', '101.5'),
      'conversion USDT -100 outflow',
      'conversion KES 12935 outflow',
      'paid_out KES -12935 outflow',
      'platform_fee USDT -1 payout',
      'network_fee USDT -0.5 payout',
    ];
    expect(await movementsOf(awaiting)).to.deep.equal([]);
    expect(await movementsOf(expired)).to.deep.equal([]);
    expect(await movementsOf(funded)).to.deep.equal([received('USDT', '101.5')]);
    expect(await movementsOf(inFlight)).to.deep.equal(paidOut.slice(0, 3));
    expect(await movementsOf(paid)).to.deep.equal(paidOut);
    expect(await movementsOf(overpaid)).to.deep.equal([
      received('USDT', '120'),
      ...paidOut.slice(1),
      'overpayment_set_aside USDT -18.5 payout',
    ]);
    expect(await movementsOf(refunded)).to.deep.equal([
      received('USDT', '101.5'),
      'refund_fee USDT -1 refund',
      'refunded USDT -100.5 refund',
    ]);
    expect(await movementsOf(awaitingRefund)).to.deep.equal([received('USDT', '101.5')]);
    expect(await movementsOf(refunding)).to.deep.equal([
      received('USDT', '101.5'),
      'refund_fee USDT -1 refund',
    ]);
    expect(await movementsOf(refundFailed)).to.deep.equal([received('USDT', '101.5')]);
    expect(await movementsOf(held)).to.deep.equal([received('NGN', '50000')]);
    expect(await movementsOf(heldFailed)).to.deep.equal([received('NGN', '30000')]);
    // Partly posted before: completed, not posted twice (the order of the same moment may differ).
    expect((await movementsOf(partly)).sort()).to.deep.equal([...paidOut].sort());
  });

  it('holds, in transit and in suspense, what the states say', async () => {
    const ledger = async (p: PayoutRow) =>
      (await run(['ledger', 'payout', p.id], { serviceUrl: service.url, token: adminToken })) as {
        holds: { currency: string; amount: string }[];
        in_transit: { currency: string; amount: string }[];
      };
    const nonZero = (lines: { currency: string; amount: string }[]) =>
      lines.filter((l) => !toDecimal(l.amount).isZero()).map((l) => `${l.currency} ${l.amount}`);
    expect(nonZero((await ledger(inFlight)).holds).sort()).to.deep.equal(['KES 12935', 'USDT 1.5']);
    expect(nonZero((await ledger(inFlight)).in_transit)).to.deep.equal(['KES 12935']);
    expect(nonZero((await ledger(refunding)).in_transit)).to.deep.equal(['USDT 100.5']);
    expect(nonZero((await ledger(held)).holds)).to.deep.equal(['NGN 50000']);
    for (const p of [paid, overpaid, refunded, partly, awaiting, expired]) {
      expect(nonZero((await ledger(p)).holds), p.status).to.deep.equal([]);
    }
    const balances = (await run(['ledger', 'balances'], { serviceUrl: service.url, token: adminToken })) as {
      data: { account: string; currency: string; balance: string }[];
    };
    const line = (account: string, currency: string) => {
      const found = balances.data.find((l) => l.account === account && l.currency === currency);
      return found && toDecimal(found.balance).toFixed();
    };
    expect(line(`tenants:${T}:suspense`, 'USDT')).to.equal('50');
    expect(line(`tenants:${T}:to_return:overpayments`, 'USDT')).to.equal('18.5');
    expect(line(`world:merchants:${T}`, 'USDT')).to.equal('107.5');
    expect(line('fees:refund', 'USDT')).to.equal('2');
    // What came in on the rails: every counted inflow, the unconfirmed one aside.
    expect(line('collection:crypto:TRON:TXbackfillDepositAddress0000000001', 'USDT')).to.equal('-989');
    expect(line('collection:bank', 'NGN')).to.equal('-80000');
  });

  it('balances in every currency, folded into the balances, every entry named as backfilled or live', async () => {
    expect(
      await query(
        `select currency, sum(amount)::text as sum from ledger_entries group by currency having sum(amount) <> 0`,
      ),
    ).to.deep.equal([]);
    expect(
      await query(
        `select transaction_id from ledger_entries group by transaction_id, currency having sum(amount) <> 0`,
      ),
    ).to.deep.equal([]);
    expect(await query('select id from ledger_balance_deltas')).to.deep.equal([]);
    // The folded balances are what the entries sum to, each payout's and virtual account's in its parent.
    expect(
      await query(`
        select coalesce(b.account, e.account) as account, coalesce(b.currency, e.currency) as currency
          from ledger_balances b
          full join (select regexp_replace(account, '^(tenants:[^:]+:payouts|collection:bank):[^:]+$', '\\1')
                              as account, currency, sum(amount) as balance, count(*) as entries
                       from ledger_entries group by 1, 2) e on e.account = b.account and e.currency = b.currency
         where b.balance is distinct from e.balance or b.entries is distinct from e.entries`),
    ).to.deep.equal([]);
    const transitions = await query<{ transition: string; n: number }>(
      `select transition, count(*)::int as n from ledger_entries group by transition order by transition`,
    );
    for (const t of transitions) {
      expect(t.transition).to.match(/^(BACKFILLED \(→ [A-Z_]+\)|[A-Z_]+ \([A-Z_]+ → [A-Z_]+\))$/);
    }
  });

  it('leaves the balance and delta triggers on and every index of the entries in place', async () => {
    expect(
      await query(`select tgname, tgenabled from pg_trigger
                    where tgrelid = 'ledger_entries'::regclass and not tgisinternal order by tgname`),
    ).to.deep.equal(
      [
        'ledger_entries_balanced',
        'ledger_entries_balances',
        'ledger_entries_immutable',
        'ledger_entries_no_truncate',
      ].map((tgname) => ({ tgname, tgenabled: 'O' })),
    );
    expect(
      (
        await query<{ name: string }>(
          `select indexrelid::regclass::text as name from pg_index where indrelid = 'ledger_entries'::regclass order by 1`,
        )
      ).map((i) => i.name),
    ).to.deep.equal([
      'ledger_entries_account_idx',
      'ledger_entries_cause_idx',
      'ledger_entries_movements_idx',
      'ledger_entries_payout_idx',
      'ledger_entries_pkey',
      'ledger_entries_transaction_idx',
    ]);
  });

  it('writes for each object exactly what its machine would have posted for its state, once', async () => {
    const facts = await query<Facts>(`
      select 'inflow' as object, f.id, f.state, f.payout_id, f.tenant_id, f.rail, f.network, f.to_account,
             f.amount::text, f.currency, null as processor, null as settlement_currency, null as converted,
             null as destination_amount, null as destination_currency, null as settlement_amount,
             null as platform_fee, null as network_fee, null as received, null as fee, null as refund, null as rail_name
        from inflows f
      union all
      select 'outflow', o.id, o.status, o.payout_id, o.tenant_id, null, null, null, null, null, o.processor,
             p.settlement_currency, (p.settlement_amount - p.total_fee_amount)::text, o.destination_amount::text,
             o.destination_currency, null, null, null, null, null, null, null
        from outflows o join payouts p on p.id = o.payout_id
      union all
      select 'payout', p.id, p.status, p.id, p.tenant_id, null, null, null, null, null, null, p.settlement_currency,
             null, null, null, p.settlement_amount::text, p.platform_fee_amount::text, p.network_fee_amount::text,
             p.received_amount::text, null, null, null
        from payouts p
      union all
      select 'refund', r.id, r.status, r.payout_id, r.tenant_id, null, null, null, null, r.received_currency,
             null, null, null, null, null, null, null, null, null, r.network_fee_amount::text, r.refund_amount::text,
             case when r.destination_type = 'CRYPTO_ADDRESS' then coalesce(r.destination_network, 'CHAIN') else 'BANK' end
        from refunds r`);
    const steps = (flows: string[]) => ({
      actions: flows.map((flow) => ({ type: 'post', params: { flow } })) as MachineAction[],
      from: '(before)',
      to: '(now)',
    });
    const now = new Date();
    const expected = new Map<string, string>();
    const add = (txs: LedgerTransaction[]) => {
      for (const tx of txs) {
        for (const e of tx.entries) {
          const key = `${tx.cause.id} ${e.account} ${e.currency} ${e.movement ?? '-'} ${tx.payoutId ?? '-'}`;
          expected.set(
            key,
            toDecimal(expected.get(key) ?? 0)
              .plus(e.amount)
              .toFixed(),
          );
        }
      }
    };
    for (const f of facts) {
      const d = (v: string | null) => toDecimal(v!);
      if (f.object === 'inflow') {
        const inflow = {
          id: f.id!,
          tenantId: f.tenant_id!,
          rail: f.rail as 'CRYPTO' | 'BANK_TRANSFER',
          network: f.network,
          toAccount: f.to_account!,
          amount: d(f.amount),
          currency: f.currency!,
          payoutId: f.payout_id,
        };
        add(
          inflowLedger(
            inflow,
            // The money counted before it was attributed: RECEIVED names no payout.
            steps(FLOWS_OF.inflow(f.state!, f.payout_id).filter((x) => x === 'RECEIVED')),
            'E',
            now,
          ).map((tx) => ({ ...tx, payoutId: null })),
        );
        add(
          inflowLedger(
            inflow,
            steps(FLOWS_OF.inflow(f.state!, f.payout_id).filter((x) => x !== 'RECEIVED')),
            'E',
            now,
          ),
        );
      } else if (f.object === 'outflow') {
        add(
          outflowLedger(
            {
              id: f.id!,
              tenantId: f.tenant_id!,
              payoutId: f.payout_id!,
              processor: f.processor!,
              settlementCurrency: f.settlement_currency!,
              converted: d(f.converted),
              destinationAmount: d(f.destination_amount),
              destinationCurrency: f.destination_currency!,
            },
            steps(FLOWS_OF.outflow(f.state!)),
            'E',
            now,
          ),
        );
      } else if (f.object === 'payout') {
        add(
          payoutLedger(
            {
              id: f.id!,
              tenantId: f.tenant_id!,
              settlementCurrency: f.settlement_currency!,
              settlementAmount: d(f.settlement_amount),
              platformFee: d(f.platform_fee),
              networkFee: d(f.network_fee),
              received: d(f.received),
            },
            steps(FLOWS_OF.payout(f.state!)),
            'E',
            now,
          ),
        );
      } else {
        add(
          refundLedger(
            {
              id: f.id!,
              tenantId: f.tenant_id!,
              payoutId: f.payout_id!,
              currency: f.currency!,
              rail: f.rail_name!,
              fee: d(f.fee),
              refund: d(f.refund),
            },
            steps(FLOWS_OF.refund(f.state!)),
            'E',
            now,
          ),
        );
      }
    }
    const actual = await query<{ key: string; amount: string }>(`
      select cause_id || ' ' || account || ' ' || currency || ' ' || coalesce(movement, '-') || ' '
             || coalesce(payout_id::text, '-') as key, sum(amount)::text as amount
        from ledger_entries group by 1 having sum(amount) <> 0`);
    const normalized = new Map(actual.map((r) => [r.key, toDecimal(r.amount).toFixed()]));
    const nonZero = new Map([...expected].filter(([, v]) => !toDecimal(v).isZero()));
    expect(Object.fromEntries(normalized)).to.deep.equal(Object.fromEntries(nonZero));
    // Each live flow's transaction once, and the partly posted outflow completed by one transaction.
    const partlyTransactions = await query<{ transition: string }>(
      `select distinct transaction_id, transition from ledger_entries where cause_id = '${partlyOutflow}' order by transition`,
    );
    expect(partlyTransactions.map((t) => t.transition)).to.deep.equal([
      'BACKFILLED (→ SUCCESSFUL)',
      'SUCCEEDED (PROCESSING → SUCCESSFUL)',
    ]);
    // Run again (on the entries as later migrations left them), it finds everything posted and
    // writes nothing, and leaves every trigger and index as they were.
    const schema = () =>
      query(`select c.relname, t.tgname, t.tgenabled::text, i.indisvalid
               from pg_class c left join pg_trigger t on t.tgrelid = c.oid and not t.tgisinternal
               left join pg_index i on i.indexrelid = c.oid
              where c.relname like 'ledger_entries%' order by 1, 2`);
    const schemaBefore = await schema();
    const before = await query<{ n: number }>('select count(*)::int as n from ledger_entries');
    await service.deps.orm.em.fork().execute(BACKFILL);
    expect(await query('select count(*)::int as n from ledger_entries')).to.deep.equal(before);
    expect(await schema()).to.deep.equal(schemaBefore);
    expect(
      await query(
        `select 1 from ledger_entries where cause_id = '${lateInflow}' and transition like 'BACKFILLED%'`,
      ),
    ).to.deep.equal([]);
    expect(
      await query(
        `select 1 from ledger_entries where cause_id = '${partlyInflow}' and transition not like 'BACKFILLED%'`,
      ),
    ).to.deep.equal([]);
  });
});

describe('the ledger backfill, on entries it cannot complete in balance', function () {
  this.timeout(120_000);

  const stops: (() => Promise<void>)[] = [];
  let orm: MikroORM;
  const tenant = newId();
  const inflowId = newId();

  before(async function () {
    let databaseUrl: string;
    if (harness().embedded) {
      const pg = await startEmbeddedPostgres({});
      stops.push(pg.stop);
      databaseUrl = pg.url;
    } else {
      const scratch = await createScratchDatabase(harness().databaseUrl);
      if ('refused' in scratch)
        skipBecause(this, `needs a role that may create databases: ${scratch.refused}`);
      stops.push(scratch.drop);
      databaseUrl = scratch.url;
    }
    orm = await MikroORM.init(ormConfig({ url: databaseUrl, poolSize: 2 }));
    stops.push(() => orm.close());
    await orm.migrator.up({ to: await migrationBefore(orm, BACKFILL_MIGRATION) });
    const em = orm.em.fork();
    await em.execute(`insert into tenants (id, name, payouts_approved, created_at, updated_at)
                      values ('${tenant}', 'Unbalanced merchant', true, now(), now())`);
    // 12 USDT nobody has: its backfill is RECEIVED, the deposit address to suspense.
    await em.execute(`insert into inflows (id, tenant_id, rail, provider_name, network, amount, currency, external_ref,
        to_account, confirmations_received, confirmations_required, state, is_matched, is_underpaid,
        overpayment_amount, created_at, updated_at, arrived_at, snapshot)
      values ('${inflowId}', '${tenant}', 'CRYPTO', 'sandbox', 'TRON', 12.00, 'USDT', '${randomBytes(16).toString('hex')}',
        'TXbackfillDepositAddress0000000001', 20, 19, 'UNMATCHED', false, false, 0, now(), now(), now(),
        '{"status":"active","value":"UNMATCHED","context":{}}')`);
  });

  after(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  it('fails the migration, writes nothing and leaves every trigger and index as it was', async () => {
    // A balanced ledger transaction whose two entries name different causes: 5 of it in suspense
    // for the inflow, the other side on an object that does not exist. What the inflow then still
    // misses (12 in, 7 more in suspense) cannot balance. Written as SQL: post() names one cause.
    const txId = newId();
    await orm.em.fork().execute(`
      insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, cause_object, cause_id,
          transition, created_at)
      values ('${newId()}', '${txId}', 'tenants:${tenant}:suspense', 'USDT', 5, '${tenant}', 'inflow', '${inflowId}',
              'TEST (A → B)', now()),
             ('${newId()}', '${txId}', 'world:merchants:${tenant}', 'USDT', -5, '${tenant}', 'payout', '${newId()}',
              'TEST (A → B)', now())`);
    const state = () =>
      orm.em.fork().execute(`
        select (select count(*)::int from ledger_entries) as entries,
               (select string_agg(tgname || ' ' || tgenabled::text, ', ' order by tgname) from pg_trigger
                 where tgrelid = 'ledger_entries'::regclass and not tgisinternal) as triggers,
               (select count(*)::int from pg_index where indrelid = 'ledger_entries'::regclass) as indexes`);
    const before = await state();
    expect(before).to.deep.equal([
      {
        entries: 2,
        triggers:
          'ledger_entries_balanced O, ledger_entries_balances O, ledger_entries_immutable O, ledger_entries_no_truncate O',
        indexes: 6,
      },
    ]);
    let refused: unknown = null;
    try {
      await orm.migrator.up({ to: BACKFILL_MIGRATION });
    } catch (err) {
      refused = err;
    }
    expect(String(refused)).to.match(
      /ledger backfill: 1 ledger transactions do not balance in every currency/,
    );
    expect(await state()).to.deep.equal(before);
    expect((await orm.migrator.getPending()).map((m) => m.name)).to.include(BACKFILL_MIGRATION);
  });
});
