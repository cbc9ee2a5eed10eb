import { expect } from 'chai';
import { emSql } from '#src/db/sql.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { accountName } from '#src/ledger/chart.ts';
import { runLedgerOnce } from '#src/ledger/job.ts';
import { post } from '#src/ledger/ledger.ts';
import { createLogger } from '#src/lib/log.ts';
import { toDecimal } from '#src/lib/money.ts';
import { RefundDestination } from '#src/refund-destinations/entities.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { heldPayout, strayInflow } from '../approvals/fixtures.ts';
import { call, type Merchant } from '../client.ts';
import { merchantWith, mine, paidPayout, payoutOf, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { approvedMove } from '../operators/fixtures.ts';
import {
  admin,
  confirmationsOf,
  creditBody,
  inflowByRef,
  lapse,
  payoutWithInstruction,
  postBankCallback,
  sendUsdt,
  settle,
} from '../settlement/fixtures.ts';
import {
  deps,
  holdings,
  ledgerOf,
  movements,
  paidOut,
  paidOutMovements,
  priceOf,
  violationsOf,
} from './fixtures.ts';

describe('the ledger through the sandbox scenarios', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await merchantWith();
  });

  it('exact, on the bank rail: received, converted, paid out, fees kept; nothing left', async () => {
    const id = await paidPayout(merchant, payoutTo('5678', 'NGN'));
    const paying = await ledgerOf(id);
    const p = await priceOf(id);
    expect(movements(paying)).to.deep.equal([`money_received NGN ${p.settlement}`]);
    expect(holdings(paying)).to.deep.equal([`NGN ${p.settlement}`]);
    // The money entered on the payout's virtual account, into suspense, then became the payout's.
    const instruction = await deps().orm.em.fork().findOneOrFail(PaymentInstruction, { payout: id });
    expect(paying.entries.map((e) => `${e.account} ${e.amount}`)).to.deep.equal([
      `tenants:${merchant.tenantId}:suspense -${p.settlement}`,
      `tenants:${merchant.tenantId}:payouts:${id} ${p.settlement}`,
    ]);
    const inflowId = paying.entries[0]!.cause.id;
    const arrived = await admin(
      'ledger',
      'entries',
      '--account',
      `collection:bank:${instruction.accountUnique}`,
      '--exact',
    );
    expect(
      arrived.data.map((e: { amount: string; cause: { id: string } }) => [e.amount, e.cause.id]),
    ).to.deep.equal([[`-${p.settlement}`, inflowId]]);

    expect((await paidOut(merchant, id)).status).to.equal('SUCCESSFUL');
    const done = await ledgerOf(id);
    expect(movements(done)).to.have.members(paidOutMovements(p));
    expect(holdings(done), 'a final payout holds nothing').to.deep.equal([]);
    expect(done.in_transit.filter((t) => !toDecimal(t.amount).isZero())).to.deep.equal([]);
    expect(done.entries.map((e) => e.cause.object)).to.include.members(['inflow', 'outflow', 'payout']);
    expect(await violationsOf(id)).to.deep.equal([]);
  });

  it('over, on a chain: the excess is set aside for the merchant when the payout succeeds', async () => {
    const id = await paidPayout(merchant, payoutTo('5679', 'USDT'), { overpay: '2.5' });
    expect((await paidOut(merchant, id)).status).to.equal('SUCCESSFUL');
    const p = await priceOf(id);
    const received = toDecimal(p.settlement).plus('2.5').toFixed();
    const done = await ledgerOf(id);
    expect(movements(done)).to.have.members([
      ...paidOutMovements(p, received),
      'overpayment_set_aside USDT -2.5',
    ]);
    expect(holdings(done)).to.deep.equal([]);
    const overpayments = await admin(
      'ledger',
      'balances',
      '--prefix',
      `tenants:${merchant.tenantId}:to_return:`,
    );
    expect(overpayments.data).to.deep.equal([
      {
        account: accountName('overpayments', { tenant: merchant.tenantId }),
        currency: 'USDT',
        balance: '2.5',
        entries: 1,
      },
    ]);
    expect(await violationsOf(id)).to.deep.equal([]);
  });

  it('under, then topped up: the held money is the payout’s, and the top-up completes it', async () => {
    const { payoutId } = await heldPayout(merchant);
    const held = await ledgerOf(payoutId);
    expect(holdings(held)).to.deep.equal(['NGN 100']);
    const instruction = await deps().orm.em.fork().findOneOrFail(PaymentInstruction, { payout: payoutId });
    const rest = toDecimal(instruction.expectedAmount).minus(100).toFixed(2);
    const res = await postBankCallback(
      creditBody({ account_number: instruction.accountUnique, amount: rest }),
    );
    expect(res.status, res.text).to.equal(204);
    expect((await payoutOf(merchant, payoutId)).status).to.equal('PAYMENT_RECEIVED');
    expect(movements(await ledgerOf(payoutId))).to.deep.equal([
      'money_received NGN 100',
      `money_received NGN ${toDecimal(rest).toFixed()}`,
    ]);
    expect(await violationsOf(payoutId)).to.deep.equal([]);
  });

  it('late money is suspense, and expiry moves nothing', async () => {
    const payout = await payoutWithInstruction(merchant);
    const before = await admin('ledger', 'balances', '--prefix', `tenants:${merchant.tenantId}:suspense`);
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 1000);
    expect((await payoutOf(merchant, payout.id)).status).to.equal('EXPIRED');
    expect((await ledgerOf(payout.id)).entries).to.deep.equal([]);
    const tx = await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    expect((await inflowByRef(tx))?.state).to.equal('UNMATCHED');
    const after = await admin('ledger', 'balances', '--prefix', `tenants:${merchant.tenantId}:suspense`);
    const usdt = (b: { data: { currency: string; balance: string }[] }) =>
      toDecimal(b.data.find((x) => x.currency === 'USDT')?.balance ?? 0);
    expect(usdt(after).minus(usdt(before)).toFixed()).to.equal(
      toDecimal(payout.instruction.expected).toFixed(),
    );
    expect(await violationsOf(payout.id, merchant.tenantId)).to.deep.equal([]);
  });

  it('failed at the processor, with its refund: the refund fee is kept and the rest goes back', async () => {
    const id = await paidPayout(merchant, payoutTo('1001', 'NGN'));
    expect((await paidOut(merchant, id)).status).to.equal('FAILED');
    const p = await priceOf(id);
    expect(holdings(await ledgerOf(id)), 'held for its refund').to.deep.equal([`NGN ${p.settlement}`]);
    await runRefundsOnce(deps());
    const refund = (await payoutOf(merchant, id)).refund_reference;
    const refunded = await ledgerOf(id);
    const fee = refunded.entries.find((e) => e.movement === 'refund_fee');
    const back = toDecimal(p.settlement).minus(fee ? toDecimal(fee.amount).negated() : 0);
    expect(movements(refunded)).to.deep.equal([
      `money_received NGN ${p.settlement}`,
      ...(fee ? [`refund_fee NGN ${fee.amount}`] : []),
      `refunded NGN -${back.toFixed()}`,
    ]);
    expect(refunded.entries.filter((e) => e.cause.object === 'refund').map((e) => e.cause.id)).to.include(
      refund,
    );
    expect(holdings(refunded)).to.deep.equal([]);
    expect(await violationsOf(id)).to.deep.equal([]);
  });

  it('a retried attempt: the money comes back from the processor and goes again, converted twice', async () => {
    const id = await paidPayout(merchant, payoutTo('1002', 'USDT'));
    let payout = await paidOut(merchant, id);
    if (payout.status !== 'SUCCESSFUL') payout = await paidOut(merchant, id);
    expect(payout.status).to.equal('SUCCESSFUL');
    const done = await ledgerOf(id);
    expect(holdings(done)).to.deep.equal([]);
    expect(await violationsOf(id)).to.deep.equal([]);
  });

  it('a refund without destination: the failed payout keeps the money until an operator raises the refund', async () => {
    const other = await merchantWith();
    const id = await paidPayout(other, payoutTo('1001', 'NGN'));
    await deps()
      .orm.em.fork()
      .nativeUpdate(RefundDestination, { tenant: other.tenantId, currency: 'NGN' }, { isActive: false });
    expect((await paidOut(other, id)).status).to.equal('FAILED');
    await runRefundsOnce(deps());
    const p = await priceOf(id);
    expect(holdings(await ledgerOf(id))).to.deep.equal([`NGN ${p.settlement}`]);
    expect(await violationsOf(id)).to.deep.equal([]);
  });

  it('operator attribution and return move money out of suspense, naming the approval', async () => {
    const stray = await strayInflow(merchant);
    await approvedMove('inflow', 'attribute', stray.inflowId, '--payout', stray.payoutId);
    const attributed = await ledgerOf(stray.payoutId);
    const received = attributed.entries.find((e) => e.movement === 'money_received')!;
    expect(received).to.include({ amount: '30', currency: 'USDT' });
    expect(received.cause).to.include({ object: 'inflow', id: stray.inflowId });
    expect(received.cause.transition).to.match(/^OPERATOR_ATTRIBUTE /);

    const second = await strayInflow(merchant);
    await approvedMove('inflow', 'return', second.inflowId, '--reference', 'FT-RETURN-1');
    const returned = await admin(
      'ledger',
      'entries',
      '--account',
      `world:merchants:${merchant.tenantId}`,
      '--exact',
    );
    const entry = returned.data.find((e: { cause: { id: string } }) => e.cause.id === second.inflowId);
    expect(entry).to.include({ amount: '30', currency: 'USDT' });
    expect(entry.approval_id).to.be.a('string');
    expect(await violationsOf(stray.payoutId, merchant.tenantId)).to.deep.equal([]);
  });
});

