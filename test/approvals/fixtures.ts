import { expect } from 'chai';
import { RefundDestination } from '#src/refund-destinations/entities.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import type { Merchant } from '../client.ts';
import {
  dispatch,
  failedPayoutWithRefund,
  merchantWith,
  paidPayout,
  payoutOf,
  payoutTo,
  setNgnDestination,
} from '../dispatch/fixtures.ts';
import {
  confirmationsOf,
  creditBody,
  deps,
  inflowByRef,
  mine,
  payoutWithInstruction,
  postBankCallback,
  sendUsdt,
  settle,
} from '../settlement/fixtures.ts';

/**
 * Targets of the five money moves, each in the state its move needs: proposing a move checks that
 * it would run, so a proposal needs a real target.
 */

/** A NGN payout held for review (100 NGN of more arrived): `payout fail`. Its inflow is attributed to it. */
export async function heldPayout(merchant: Merchant): Promise<{ payoutId: string; inflowId: string }> {
  const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
  const body = creditBody({ account_number: payout.instruction.account_unique, amount: '100.00' });
  const res = await postBankCallback(body);
  expect(res.status, res.text).to.equal(204);
  const inflow = await inflowByRef(String(body.session_id));
  expect(inflow).to.include({ state: 'HELD' });
  return { payoutId: payout.id, inflowId: inflow!.id };
}

/**
 * A USDT payout waiting for money and 30 USDT sent to it, held and attributed to no payout: an
 * operator attributes it (`inflow attribute`, to this payout) or records it returned (`inflow return`).
 */
export async function strayInflow(merchant: Merchant): Promise<{ payoutId: string; inflowId: string }> {
  const payout = await payoutWithInstruction(merchant);
  const tx = await sendUsdt('TRON', payout.instruction.account_unique, '30');
  await mine('TRON', confirmationsOf('TRON'));
  await settle();
  const inflow = await inflowByRef(tx);
  expect(inflow).to.include({ state: 'HELD', payout: null });
  return { payoutId: payout.id, inflowId: inflow!.id };
}

/**
 * A FAILED refund (its NGN destination is a closed account): `refund retry`, once the merchant has
 * corrected the destination, which `corrected` does.
 */
export async function failedRefund(options: {
  corrected: boolean;
}): Promise<{ merchant: Merchant; payoutId: string; refundId: string }> {
  const merchant = await merchantWith(undefined, '0123459999');
  const { payoutId, refund } = await failedPayoutWithRefund(merchant, 'NGN');
  expect(await payoutOf(merchant, payoutId)).to.include({ status: 'FAILED', refund_reference: refund.id });
  if (options.corrected) await setNgnDestination(merchant, '0123454321');
  return { merchant, payoutId, refundId: refund.id };
}

/**
 * A FAILED payout holding its money without a refund (its tenant had no NGN destination when it
 * failed): `refund raise`, once the tenant has a destination again, which `destination` registers.
 */
export async function heldMoney(options: {
  destination: boolean;
}): Promise<{ merchant: Merchant; payoutId: string }> {
  const merchant = await merchantWith();
  const id = await paidPayout(merchant, payoutTo('1001', 'NGN'));
  await deps()
    .orm.em.fork()
    .nativeUpdate(RefundDestination, { tenant: merchant.tenantId, currency: 'NGN' }, { isActive: false });
  await dispatch(merchant, id);
  await runRefundsOnce(deps());
  expect(await payoutOf(merchant, id)).to.include({ status: 'FAILED', is_refunded: false });
  if (options.destination) await setNgnDestination(merchant, '0123456789');
  return { merchant, payoutId: id };
}
