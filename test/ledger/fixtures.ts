import { expect } from 'chai';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import { applyPayoutEvent } from '#src/payouts/lifecycle.ts';
import { call, type Merchant } from '../client.ts';
import {
  callbacksDelivered,
  deps,
  dispatch,
  merchantWith,
  paidPayout,
  payoutOf,
  payoutTo,
} from '../dispatch/fixtures.ts';
import { admin } from '../settlement/fixtures.ts';

/** A payout's ledger as operators read it (`ledger payout PAYOUT_ID`). */
export interface PayoutLedger {
  payout_id: string;
  holds: { currency: string; amount: string }[];
  in_transit: { currency: string; amount: string }[];
  set_aside: { currency: string; amount: string }[];
  entries: {
    account: string;
    currency: string;
    amount: string;
    movement: string | null;
    cause: { object: string; id: string; transition: string };
    approval_id: string | null;
  }[];
}

export async function ledgerOf(payoutId: string): Promise<PayoutLedger> {
  return admin('ledger', 'payout', payoutId);
}

/** The payout's movements as `type currency amount`, oldest first. */
export function movements(ledger: PayoutLedger): string[] {
  return ledger.entries.filter((e) => e.movement).map((e) => `${e.movement} ${e.currency} ${e.amount}`);
}

/** What the payout holds, per currency, as `currency amount` (nothing listed when it holds nothing). */
export function holdings(ledger: PayoutLedger): string[] {
  return ledger.holds.filter((h) => !toDecimal(h.amount).isZero()).map((h) => `${h.currency} ${h.amount}`);
}

/** Dispatches a paid payout and waits for the processor's callbacks until it is final or `PROCESSING` ends. */
export async function paidOut(merchant: Merchant, payoutId: string): Promise<any> {
  const outflows = await dispatch(merchant, payoutId);
  const last = outflows.at(-1);
  expect(last, 'an outflow').to.not.equal(undefined);
  if (last.status !== 'FAILED') await callbacksDelivered(last.id);
  return payoutOf(merchant, payoutId);
}

/** The ledger's checks right now, over every payout: what they find for these subjects. */
export async function violationsOf(...subjects: string[]): Promise<{ check: string; subject: string }[]> {
  const run = await admin('ledger', 'check', '--all');
  return run.violations.filter((v: { subject: string }) => subjects.some((s) => v.subject.startsWith(s)));
}

export { deps };

/** The payout's price as the ledger uses it: converted amount, fees, destination. */
export async function priceOf(id: string) {
  const p = await deps().orm.em.fork().findOneOrFail(Payout, id);
  return {
    s: p.settlementCurrency,
    d: p.destinationCurrency,
    converted: p.settlementAmount.minus(p.totalFeeAmount).toFixed(),
    platform: p.platformFeeAmount.toFixed(),
    network: p.networkFeeAmount.toFixed(),
    settlement: p.settlementAmount.toFixed(),
    destination: p.destinationAmount.toFixed(),
  };
}

/** The movements of a payout paid (`received` in all) and then paid out, as {@link movements} lists them. */
export function paidOutMovements(p: Awaited<ReturnType<typeof priceOf>>, received = p.settlement): string[] {
  return [
    `money_received ${p.s} ${received}`,
    `conversion ${p.s} -${p.converted}`,
    `conversion ${p.d} ${p.destination}`,
    `paid_out ${p.d} -${p.destination}`,
    ...(toDecimal(p.platform).isZero() ? [] : [`platform_fee ${p.s} -${p.platform}`]),
    ...(toDecimal(p.network).isZero() ? [] : [`network_fee ${p.s} -${p.network}`]),
  ];
}

/** A money movement as the merchant API returns it. */
export interface Movement {
  id: string;
  payout_id: string;
  type: string;
  amount: string;
  currency: string;
  created_at: string;
  source: { object: string; id: string };
}

/** The payout's statement as its merchant reads it (`GET /v1/payouts/{id}/money-movements`). */
export async function statementOf(merchant: Merchant, payoutId: string): Promise<Movement[]> {
  const res = await call('GET', `/v1/payouts/${payoutId}/money-movements`, { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

/** Amounts per currency, as exact decimal strings; zero sums left out. */
export type PerCurrency = Record<string, string>;

export function perCurrency(items: Iterable<{ currency: string; amount: Decimal | string }>): PerCurrency {
  const sums = new Map<string, Decimal>();
  for (const { currency, amount } of items)
    sums.set(currency, (sums.get(currency) ?? toDecimal(0)).plus(amount));
  return Object.fromEntries([...sums].filter(([, v]) => !v.isZero()).map(([c, v]) => [c, v.toFixed()]));
}

/**
 * Two FAILED payouts of a new merchant whose money is in different places: one failed before any
 * money was asked for (nothing ever arrived), one failed at the processor after the merchant paid
 * NGN (with us, awaiting its refund, which the refunds job sends).
 */
export async function failedTwoWays(): Promise<{ merchant: Merchant; never: string; paid: string }> {
  const merchant = await merchantWith();
  const never = await call('POST', '/v1/payouts', { key: merchant.key, body: payoutTo('5681') });
  await deps()
    .orm.em.fork()
    .transactional((tx) =>
      applyPayoutEvent(tx, never.body.id, {
        type: 'INSTRUCTION_GENERATION_FAILED',
        failureReason: 'test',
        triggeredBy: 'SYSTEM',
        now: deps().clock.now(),
      }),
    );
  const paid = await paidPayout(merchant, payoutTo('1001', 'NGN'));
  expect((await paidOut(merchant, paid)).status).to.equal('FAILED');
  return { merchant, never: never.body.id, paid };
}
