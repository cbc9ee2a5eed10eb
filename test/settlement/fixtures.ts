import { expect } from 'chai';
import { run } from '#src/cli/admin.ts';
import { NETWORKS, type Network } from '#src/corridors/corridors.ts';
import { statement } from '#src/db/sql.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { CALLBACK_SIGNATURE_HEADER, signCallback } from '#src/providers/callback-signature.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { runSettlementOnce, type SettlementRun } from '#src/settlement/job.ts';
import { type ApiResponse, call, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { isOwnTenant } from '../isolation.ts';
import { bankPayout } from '../payouts/fixtures.ts';

/** Shared steps of the settlement tests: payouts with instructions, the merchant's side of the sandbox, the jobs. */

export const deps = () => harness().service.deps;

export interface InstructionView {
  id: string;
  rail: 'CRYPTO' | 'BANK_TRANSFER';
  account_unique: string;
  /** As the merchant would copy it: the exact digits of the JSON number. */
  expected: string;
  payment_status: string;
  expires_at: string;
  paid_at: string | null;
}

/** Creates a payout through the API and runs instruction generation; returns it with its instruction. */
export async function payoutWithInstruction(
  merchant: Merchant,
  overrides: Record<string, unknown> = {},
): Promise<{ id: string; instruction: InstructionView }> {
  const created = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout(overrides) });
  expect(created.status, created.text).to.equal(201);
  await runInstructionsOnce(deps());
  const payout = await getPayout(merchant, created.body.id);
  expect(payout.status, JSON.stringify(payout.status_timeline)).to.equal('PENDING_PAYMENT');
  const i = payout.payment_instruction;
  return { id: payout.id, instruction: { ...i, expected: String(i.expected_amount) } };
}

