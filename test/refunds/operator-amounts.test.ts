import { expect } from 'chai';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { toDecimal } from '#src/lib/money.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { failedRefund, heldMoney, heldPayout } from '../approvals/fixtures.ts';
import { call, type Merchant } from '../client.ts';
import { deps, payoutOf } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { approvedMove } from '../operators/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';

/**
 * What goes back to the merchant when a person, not the service, decides a refund: the amounts
 * are checked exactly, against what the bank was credited and the NGN refund fee as configured
 * (src/corridors/corridors.json), written here rather than read back through the code.
 */
const NGN_REFUND_FEE = toDecimal('50.00');

async function refundOf(merchant: Merchant, payoutId: string): Promise<any> {
  const res = await call('GET', `/v1/payouts/${payoutId}/refunds`, { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  expect(res.body).to.have.length(1);
  return res.body[0];
}

/** What the sandbox bank credited to the payout's virtual account. */
async function credited(payoutId: string): Promise<string> {
  const instruction = await deps().orm.em.fork().findOneOrFail(PaymentInstruction, { payout: payoutId });
  const credits = harness().sandbox.bank.credits(instruction.accountUnique);
  return credits.reduce((sum, c) => sum.plus(c.amount), toDecimal(0)).toFixed();
}

/** The bank transfers sent under a refund's references, as [reference, amount, status]. */
function transfersOf(refundId: string): [string, string, string][] {
  return harness()
    .sandbox.bank.transfers()
    .filter((t) => t.reference.startsWith(`${refundId}:`))
    .map((t) => [t.reference, t.amount.toFixed(), t.status]);
}

function expectAmounts(refund: any, received: string, refunded: string): void {
  expect(refund).to.include({
    received_currency: 'NGN',
    refund_currency: 'NGN',
    network_fee_currency: 'NGN',
  });
  expect(toDecimal(String(refund.received_amount)).toFixed()).to.equal(received);
  expect(toDecimal(String(refund.network_fee_amount)).toFixed()).to.equal(NGN_REFUND_FEE.toFixed());
  expect(toDecimal(String(refund.refund_amount)).toFixed()).to.equal(refunded);
}

describe('refund amounts on the operators’ paths', () => {
  it('an underpaid payout an operator failed: the 100.00 received, less the fee', async () => {
    const merchant = await payoutReadyMerchant();
    const { payoutId } = await heldPayout(merchant);
    // The fixture's bank notified a credit of 100.00 NGN, short of what the payout asked for.
    await approvedMove('payout', 'fail', payoutId);
    await runRefundsOnce(deps());
    const refund = await refundOf(merchant, payoutId);
    expectAmounts(refund, '100', '50');
    expect(transfersOf(refund.id)).to.deep.equal([[`${refund.id}:1`, '50', 'SUCCESSFUL']]);
  });

  it('a refund an operator raised for held money: everything credited, less the fee', async () => {
    const { merchant, payoutId } = await heldMoney({ destination: true });
    const received = await credited(payoutId);
    await approvedMove('refund', 'raise', payoutId);
    await runRefundsOnce(deps());
    const refund = await refundOf(merchant, payoutId);
    const refunded = toDecimal(received).minus(NGN_REFUND_FEE).toFixed();
    expectAmounts(refund, received, refunded);
    expect(transfersOf(refund.id)).to.deep.equal([[`${refund.id}:1`, refunded, 'SUCCESSFUL']]);
    expect(await payoutOf(merchant, payoutId)).to.include({ is_refunded: true });
  });

  it('a retried refund: the same amount again, the fee taken once', async () => {
    const { merchant, payoutId, refundId } = await failedRefund({ corrected: true });
    const received = await credited(payoutId);
    const refunded = toDecimal(received).minus(NGN_REFUND_FEE).toFixed();
    const failed = await refundOf(merchant, payoutId);
    expect(failed).to.include({ id: refundId, status: 'FAILED', attempt_number: 1 });
    expectAmounts(failed, received, refunded);

    await approvedMove('refund', 'retry', refundId);
    await runRefundsOnce(deps());
    const retried = await refundOf(merchant, payoutId);
    expect(retried).to.include({ id: refundId, status: 'SUCCESSFUL', attempt_number: 2 });
    expectAmounts(retried, received, refunded);
    expect(transfersOf(refundId)).to.deep.equal([
      [`${refundId}:1`, refunded, 'FAILED'],
      [`${refundId}:2`, refunded, 'SUCCESSFUL'],
    ]);
  });
});
