import { randomBytes, randomInt } from 'node:crypto';
import { expect } from 'chai';
import type { Network } from '#src/corridors/corridors.ts';
import { Outflow } from '#src/dispatch/entities.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { accountBalances, payoutEntries } from '#src/ledger/read.ts';
import { dayOf } from '#src/lib/days.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import { Refund } from '#src/refunds/entities.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { call, createMerchant, type Merchant } from '../client.ts';
import { callbacksDelivered, deps, dispatch, eventually, mine } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { type PerCurrency, perCurrency } from '../ledger/fixtures.ts';
import { admin, confirmationsOf, handledCredit, payBank, sendUsdt, settle } from '../settlement/fixtures.ts';
import { allBreaks } from './fixtures.ts';

const negated = (sums: PerCurrency): PerCurrency =>
  Object.fromEntries(Object.entries(sums).map(([c, v]) => [c, toDecimal(v).negated().toFixed()]));

/** A payout to a GTBank account of this test's own (`03` + four digits + the processor's magic ending). */
function payoutBody(suffix: string, settlement: 'USDT' | 'NGN'): Record<string, unknown> {
  return {
    destination_type: 'BANK_ACCOUNT',
    destination_country: 'NG',
    destination_currency: 'NGN',
    destination_amount: 120_000 + randomInt(0, 1000),
    destination_account_unique: `03${randomInt(1000, 10_000)}${suffix}`,
    destination_provider_name: 'Guaranty Trust Bank',
    destination_provider_code: '058',
    destination_account_name: 'ADAEZE OKONKWO',
    settlement_currency: settlement,
  };
}

/** Every transfer the chain lists as received at `address` (the provider API the service scans). */
async function chainTransfersTo(
  network: Network,
  address: string,
): Promise<{ amount: string; tx_hash: string }[]> {
  const found: { amount: string; tx_hash: string; to_address: string }[] = [];
  let cursor = '';
  for (let page = 0; page < 1000; page++) {
    const res = await fetch(`${harness().sandboxUrl}/chains/${network}/transfers?limit=500&cursor=${cursor}`);
    const body = (await res.json()) as {
      transfers: { amount: string; tx_hash: string; to_address: string }[];
      next_cursor: string | null;
    };
    expect(res.status, JSON.stringify(body)).to.equal(200);
    found.push(...body.transfers);
    if (body.transfers.length < 500 || !body.next_cursor) break;
    cursor = body.next_cursor;
  }
  return found.filter((t) => t.to_address === address);
}

/**
 * What the rails received and sent (issue 28, §3): after a mixed run of one merchant (paid exactly
 * on either rail, overpaid, underpaid and still held, failed and refunded on a chain and at the
 * bank), the sandbox's own records (bank statement, chain transfers and sends, processor payouts),
 * the service's records (inflows, outflows, refunds) and the ledger (collection accounts,
 * transit:processor, world:beneficiaries, world:merchants) say the same, per currency, to the unit;
 * and the day's reconciliation finds no break in any of it.
 */