export async function getPayout(merchant: Merchant, id: string): Promise<any> {
  const res = await call('GET', `/v1/payouts/${id}`, { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

/** Every inflow of the merchant, newest first, as the merchant API shows them. */
export async function merchantInflows(merchant: Merchant): Promise<any[]> {
  const res = await call('GET', '/v1/inflows?limit=100', { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  return res.body.data;
}

export async function outboxEventTypes(payoutId: string): Promise<string[]> {
  const events = await deps()
    .orm.em.fork()
    .find(OutboxEvent, { payoutId }, { orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
  return events.map((e) => e.eventType);
}

/** A request to the sandbox's simulation endpoints (the merchant's side of the world). */
export async function sandbox(path: string, body: unknown): Promise<ApiResponse> {
  const res = await fetch(harness().sandboxUrl + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined, text };
}

/** The merchant sends USDT; the transfer lands in the next block. Returns the tx hash. */
export async function sendUsdt(network: Network, toAddress: string, amount: string): Promise<string> {
  const res = await sandbox('/sandbox/crypto/transfers', {
    network,
    to_address: toAddress,
    amount,
    currency: 'USDT',
  });
  expect(res.status, res.text).to.equal(201);
  return res.body.tx_hash;
}

export async function mine(network: Network, count: number): Promise<void> {
  const res = await sandbox(`/sandbox/chains/${network}/blocks`, { count });
  expect(res.status, res.text).to.equal(200);
}

export function confirmationsOf(network: Network): number {
  return network === 'TRON' ? deps().config.CONFIRMATIONS_TRON : deps().config.CONFIRMATIONS_BSC;
}

/**
 * One run of the settlement job, asserting that every rail was read, that none of this test
 * file's inflows failed to match, and that the hand-over of held money ran. An inflow of another
 * file that fails to match is that file's to report (it fails its own `settle()`), not this one's:
 * one broken test does not fail every later one. A rail read and the hand-over serve every tenant
 * at once, so their failures count for everyone.
 */
export async function settle(): Promise<SettlementRun> {
  const result = await runSettlementOnce(deps());
  expect(result.failedScans, 'rails that could not be read').to.deep.equal([]);
  const own = await ownInflows(result.matching.failedInflows);
  expect(own, `this file's inflows whose matching failed: ${own.join(', ')}`).to.deep.equal([]);
  expect(result.handedToRefund, 'the hand-over of money held against failed payouts').to.not.equal(null);
  return result;
}

const inflowTenants = statement(
  'test_inflow_tenants',
  'select id, tenant_id from inflows where id = any($1::uuid[]) order by id',
);

/** Those of `ids` that are inflows of tenants this test file made. */
async function ownInflows(ids: readonly string[]): Promise<string[]> {
  if (ids.length === 0) return [];
  const rows = await deps().sql.rows<{ id: string; tenant_id: string }>(inflowTenants, [ids]);
  return rows.filter((r) => isOwnTenant(r.tenant_id)).map((r) => r.id);
}

/** The inflow recorded for a transaction hash or bank session id, straight from the database. */
export async function inflowByRef(externalRef: string): Promise<Inflow | null> {
  return deps()
    .orm.em.fork()
    .findOne(Inflow, { externalRef }, { populate: ['payout'] });
}

/**
 * Waits until the sandbox bank's notification of a credit has been answered (the service answers
 * only after recording and matching it), then returns the recorded inflow.
 */
export async function handledCredit(sessionId: string): Promise<Inflow> {
  const credit = harness()
    .sandbox.bank.credits()
    .find((c) => c.sessionId === sessionId);
  if (!credit) throw new Error(`the sandbox bank made no credit ${sessionId}`);
  if (!credit.notification) throw new Error(`the sandbox bank was told not to notify credit ${sessionId}`);
  const delivery = await credit.notification.done;
  expect(delivery.status, `notification ${delivery.lastResponseStatus} ${delivery.lastError}`).to.equal(
    'DELIVERED',
  );
  const inflow = await inflowByRef(sessionId);
  if (!inflow) throw new Error(`bank credit ${sessionId} was delivered but not recorded`);
  return inflow;
}

/**
 * The merchant pays into a virtual account at the sandbox bank; returns the bank's answer. With
 * `callback: false` the bank never notifies the credit: only its statement shows it.
 */
export async function payBank(
  accountNumber: string,
  amount: string,
  options: { callback?: boolean } = {},
): Promise<any> {
  const res = await sandbox('/sandbox/bank/transfers', {
    account_number: accountNumber,
    amount,
    currency: 'NGN',
    ...options,
  });
  expect(res.status, res.text).to.equal(201);
  expect(res.body.callback).to.equal(options.callback ?? true);
  return res.body;
}

/**
 * Lets `ms` pass as it does with the rails running: the clock moves, each chain produces a block
 * (its time is the new now), and the settlement job reads every rail (the bank's statement too,
 * once its interval is up) before the instructions job ends what has lapsed.
 */
export async function lapse(ms: number): Promise<void> {
  harness().clock.advance(ms);
  for (const network of NETWORKS) await mine(network, 1);
  await settle();
  await runInstructionsOnce(deps());
}

/** Posts a bank credit notification to the service as the bank would, signed unless told otherwise. */
export async function postBankCallback(
  body: Record<string, unknown>,
  options: { signature?: string | null } = {},
): Promise<ApiResponse> {
  const raw = JSON.stringify(body);
  const headers: Record<string, string> = {};
  const signature =
    options.signature === undefined
      ? signCallback(deps().secrets.callbackSecret, raw, harness().clock.now().getTime() / 1000)
      : options.signature;
  if (signature !== null) headers[CALLBACK_SIGNATURE_HEADER] = signature;
  return call('POST', '/callbacks/bank', {
    rawBody: raw,
    headers: { 'content-type': 'application/json', ...headers },
    idempotencyKey: null,
  });
}

/** A credit notification body as the bank sends it. */
export function creditBody(overrides: Record<string, unknown>): Record<string, unknown> {
  return {
    event: 'credit',
    session_id: `000013${Date.now()}${Math.floor(Math.random() * 1e9)}`.slice(0, 30),
    account_number: '9000000000',
    amount: '1000.00',
    currency: 'NGN',
    payer_name: 'CHIOMA ADEYEMI',
    payer_account: '0123456789',
    occurred_at: harness().clock.now().toISOString(),
    ...overrides,
  };
}

/** An admin CLI command against the running service, as operators run it. */
export async function admin(...argv: string[]): Promise<any> {
  return run(argv, { serviceUrl: harness().url, token: harness().adminToken });
}