describe('the ledger’s checks', () => {
  it('find money out of place, count it in the Out of balance queue and the metric, and let it go once fixed', async () => {
    const merchant = await merchantWith();
    const id = await paidPayout(merchant, payoutTo('5680', 'NGN'));
    expect(await violationsOf(id)).to.deep.equal([]);
    // Balanced, but the money leaves a payout still waiting to be paid out.
    const sql = emSql(deps().orm.em.fork());
    const misplace = (from: string, to: string) =>
      post(sql, [
        {
          tenantId: merchant.tenantId,
          payoutId: id,
          cause: { object: 'payout', id, transition: 'TEST (PAYMENT_RECEIVED → PAYMENT_RECEIVED)' },
          at: harness().clock.now(),
          entries: [
            { account: from, currency: 'NGN', amount: toDecimal('-7') },
            { account: to, currency: 'NGN', amount: toDecimal('7') },
          ].map((e) => ({
            ...e,
            movement: e.account.startsWith('fees:') ? null : ('platform_fee' as const),
          })),
        },
      ]);
    const payoutAccount = accountName('payout', { tenant: merchant.tenantId, payout: id });
    await misplace(payoutAccount, 'fees:platform');

    // The `ledger` job's pass finds it first, and says so in an error line naming what is off.
    const lines: Record<string, unknown>[] = [];
    const log = createLogger({
      level: 'warn',
      destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
    });
    const pass = await runLedgerOnce({ ...deps(), log });
    expect(pass.check.violations.map((v) => v.subject)).to.include(id);
    const logged = lines.filter((l) => l.msg === 'ledger out of balance' && l.subject === id);
    expect(logged).to.have.length(1);
    expect(logged[0]).to.include({ level: 50, check: 'PAYOUT_MONEY', tenant: merchant.tenantId });
    expect(logged[0]!.currencies).to.deep.equal([
      {
        currency: 'NGN',
        expected_held: (await priceOf(id)).settlement,
        ledger_held: toDecimal((await priceOf(id)).settlement)
          .minus(7)
          .toFixed(),
        expected_in_transit: '0',
        ledger_in_transit: '0',
      },
    ]);
    // Logged when first found, not again by the passes that find it still open.
    expect((await runLedgerOnce({ ...deps(), log })).check.violations.map((v) => v.subject)).to.include(id);
    expect(lines.filter((l) => l.msg === 'ledger out of balance' && l.subject === id)).to.have.length(1);

    const found = await violationsOf(id);
    expect(found).to.have.length(1);
    expect(found[0]).to.include({ check: 'PAYOUT_MONEY', subject: id });
    const queues = await call('GET', '/trpc/admin.exceptions', {
      headers: { authorization: `Bearer ${harness().adminToken}` },
      idempotencyKey: null,
    });
    const queue = queues.body.result.data.queues.find((q: { code: string }) => q.code === 'OUT_OF_BALANCE');
    expect(queue.count).to.be.at.least(1);
    const metrics = await call('GET', '/metrics', {
      headers: { authorization: `Bearer ${harness().adminToken}` },
      idempotencyKey: null,
    });
    expect(metrics.text).to.match(/^payout_ledger_out_of_balance\{check="PAYOUT_MONEY"\} [1-9]\d*$/m);
    // The scrape keeps the exception counts of this clock instant for a second: let the clock move
    // on, so that the next test's scrape counts afresh.
    harness().clock.advance(2000);
    const open = await admin('ledger', 'violations');
    expect(open.data.map((v: { subject: string }) => v.subject)).to.include(id);

    await misplace('fees:platform', payoutAccount);
    expect(await violationsOf(id)).to.deep.equal([]);
    const later = await admin('ledger', 'violations');
    expect(later.data.map((v: { subject: string }) => v.subject)).to.not.include(id);
  });
});