describe('what the rails received and sent equals the service’s records and its ledger', function () {
  // Six payouts through the sandbox, one after the other.
  this.timeout(120_000);
  let merchant: Merchant;
  const refundAddress = `0x${randomBytes(20).toString('hex')}`;
  const refundAccount = `07${randomInt(1000, 10_000)}4321`;
  const payouts: Record<string, string> = {};
  /** The rail's reference of every payment the merchant made (tx hash, bank session id). */
  const payments: string[] = [];

  /** Pays the payout's instruction through the sandbox and waits until the service has recorded it. */
  async function pay(payoutId: string, amount: (expected: Decimal) => Decimal): Promise<void> {
    const instruction = await deps().orm.em.fork().findOneOrFail(PaymentInstruction, { payout: payoutId });
    const sent = amount(toDecimal(instruction.expectedAmount)).toFixed();
    if (instruction.rail === 'CRYPTO') {
      const network = instruction.chain as Network;
      payments.push(await sendUsdt(network, instruction.accountUnique, sent));
      await mine(network, confirmationsOf(network));
      await settle();
    } else {
      const credit = await payBank(instruction.accountUnique, sent);
      payments.push(credit.session_id);
      await handledCredit(credit.session_id);
    }
  }

  async function create(name: string, suffix: string, settlement: 'USDT' | 'NGN'): Promise<string> {
    const res = await call('POST', '/v1/payouts', {
      key: merchant.key,
      body: payoutBody(suffix, settlement),
    });
    expect(res.status, res.text).to.equal(201);
    payouts[name] = res.body.id;
    return res.body.id;
  }

  before(async () => {
    merchant = await createMerchant();
    for (const body of [
      { currency: 'USDT', type: 'CRYPTO_ADDRESS', network: 'BSC', address: refundAddress },
      { currency: 'NGN', type: 'BANK_ACCOUNT', bank_code: '058', account_number: refundAccount },
    ]) {
      const res = await call('PUT', '/v1/refund-destinations', { key: merchant.key, body });
      expect(res.status, res.text).to.equal(200);
    }

    // One payout at a time, each paid before the next asks for money: the chain's payouts share
    // the merchant's deposit address, where an overpayment could look like another's amount.
    const mix: [string, string, 'USDT' | 'NGN', (expected: Decimal) => Decimal][] = [
      ['exact NGN', '5678', 'NGN', (e) => e],
      ['exact USDT', '5678', 'USDT', (e) => e],
      ['overpaid USDT', '5679', 'USDT', (e) => e.plus('2.5')],
      ['underpaid NGN', '5680', 'NGN', (e) => e.minus('1000')],
      ['failed USDT', '1001', 'USDT', (e) => e],
      ['failed NGN', '1001', 'NGN', (e) => e.plus('500')],
    ];
    for (const [name, suffix, settlement, amount] of mix) {
      const id = await create(name, suffix, settlement);
      await runInstructionsOnce(deps());
      await pay(id, amount);
    }

    for (const [name, id] of Object.entries(payouts)) {
      if (name.startsWith('underpaid')) continue;
      // The payee check may still be running on a loaded machine: dispatch once the payout is due.
      const last = await eventually(`an attempt of ${name}`, async () =>
        (await dispatch(merchant, id)).at(-1),
      );
      if (last.status !== 'FAILED') await callbacksDelivered(last.id);
    }
    await eventually('the payouts to end', async () => {
      const ended = await deps()
        .orm.em.fork()
        .count(Payout, { tenant: merchant.tenantId, status: { $in: ['SUCCESSFUL', 'FAILED'] } });
      return ended === 5;
    });
    // The refunds: sent, then (a chain send) mined and checked once its status is due.
    await runRefundsOnce(deps());
    await mine('BSC', 1);
    harness().clock.advance(10_000);
    await runRefundsOnce(deps());
    const refunds = await deps().orm.em.fork().find(Refund, { tenant: merchant.tenantId });
    expect(refunds.map((r) => r.status)).to.deep.equal(['SUCCESSFUL', 'SUCCESSFUL']);
  });

  it('ended as the mix asks', async () => {
    const em = deps().orm.em.fork();
    const status = async (name: string) => (await em.findOneOrFail(Payout, payouts[name]!)).status;
    expect(await status('exact NGN')).to.equal('SUCCESSFUL');
    expect(await status('exact USDT')).to.equal('SUCCESSFUL');
    expect(await status('overpaid USDT')).to.equal('SUCCESSFUL');
    expect(await status('underpaid NGN')).to.equal('PENDING_PAYMENT');
    expect(await status('failed USDT')).to.equal('FAILED');
    expect(await status('failed NGN')).to.equal('FAILED');
  });

  it('money in: the bank’s statement and the chain = the inflows = what the collection accounts took in', async () => {
    const sandbox = harness().sandbox;
    const instructions = await deps().orm.em.fork().find(PaymentInstruction, { tenant: merchant.tenantId });
    const bankAccounts = instructions.filter((i) => i.rail === 'BANK_TRANSFER').map((i) => i.accountUnique);
    const addresses = [
      ...new Set(instructions.filter((i) => i.rail === 'CRYPTO').map((i) => `${i.chain} ${i.accountUnique}`)),
    ].map((a) => a.split(' ') as [Network, string]);
    expect(bankAccounts).to.have.length(3);
    expect(addresses).to.have.length(1);

    // The rails: the bank's statement lines (nothing reversed here), the chain's transfers.
    const statement = bankAccounts.flatMap((account) => sandbox.bank.credits(account));
    expect(statement.every((c) => c.reversal === null)).to.equal(true);
    const transfers = (
      await Promise.all(addresses.map(([network, address]) => chainTransfersTo(network, address)))
    ).flat();
    const rail = perCurrency([
      ...statement.map((c) => ({ currency: 'NGN', amount: c.statementAmount })),
      ...transfers.map((t) => ({ currency: 'USDT', amount: t.amount })),
    ]);
    expect(
      [...statement.map((c) => c.sessionId), ...transfers.map((t) => t.tx_hash)].sort(),
      'the rails list each payment once',
    ).to.deep.equal([...payments].sort());

    // The service's inflows.
    const inflows = await deps().orm.em.fork().find(Inflow, { tenant: merchant.tenantId });
    expect(inflows.map((i) => i.externalRef).sort()).to.deep.equal([...payments].sort());
    const recorded = perCurrency(inflows.map((i) => ({ currency: i.currency, amount: i.amount })));

    // The ledger: what each collection account took in (its balance is minus that).
    const collection = [
      ...bankAccounts.map((a) => `collection:bank:${a}`),
      ...addresses.map(([network, address]) => `collection:crypto:${network}:${address}`),
    ];
    const balances = (await Promise.all(collection.map((a) => accountBalances(deps().sql, a)))).flat();
    const booked = negated(perCurrency(balances.map((b) => ({ currency: b.currency, amount: b.balance }))));

    expect(rail).to.have.keys(['NGN', 'USDT']);
    expect(recorded, 'inflows = the rails').to.deep.equal(rail);
    expect(booked, 'collection accounts = the rails').to.deep.equal(rail);
  });

  it('money paid out: the processor’s payouts = the successful outflows = transit:processor → world:beneficiaries', async () => {
    const outflows = await deps().orm.em.fork().find(Outflow, { tenant: merchant.tenantId });
    const records = await deps().orm.em.fork().find(Payout, { tenant: merchant.tenantId });
    const accounts = new Set(records.map((p) => p.destinationAccountUnique));
    // The processor's own records of this merchant's beneficiaries: paid, failed, nothing else.
    const processor = harness()
      .sandbox.processor.payouts()
      .filter((p) => accounts.has(p.accountUnique));
    const paid = processor.filter((p) => p.status === 'SUCCESSFUL');
    expect(paid.map((p) => p.reference).sort()).to.deep.equal(
      outflows
        .filter((o) => o.status === 'SUCCESSFUL')
        .map((o) => o.id)
        .sort(),
    );
    const rail = perCurrency(paid.map((p) => ({ currency: p.currency, amount: p.amount })));
    const recorded = perCurrency(
      outflows
        .filter((o) => o.status === 'SUCCESSFUL')
        .map((o) => ({ currency: o.destinationCurrency, amount: o.destinationAmount })),
    );
    expect(processor.filter((p) => p.status === 'FAILED')).to.have.length(2);

    const entries = (await Promise.all(records.map((p) => payoutEntries(deps().sql, p.id)))).flat();
    const on = (prefix: string) =>
      perCurrency(
        entries
          .filter((e) => e.account.startsWith(prefix))
          .map((e) => ({ currency: e.currency, amount: e.amount })),
      );
    expect(Object.keys(rail)).to.deep.equal(['NGN']);
    expect(recorded, 'successful outflows = the processor').to.deep.equal(rail);
    expect(on('world:beneficiaries'), 'world:beneficiaries = the processor').to.deep.equal(rail);
    expect(on('transit:processor:'), 'nothing left at the processor').to.deep.equal({});
  });

  it('money sent back: the chain’s and the bank’s refund sends = the refunds = world:merchants', async () => {
    const sandbox = harness().sandbox;
    const sends = sandbox.chains.sends('BSC').filter((s) => s.toAddress === refundAddress && s.tx !== null);
    const transfers = sandbox.bank
      .transfers()
      .filter((t) => t.accountNumber === refundAccount && t.status === 'SUCCESSFUL');
    const rail = perCurrency([
      ...sends.map((s) => ({ currency: 'USDT', amount: s.amount })),
      ...transfers.map((t) => ({ currency: 'NGN', amount: t.amount })),
    ]);
    const refunds = await deps().orm.em.fork().find(Refund, { tenant: merchant.tenantId });
    expect([...sends, ...transfers].map((s) => s.reference).sort()).to.deep.equal(
      refunds.map((r) => `${r.id}:${r.attemptNumber}`).sort(),
    );
    const recorded = perCurrency(
      refunds.map((r) => ({ currency: r.receivedCurrency, amount: r.refundAmount })),
    );
    const returned = await accountBalances(deps().sql, `world:merchants:${merchant.tenantId}`);
    const booked = perCurrency(returned.map((b) => ({ currency: b.currency, amount: b.balance })));

    expect(rail).to.have.keys(['NGN', 'USDT']);
    expect(recorded, 'refunds = the rails').to.deep.equal(rail);
    expect(booked, 'world:merchants = the rails').to.deep.equal(rail);
  });

  it('what stayed: the underpaid payout holds what it received, the overpayment is set aside, nothing in suspense', async () => {
    const tenant = merchant.tenantId;
    const held = perCurrency(
      (await accountBalances(deps().sql, `tenants:${tenant}:payouts:${payouts['underpaid NGN']}`)).map(
        (b) => ({
          currency: b.currency,
          amount: b.balance,
        }),
      ),
    );
    const inflows = await deps().orm.em.fork().find(Inflow, { payout: payouts['underpaid NGN'] });
    expect(held).to.deep.equal(perCurrency(inflows.map((i) => ({ currency: i.currency, amount: i.amount }))));
    const overpaid = await accountBalances(deps().sql, `tenants:${tenant}:to_return:overpayments`);
    expect(perCurrency(overpaid.map((b) => ({ currency: b.currency, amount: b.balance })))).to.deep.equal({
      USDT: '2.5',
    });
    const suspense = await accountBalances(deps().sql, `tenants:${tenant}:suspense`);
    expect(perCurrency(suspense.map((b) => ({ currency: b.currency, amount: b.balance })))).to.deep.equal({});
  });

  it('the day’s reconciliation of every rail finds no break in any of it', async () => {
    const day = dayOf(harness().clock.now());
    const run = await admin('recon', 'run', '--date', day);
    expect(run.runs.map((r: { rail: string }) => r.rail).sort()).to.deep.equal([
      'BANK_TRANSFER',
      'CRYPTO',
      'PROCESSOR',
    ]);
    expect(run.runs.every((r: { state: string }) => r.state === 'DONE')).to.equal(true);

    const em = deps().orm.em.fork();
    const outflows = await em.find(Outflow, { tenant: merchant.tenantId });
    const refunds = await em.find(Refund, { tenant: merchant.tenantId });
    const ours = new Set<string>([
      ...Object.values(payouts),
      ...payments,
      ...outflows.map((o) => o.id),
      ...refunds.flatMap((r) => [r.id, `${r.id}:${r.attemptNumber}`]),
    ]);
    const breaks = await allBreaks();
    const mine = breaks.filter((b) =>
      [b.reference, b.payout_id, b.outflow_id, b.inflow_id].some((v) => v && ours.has(v)),
    );
    expect(mine).to.deep.equal([]);

    // The crypto run read the merchant's deposit address and found the books equal to the chain.
    const crypto = run.runs.find((r: { rail: string }) => r.rail === 'CRYPTO');
    const [instruction] = await em.find(PaymentInstruction, { tenant: merchant.tenantId, rail: 'CRYPTO' });
    const line = crypto.accounts.find(
      (a: { account: string }) =>
        a.account === `collection:crypto:${instruction!.chain}:${instruction!.accountUnique}`,
    );
    expect(line.ledger_balance).to.equal(line.rail_balance);
    // The refund sent on BSC matched the chain's send of it.
    const sent = crypto.accounts.find((a: { account: string }) => a.account === 'transit:refunds:BSC');
    expect(sent.matched_count).to.be.at.least(1);
    const received = await em.count(Inflow, { tenant: merchant.tenantId, rail: 'CRYPTO' });
    expect(line.matched_count).to.equal(received);
    // The processor's report matched this merchant's attempts with the books.
    const processor = run.runs.find((r: { rail: string }) => r.rail === 'PROCESSOR');
    const transit = processor.accounts.find((a: { account: string }) =>
      a.account.startsWith('transit:processor:'),
    );
    expect(transit.matched_count).to.be.at.least(outflows.length);
  });
});
