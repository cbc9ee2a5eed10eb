import { expect } from 'chai';
import type { Deps } from '#src/deps.ts';
import { runDispatchOnce } from '#src/dispatch/job.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { drainTasks } from '#src/jobs/runner.ts';
import { toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import type { PayoutProcessor } from '#src/providers/rails.ts';
import { Refund } from '#src/refunds/entities.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { raiseRefundTask } from '#src/refunds/service.ts';
import { runSettlementOnce } from '#src/settlement/job.ts';
import { call, createMerchant, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';

/**
 * Shared steps of the dispatch and refund tests: a payout that has been paid, the sandbox
 * processor's view of an attempt, and a bounded wait for what the sandbox delivers on its own
 * timers (each turn of the wait is one real HTTP round trip, never a sleep).
 */

export const deps = (): Deps => harness().service.deps;

/** Settlement of each test payout: bank-rail NGN or crypto-rail USDT on TRON. */
export type Settlement = 'USDT' | 'NGN';

/** Repeats `probe` (one real I/O each turn) until it returns something truthy; fails after 10 s. */
export async function eventually<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false>,
): Promise<T> {
  const deadline = performance.now() + 10_000;
  while (performance.now() < deadline) {
    const value = await probe();
    if (value) return value;
  }
  throw new Error(`gave up waiting for ${what}`);
}

async function sandbox<T = any>(
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: T }> {
  const res = await fetch(harness().sandboxUrl + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T };
}

/** What the sandbox processor holds for one reference (an outflow id), callbacks included. */
export interface ProcessorRecord {
  reference: string;
  status: 'ACCEPTED' | 'SUCCESSFUL' | 'FAILED';
  attempt: number;
  submissions: number;
  callbacks: { id: string; status: 'PENDING' | 'DELIVERED' | 'FAILED'; attempts: number; body: string }[];
}

export async function processorRecord(reference: string): Promise<ProcessorRecord | undefined> {
  const res = await sandbox<{ data: ProcessorRecord[] }>(
    'GET',
    `/sandbox/processor/payouts?reference=${encodeURIComponent(reference)}`,
  );
  return res.body.data[0];
}

/** Waits until the processor has settled `reference` and `count` callbacks reached the service. */
export async function callbacksDelivered(reference: string, count = 1): Promise<ProcessorRecord> {
  return eventually(`${count} delivered callback(s) for ${reference}`, async () => {
    const record = await processorRecord(reference);
    const delivered = record?.callbacks.filter((c) => c.status === 'DELIVERED').length ?? 0;
    return record && record.status !== 'ACCEPTED' && delivered >= count ? record : undefined;
  });
}

/** Waits until the processor has settled `reference` (an attempt that never calls back). */
export async function processorSettled(reference: string): Promise<ProcessorRecord> {
  return eventually(`the processor to settle ${reference}`, async () => {
    const record = await processorRecord(reference);
    return record && record.status !== 'ACCEPTED' ? record : undefined;
  });
}

/** Makes the processor send one more signed callback for `reference` (duplicate, contradictory...). */
export async function forceCallback(
  reference: string,
  body: { status?: 'SUCCESSFUL' | 'FAILED'; failure_code?: string; retryable?: boolean } = {},
): Promise<void> {
  const before = (await processorRecord(reference))?.callbacks.length ?? 0;
  const res = await sandbox(
    'POST',
    `/sandbox/processor/payouts/${encodeURIComponent(reference)}/callbacks`,
    body,
  );
  expect(res.status).to.equal(202);
  await eventually(`forced callback for ${reference}`, async () => {
    const record = await processorRecord(reference);
    const latest = record?.callbacks[before];
    return latest && latest.status !== 'PENDING';
  });
}

/** A USDT refund destination on TRON whose address is `address`. */
export async function setUsdtDestination(merchant: Merchant, address: string): Promise<void> {
  const res = await call('PUT', '/v1/refund-destinations', {
    key: merchant.key,
    body: { currency: 'USDT', type: 'CRYPTO_ADDRESS', network: 'TRON', address },
  });
  expect(res.status, res.text).to.equal(200);
}

/** An NGN refund destination at GTBank (058) with `accountNumber`. */
export async function setNgnDestination(merchant: Merchant, accountNumber: string): Promise<void> {
  const res = await call('PUT', '/v1/refund-destinations', {
    key: merchant.key,
    body: { currency: 'NGN', type: 'BANK_ACCOUNT', bank_code: '058', account_number: accountNumber },
  });
  expect(res.status, res.text).to.equal(200);
}

/**
 * A merchant with both refund destinations: USDT at `usdtAddress` on TRON, NGN at `ngnAccount`
 * (ending 9999: a closed account that refuses refunds).
 */
export async function merchantWith(
  usdtAddress = 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
  ngnAccount = '0123456789',
): Promise<Merchant> {
  const merchant = await createMerchant();
  await setUsdtDestination(merchant, usdtAddress);
  await setNgnDestination(merchant, ngnAccount);
  return merchant;
}

/** A payout request to a Nigerian bank account ending in `suffix` (the processor's magic values). */
export function payoutTo(suffix: string, settlement: Settlement = 'USDT'): Record<string, unknown> {
  return {
    destination_type: 'BANK_ACCOUNT',
    destination_country: 'NG',
    destination_currency: 'NGN',
    destination_amount: 150000,
    destination_account_unique: `023456${suffix}`,
    destination_provider_name: 'Guaranty Trust Bank',
    destination_provider_code: '058',
    destination_account_name: 'ADAEZE OKONKWO',
    settlement_currency: settlement,
  };
}

/** Mines `count` blocks on a sandbox chain (the harness mines only on request). */
export async function mine(network: 'TRON' | 'BSC', count = 1): Promise<void> {
  expect((await sandbox('POST', `/sandbox/chains/${network}/blocks`, { count })).status).to.equal(200);
}

/**
 * Settles a payout the way a merchant does: pays its instruction through the sandbox (a USDT
 * transfer confirmed by mined blocks, or an NGN bank transfer whose credit the bank calls back),
 * and lets settlement match it.
 */
export async function settleThroughSandbox(payoutId: string, overpay = '0'): Promise<void> {
  const em = deps().orm.em.fork();
  const instruction = await em.findOneOrFail(PaymentInstruction, { payout: payoutId });
  const amount = toDecimal(instruction.expectedAmount).plus(overpay).toFixed();
  if (instruction.rail === 'CRYPTO') {
    const network = instruction.chain as 'TRON' | 'BSC';
    const sent = await sandbox('POST', '/sandbox/crypto/transfers', {
      network,
      to_address: instruction.accountUnique,
      amount,
      currency: 'USDT',
    });
    expect(sent.status).to.equal(201);
    await mine(
      network,
      network === 'TRON' ? deps().config.CONFIRMATIONS_TRON : deps().config.CONFIRMATIONS_BSC,
    );
    await runSettlementOnce(deps());
  } else {
    const sent = await sandbox('POST', '/sandbox/bank/transfers', {
      account_number: instruction.accountUnique,
      amount,
      currency: 'NGN',
    });
    expect(sent.status).to.equal(201);
  }
  await eventually(`payout ${payoutId} to be paid`, async () => {
    const payout = await deps().orm.em.fork().findOneOrFail(Payout, payoutId);
    return payout.status !== 'PENDING_PAYMENT';
  });
}

/** Creates a payout, generates its instruction and settles it: the payout is PAYMENT_RECEIVED. */
export async function paidPayout(
  merchant: Merchant,
  body: Record<string, unknown>,
  options: { overpay?: string } = {},
): Promise<string> {
  const res = await call('POST', '/v1/payouts', { key: merchant.key, body });
  expect(res.status, res.text).to.equal(201);
  await runInstructionsOnce(deps());
  await settleThroughSandbox(res.body.id, options.overpay);
  expect((await deps().orm.em.fork().findOneOrFail(Payout, res.body.id)).status).to.equal('PAYMENT_RECEIVED');
  return res.body.id;
}

/** Runs dispatch once and returns the payout's outflows (oldest first) as the API shows them. */
export async function dispatch(merchant: Merchant, payoutId: string): Promise<any[]> {
  await runDispatchOnce(deps());
  return outflowsOf(merchant, payoutId);
}

/**
 * A payout whose money arrived and whose processor refused it outright (account ending 1001), with
 * its refund raised and, unless `send` is false, sent (the refunds job run once; a chain's send
 * is then still to be mined). Returns the payout's id and the refund as raised or sent.
 */
export async function failedPayoutWithRefund(
  merchant: Merchant,
  settlement: Settlement,
  options: { send?: boolean } = {},
): Promise<{ payoutId: string; refund: Refund }> {
  const payoutId = await paidPayout(merchant, payoutTo('1001', settlement));
  const [rejected] = await dispatch(merchant, payoutId);
  expect(rejected.status).to.equal('FAILED');
  if (options.send ?? true) await runRefundsOnce(deps());
  else await drainTasks(deps(), 'RAISE_REFUND', (task) => raiseRefundTask(deps(), task));
  const refund = await deps().orm.em.fork().findOneOrFail(Refund, { payout: payoutId });
  return { payoutId, refund };
}

export async function outflowsOf(merchant: Merchant, payoutId: string): Promise<any[]> {
  const res = await call('GET', `/v1/payouts/${payoutId}/outflows`, { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

export async function payoutOf(merchant: Merchant, payoutId: string): Promise<any> {
  const res = await call('GET', `/v1/payouts/${payoutId}`, { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

/** The event types written for a payout, in order. */
export async function eventTypesOf(payoutId: string): Promise<string[]> {
  const events = await deps()
    .orm.em.fork()
    .find(OutboxEvent, { payoutId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return events.map((e) => e.eventType);
}

/** The timeline as (reason_code, triggered_by) pairs, oldest first. */
export function timelineOf(payout: {
  status_timeline: { reason_code: string; triggered_by: string }[];
}): string[] {
  return payout.status_timeline.map((t) => `${t.reason_code}/${t.triggered_by}`);
}

/** Swaps the processor's submit for the length of `body`, keeping the real one underneath. */
export async function withSubmit(
  wrap: (real: PayoutProcessor['submit']) => PayoutProcessor['submit'],
  body: () => Promise<void>,
): Promise<void> {
  const processor = deps().rails.processor;
  const real = processor.submit;
  processor.submit = wrap(real.bind(processor));
  try {
    await body();
  } finally {
    processor.submit = real;
  }
}
