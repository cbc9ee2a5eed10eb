import { expect } from 'chai';
import { toDecimal } from '#src/lib/money.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  admin,
  creditBody,
  deps,
  getPayout,
  handledCredit,
  inflowByRef,
  lapse,
  merchantInflows,
  outboxEventTypes,
  payBank,
  payoutWithInstruction,
  postBankCallback,
} from './fixtures.ts';

/** The notification the sandbox bank sent for a credit, rebuilt from its answer to the merchant. */
function notificationOf(credit: any): Record<string, unknown> {
  return {
    event: 'credit',
    session_id: credit.session_id,
    account_number: credit.account_number,
    amount: credit.amount,
    currency: 'NGN',
    payer_name: credit.payer_name,
    payer_account: credit.payer_account,
    occurred_at: credit.occurred_at,
  };
}

describe('settlement on the bank rail', () => {
  let merchant: Merchant;
  beforeEach(async () => {
    merchant = await payoutReadyMerchant();
  });

  it('matches an NGN payout as soon as the bank notifies the credit, without the job @smoke', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    expect(payout.instruction.rail).to.equal('BANK_TRANSFER');
    const credit = await payBank(payout.instruction.account_unique, payout.instruction.expected);
    const recorded = await handledCredit(credit.session_id);
    expect(recorded).to.include({ state: 'MATCHED', payerName: credit.payer_name });

    const [inflow] = await merchantInflows(merchant);
    expect(inflow).to.include({
      rail: 'BANK_TRANSFER',
      network: null,
      currency: 'NGN',
      confirmations_received: 0,
      is_matched: true,
      is_underpaid: false,
      payout_id: payout.id,
      overpayment_amount: 0,
    });
    const paid = await getPayout(merchant, payout.id);
    expect(paid.status).to.equal('PAYMENT_RECEIVED');
    expect(paid.payment_instruction.payment_status).to.equal('PAID');
    expect(paid.status_timeline.at(-1).reason_detail).to.include({
      inflow_id: inflow.id,
      match_rule: 'ACCOUNT',
    });
  });

  it('holds an underpaid payout for review and completes it when a top-up arrives', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const expected = toDecimal(payout.instruction.expected);
    const first = await payBank(payout.instruction.account_unique, '1000.00');
    const held = await handledCredit(first.session_id);
    expect(held).to.include({ state: 'HELD', isUnderpaid: true, isMatched: false });
    expect(held.payout?.id).to.equal(payout.id);

    const waiting = await getPayout(merchant, payout.id);
    expect(waiting.status).to.equal('PENDING_PAYMENT');
    expect(waiting.payment_instruction.payment_status).to.equal('UNPAID');
    expect(waiting.status_timeline.at(-1)).to.deep.include({
      from_status: 'PENDING_PAYMENT',
      to_status: 'PENDING_PAYMENT',
      reason_code: 'SETTLEMENT_UNDERPAID',
      triggered_by: 'SYSTEM',
    });
    expect(waiting.status_timeline.at(-1).reason_detail).to.include({
      received_total: '1000',
      inflow_id: held.id,
    });
    expect(await outboxEventTypes(payout.id)).to.include('payout.underpaid');
    const [shown] = await merchantInflows(merchant);
    expect(shown).to.include({ is_underpaid: true, is_matched: false, payout_id: payout.id });

    // The rest and 10 more: the overpayment is worked out on the total.
    const rest = expected.minus(1000).plus(10);
    const second = await payBank(payout.instruction.account_unique, rest.toFixed(2));
    const topUp = await handledCredit(second.session_id);
    expect(topUp).to.include({ state: 'MATCHED', isMatched: true, isUnderpaid: false });
    expect(topUp.overpaymentAmount.toFixed()).to.equal('10');
    const firstAgain = await inflowByRef(first.session_id);
    expect(firstAgain).to.include({ state: 'MATCHED', isMatched: true, isUnderpaid: false });
    expect(firstAgain?.overpaymentAmount.toFixed()).to.equal('0');

    const paid = await getPayout(merchant, payout.id);
    expect(paid.status).to.equal('PAYMENT_RECEIVED');
    expect(paid.status_timeline.at(-1).reason_detail).to.include({
      received_total: expected.plus(10).toFixed(),
      overpayment_amount: '10',
      inflow_id: topUp.id,
    });
    expect(await outboxEventTypes(payout.id)).to.include('payout.payment_received');
  });

  it('records a repeated notification once and changes nothing the second time', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const credit = await payBank(payout.instruction.account_unique, payout.instruction.expected);
    await handledCredit(credit.session_id);
    const before = await getPayout(merchant, payout.id);

    for (let i = 0; i < 2; i++) {
      const again = await postBankCallback(notificationOf(credit));
      expect(again.status, again.text).to.equal(204);
    }
    const rows = await deps().orm.em.fork().find(Inflow, { externalRef: credit.session_id });
    expect(rows).to.have.length(1);
    expect(await getPayout(merchant, payout.id)).to.deep.equal(before);
  });

  it('refuses a notification with a wrong or missing signature and records nothing', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const body = creditBody({
      account_number: payout.instruction.account_unique,
      amount: payout.instruction.expected,
    });
    const forged = await postBankCallback(body, {
      signature: `t=${Math.floor(harness().clock.now().getTime() / 1000)},v1=${'0'.repeat(64)}`,
    });
    expect(forged.status).to.equal(401);
    expect(errorOf(forged).code).to.equal('CALLBACK_SIGNATURE_INVALID');
    const unsigned = await postBankCallback(body, { signature: null });
    expect(unsigned.status).to.equal(401);
    expect(await inflowByRef(String(body.session_id))).to.equal(null);
    expect((await getPayout(merchant, payout.id)).status).to.equal('PENDING_PAYMENT');
  });

  it('answers 204 to a credit on an account no instruction owns, and records nothing', async () => {
    const body = creditBody({ account_number: '9999999990' });
    const res = await postBankCallback(body);
    expect(res.status, res.text).to.equal(204);
    expect(await inflowByRef(String(body.session_id))).to.equal(null);
  });

  it('refuses a malformed notification (amount as a float, wrong currency)', async () => {
    for (const override of [{ amount: 1000.5 }, { currency: 'USD' }, { amount: '0.00' }]) {
      const res = await postBankCallback(creditBody(override));
      expect(res.status, JSON.stringify(override)).to.equal(400);
      expect(errorOf(res).code).to.equal('VALIDATION_FAILED');
    }
  });

  it('keeps a credit that arrives after expiry UNMATCHED and shows operators whose account it was', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 60_000);
    const credit = await payBank(payout.instruction.account_unique, payout.instruction.expected);
    const inflow = await handledCredit(credit.session_id);
    expect(inflow).to.include({ state: 'UNMATCHED', isMatched: false, payout: null });
    expect((await getPayout(merchant, payout.id)).status).to.equal('EXPIRED');

    const listed = await admin('inflow', 'list', '--tenant', merchant.tenantId);
    expect(listed.data).to.have.length(1);
    expect(listed.data[0]).to.include({
      id: inflow.id,
      state: 'UNMATCHED',
      account_payout_id: payout.id,
      payer_name: credit.payer_name,
      payer_account: credit.payer_account,
      external_ref: credit.session_id,
    });
  });

  it('counts a credit that happened before expiry but was notified after it as in time', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const occurredAt = harness().clock.now().toISOString();
    // The bank was down: its notification arrives after the instruction's time is up.
    harness().clock.advance(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 60_000);
    const body = creditBody({
      account_number: payout.instruction.account_unique,
      amount: payout.instruction.expected,
      occurred_at: occurredAt,
    });
    const res = await postBankCallback(body);
    expect(res.status, res.text).to.equal(204);
    expect(await inflowByRef(String(body.session_id))).to.include({ state: 'MATCHED' });
    expect((await getPayout(merchant, payout.id)).status).to.equal('PAYMENT_RECEIVED');
  });
});
