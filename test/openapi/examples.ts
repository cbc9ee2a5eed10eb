import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import { runDispatchOnce } from '#src/dispatch/job.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import type { ErrorCode } from '#src/http/errors.ts';
import { RateLimiter } from '#src/http/rate-limit.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import type { Scope } from '#src/tenants/scopes.ts';
import { type ApiResponse, type CallOptions, call, createMerchant, type Merchant } from '../client.ts';
import { callbacksDelivered, mine, settleThroughSandbox } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { cliAs } from '../operators/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { handledCredit, lapse, payBank } from '../settlement/fixtures.ts';
import { deliverFor, startReceiver } from '../webhooks/receiver.ts';
import { type OpenApi, operations } from './document.ts';

/**
 * The scenario behind the OpenAPI document's examples: a merchant's day in the sandbox, every
 * operation called for real against the running service, every error code each operation declares
 * provoked for real, and the payload of every webhook event taken from what the service sends.
 * `npm run docs:examples` runs it and writes `src/docs/examples.json`; a test runs it again against
 * the test service, so that it cannot rot.
 */

/** Where the recording is committed; the OpenAPI generator reads it. */
export const EXAMPLES_FILE = new URL('../../src/docs/examples.json', import.meta.url);

export interface RequestExample {
  path?: Record<string, string>;
  query?: Record<string, string>;
  body?: unknown;
}

export interface OperationExample {
  name: string;
  summary: string;
  request: RequestExample;
  /** `mediaType`: the response's media type when it is not JSON (then `body` is its text). */
  response: { status: number; body: unknown; mediaType?: string };
}

export interface Recording {
  operations: Record<string, OperationExample[]>;
  errors: Record<string, { summary: string; value: unknown }>;
  webhooks: Record<string, unknown>;
}

const TRON_ADDRESS = 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy';
const TRON_DEAD = 'TLsV52sRDL79HXGGm9yzwKibb6Beradead';

/** Realistic bodies, one per shape of each request. */
const bankPayout = (suffix = '5678', overrides: Record<string, unknown> = {}) => ({
  destination_type: 'BANK_ACCOUNT',
  destination_country: 'NG',
  destination_currency: 'NGN',
  destination_amount: 150000,
  destination_account_unique: `023456${suffix}`,
  destination_provider_name: 'Guaranty Trust Bank',
  destination_provider_code: '058',
  destination_account_name: 'ADAEZE OKONKWO',
  merchant_reference: 'INV-2026-0042',
  ...overrides,
});

const mobilePayout = {
  destination_type: 'MOBILE_MONEY',
  destination_country: 'KE',
  destination_currency: 'KES',
  destination_amount: 2500,
  destination_account_unique: '+254712345678',
  destination_provider_name: 'M-Pesa',
  destination_provider_code: 'MPESA',
  destination_account_name: 'WANJIKU KAMAU',
  merchant_reference: 'PAYROLL-KE-0007',
  metadata: { employee_id: 'EMP-0193', payroll_run: '2026-11' },
};

const cryptoPayout = {
  destination_type: 'CRYPTO_WALLET',
  destination_country: 'AE',
  destination_currency: 'USDT',
  destination_amount: 1250.5,
  destination_account_unique: 'TQrZ9wBzcTqJXbjgDKJ8mA2WUv5xG7Ps3K',
  destination_provider_name: 'TRON',
  merchant_reference: 'VENDOR-0311',
};

class Recorder {
  readonly recording: Recording = { operations: {}, errors: {}, webhooks: {} };
  readonly #routes = new Map<string, { method: string; path: string }>();

  constructor(doc: OpenApi) {
    for (const { method, path, op } of operations(doc)) this.#routes.set(op.operationId, { method, path });
  }

  #send(operationId: string, merchant: Merchant | null, request: RequestExample, options: CallOptions = {}) {
    const route = this.#routes.get(operationId);
    if (!route) throw new Error(`the document has no operation ${operationId}`);
    let path = route.path.replace(/\{(\w+)\}/g, (_, name: string) => {
      const value = request.path?.[name];
      if (value === undefined) throw new Error(`${operationId}: path parameter ${name} not given`);
      return encodeURIComponent(value);
    });
    if (request.query) path += `?${new URLSearchParams(request.query)}`;
    return call(route.method, path, {
      key: merchant?.key ?? null,
      ...(request.body !== undefined ? { body: request.body } : {}),
      ...options,
    });
  }

  /** Calls an operation that must succeed and keeps the exchange as one of its examples. */
  async ok(
    operationId: string,
    merchant: Merchant,
    example: { name: string; summary: string } & RequestExample,
  ): Promise<ApiResponse> {
    const { name, summary, ...request } = example;
    const res = await this.#send(operationId, merchant, request);
    expect(res.status, `${operationId} ${name}: ${res.text}`).to.be.within(200, 299);
    const examples = this.recording.operations[operationId] ?? [];
    examples.push({ name, summary, request, response: { status: res.status, body: res.body } });
    this.recording.operations[operationId] = examples;
    return res;
  }

  /**
   * Calls an operation that must succeed with `mediaType` (asked for in `Accept`) and keeps the
   * text it answered as that media type's example.
   */
  async okAs(
    mediaType: string,
    operationId: string,
    merchant: Merchant,
    example: { name: string; summary: string } & RequestExample,
  ): Promise<ApiResponse> {
    const { name, summary, ...request } = example;
    const res = await this.#send(operationId, merchant, request, { headers: { accept: mediaType } });
    expect(res.status, `${operationId} ${name}: ${res.text}`).to.be.within(200, 299);
    expect(res.headers.get('content-type'), `${operationId} ${name}`).to.match(new RegExp(`^${mediaType}`));
    const examples = this.recording.operations[operationId] ?? [];
    examples.push({ name, summary, request, response: { status: res.status, body: res.text, mediaType } });
    this.recording.operations[operationId] = examples;
    return res;
  }

  /** Calls an operation in a way that must fail with `code` and keeps the envelope as that code's example. */
  async error(
    code: ErrorCode,
    summary: string,
    operationId: string,
    merchant: Merchant | null,
    request: RequestExample = {},
    options: CallOptions = {},
  ): Promise<void> {
    const res = await this.#send(operationId, merchant, request, options);
    expect(res.body?.error?.code, `${code} from ${operationId}: ${res.status} ${res.text}`).to.equal(code);
    this.recording.errors[code] = { summary, value: res.body };
  }
}

const deps = () => harness().service.deps;

async function merchant(name: string, options: { approved?: boolean; scopes?: Scope[] } = {}) {
  return createMerchant({ name, ...options });
}

/** The event payloads the service wrote for these payouts, exactly as it delivers them. */
async function eventPayloads(payoutIds: string[]): Promise<Map<string, unknown>> {
  const events = await deps()
    .orm.em.fork()
    .find(OutboxEvent, { payoutId: { $in: payoutIds } }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  const byType = new Map<string, unknown>();
  for (const event of events)
    if (!byType.has(event.eventType)) byType.set(event.eventType, JSON.parse(event.payload));
  return byType;
}

/** Runs the scenario against the running service and sandbox; returns what it recorded. */
export async function recordExamples(doc: OpenApi): Promise<Recording> {
  const r = new Recorder(doc);
  const acme = await merchant('Acme Remittances Ltd');

  // Webhooks: configuration (the URL a merchant would use) and rotation.
  await r.ok('setWebhookConfig', acme, {
    name: 'first',
    summary: 'The first configuration issues the signing secret, shown once',
    body: { webhook_url: 'https://hooks.acme-remit.example/payouts' },
  });
  await r.ok('getWebhookConfig', acme, { name: 'configured', summary: 'A configured, signed webhook' });
  await r.ok('rotateWebhookSecret', acme, {
    name: 'rotated',
    summary: 'A new secret, in force at once (the old one stops verifying)',
  });
  const ping = await r.ok('sendWebhookTest', acme, {
    name: 'queued',
    summary: 'A signed webhook.test event on its way to the configured URL',
  });
  const pingEvent = await deps().orm.em.fork().findOneOrFail(OutboxEvent, { id: ping.body.event_id });
  r.recording.webhooks[pingEvent.eventType] = JSON.parse(pingEvent.payload);

  // Banks and name enquiry.
  await r.ok('listBanks', acme, {
    name: 'nigerianBanks',
    summary: 'Nigerian banks',
    query: { country: 'NG', destination_type: 'BANK_ACCOUNT' },
  });
  await r.ok('listBanks', acme, {
    name: 'kenyanMobileMoney',
    summary: 'Kenyan mobile money providers',
    query: { country: 'KE', currency: 'KES', destination_type: 'MOBILE_MONEY' },
  });
  await r.ok('resolveAccount', acme, {
    name: 'bankAccount',
    summary: 'Name enquiry on a Nigerian bank account',
    body: {
      destination_type: 'BANK_ACCOUNT',
      destination_currency: 'NGN',
      destination_account_unique: '0234565678',
      destination_provider_code: '058',
    },
  });

  // Refund destinations, needed before payouts.
  await r.ok('setRefundDestination', acme, {
    name: 'usdtOnTron',
    summary: 'USDT refunds to a TRON address',
    body: { currency: 'USDT', type: 'CRYPTO_ADDRESS', network: 'TRON', address: TRON_ADDRESS },
  });
  await r.ok('setRefundDestination', acme, {
    name: 'ngnBankAccount',
    summary: 'NGN refunds to a Nigerian bank account, verified by name enquiry',
    body: { currency: 'NGN', type: 'BANK_ACCOUNT', bank_code: '058', account_number: '0123456789' },
  });
  await r.ok('listRefundDestinations', acme, { name: 'both', summary: 'One destination per currency' });

  // Rates and quotes.
  await r.ok('getIndicativeRate', acme, {
    name: 'usdtToNgn',
    summary: 'USDT to NGN',
    query: { from: 'USDT', to: 'NGN' },
  });
  const quote = await r.ok('createQuote', acme, {
    name: 'usdtToNgn',
    summary: 'The price of paying out 150,000 NGN, settled in USDT',
    body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 150000 },
  });
  await r.ok('getQuote', acme, {
    name: 'pending',
    summary: 'A quote within its TTL',
    path: { id: quote.body.id },
  });
  await r.ok('acceptQuote', acme, { name: 'accepted', summary: 'Accepted', path: { id: quote.body.id } });

  // Payouts: one per destination type and rail; the first uses the accepted quote.
  const paid = await r.ok('createPayout', acme, {
    name: 'bankAccount',
    summary: 'To a Nigerian bank account, settled in USDT at a quoted price',
    body: bankPayout('5678', { quote_id: quote.body.id }),
  });
  await r.ok('createPayout', acme, {
    name: 'mobileMoney',
    summary: 'To a Kenyan M-Pesa wallet',
    body: mobilePayout,
  });
  await r.ok('createPayout', acme, {
    name: 'cryptoWallet',
    summary: 'USDT to a TRON wallet',
    body: cryptoPayout,
  });
  const ngnRail = await r.ok('createPayout', acme, {
    name: 'ngnSettlement',
    summary: 'Settled by NGN bank transfer to a virtual account',
    body: bankPayout('4321', { settlement_currency: 'NGN', merchant_reference: 'INV-2026-0043' }),
  });
  await r.error(
    'PAYMENT_INSTRUCTION_NOT_FOUND',
    'The instruction is not generated yet',
    'getPaymentInstruction',
    acme,
    { path: { payout_id: paid.body.id } },
  );
  await runInstructionsOnce(deps());
  await r.ok('getPayout', acme, {
    name: 'pendingPayment',
    summary: 'Awaiting payment: pay expected_amount to account_unique before expires_at',
    path: { id: paid.body.id },
  });
  await r.ok('getPaymentInstruction', acme, {
    name: 'usdtOnTron',
    summary: 'USDT to the merchant’s TRON deposit address',
    path: { payout_id: paid.body.id },
  });
  await r.ok('getPaymentInstruction', acme, {
    name: 'ngnVirtualAccount',
    summary: 'NGN to a virtual bank account',
    path: { payout_id: ngnRail.body.id },
  });

  // The quoted payout is paid, dispatched and succeeds.
  await settleThroughSandbox(paid.body.id);
  await runDispatchOnce(deps());
  const outflows = await call('GET', `/v1/payouts/${paid.body.id}/outflows`, { key: acme.key });
  await callbacksDelivered(outflows.body[0].id);
  await r.ok('getPayout', acme, {
    name: 'successful',
    summary: 'Paid: the whole timeline',
    path: { id: paid.body.id },
  });
  await r.ok('listPayoutOutflows', acme, {
    name: 'paid',
    summary: 'One attempt, successful',
    path: { payout_id: paid.body.id },
  });
  await r.ok('getOutflow', acme, {
    name: 'successful',
    summary: 'A successful attempt',
    path: { id: outflows.body[0].id },
  });
  const inflows = await r.ok('listInflows', acme, { name: 'matched', summary: 'The settlement received' });
  await r.ok('getInflow', acme, {
    name: 'matched',
    summary: 'USDT on TRON, confirmed and matched',
    path: { id: inflows.body.data[0].id },
  });

  // A payout to a closed account (magic 1001) fails after its settlement arrived: refunded.
  const failed = await call('POST', '/v1/payouts', {
    key: acme.key,
    body: bankPayout('1001', { merchant_reference: 'INV-2026-0044' }),
  });
  await runInstructionsOnce(deps());
  await settleThroughSandbox(failed.body.id);
  await runDispatchOnce(deps());
  await runRefundsOnce(deps());
  await mine('TRON');
  harness().clock.advance(10_000);
  await runRefundsOnce(deps());
  const refunds = await r.ok('listPayoutRefunds', acme, {
    name: 'refunded',
    summary: 'The refund of a payout that failed after its settlement arrived',
    path: { payout_id: failed.body.id },
  });
  await r.ok('getRefund', acme, {
    name: 'successful',
    summary: 'Back with the merchant',
    path: { id: refunds.body[0].id },
  });
  await r.ok('listPayoutMoneyMovements', acme, {
    name: 'paidOut',
    summary: 'Received, converted, paid out, fees kept: zero in every currency',
    path: { payout_id: paid.body.id },
  });
  await r.ok('listPayoutMoneyMovements', acme, {
    name: 'refunded',
    summary: 'Received, then refunded less the refund fee: zero',
    path: { payout_id: failed.body.id },
  });
  await r.ok('listMoneyMovements', acme, {
    name: 'all',
    summary: 'Every movement of every payout, newest first',
    query: { limit: '5' },
  });
  await r.ok('listMoneyMovements', acme, {
    name: 'fees',
    summary: 'The platform fees of one payout',
    query: { payout_id: paid.body.id, type: 'platform_fee' },
  });
  const now = deps().clock.now();
  const csv = await r.okAs('text/csv', 'listMoneyMovements', acme, {
    name: 'csv',
    summary: 'One payout’s movements of the last day as CSV (Accept: text/csv): every page, one file',
    query: {
      payout_id: paid.body.id,
      created_after: new Date(now.getTime() - 86_400_000).toISOString(),
      created_before: new Date(now.getTime() + 1000).toISOString(),
    },
  });
  const [header, ...rows] = csv.text.trim().split('\r\n');
  expect(header).to.equal('id,payout_id,type,amount,currency,created_at,source_object,source_id');
  expect(rows.length, 'the paid payout’s movements').to.be.at.least(4);
  await r.ok('listRefunds', acme, { name: 'all', summary: 'Every refund, newest first' });
  await r.ok('getPayout', acme, {
    name: 'refunded',
    summary: 'Failed at the processor (ACCOUNT_CLOSED) and refunded',
    path: { id: failed.body.id },
  });

  // An NGN payout paid short is held for review.
  const instruction = await call('GET', `/v1/payouts/${ngnRail.body.id}/payment-instruction`, {
    key: acme.key,
  });
  const short = await payBank(instruction.body.account_unique, '1000.00');
  await handledCredit(short.session_id);

  // Lists, first page and the next.
  const page = await r.ok('listPayouts', acme, {
    name: 'firstPage',
    summary: 'The two newest payouts; more follow',
    query: { limit: '2' },
  });
  await r.ok('listPayouts', acme, {
    name: 'nextPage',
    summary: 'The next page: pass meta.next_cursor as cursor',
    query: { limit: '2', cursor: page.body.meta.next_cursor },
  });

  // A refund to a dead address fails (another merchant, so that acme's destinations stay as shown).
  const beta = await merchant('Beta Payroll GmbH');
  await call('PUT', '/v1/refund-destinations', {
    key: beta.key,
    body: { currency: 'USDT', type: 'CRYPTO_ADDRESS', network: 'TRON', address: TRON_DEAD },
  });
  const receiver = await startReceiver();
  try {
    await call('PUT', '/v1/webhooks/config', {
      key: beta.key,
      body: { webhook_url: `${receiver.url}/webhooks` },
    });
    const doomed = await call('POST', '/v1/payouts', { key: beta.key, body: bankPayout('1001') });
    await runInstructionsOnce(deps());
    await settleThroughSandbox(doomed.body.id);
    await runDispatchOnce(deps());
    await runRefundsOnce(deps());
    await deliverFor([beta]);
    await r.ok('listWebhookDeliveries', beta, {
      name: 'delivered',
      summary: 'Every attempt of every event, newest first',
      query: { limit: '3' },
    });

    // The last payout's instruction lapses with nothing paid: EXPIRED.
    const lapsing = await call('POST', '/v1/payouts', { key: acme.key, body: mobilePayout });
    await runInstructionsOnce(deps());
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 60_000);

    const payloads = await eventPayloads([
      paid.body.id,
      failed.body.id,
      ngnRail.body.id,
      doomed.body.id,
      lapsing.body.id,
    ]);
    for (const [type, payload] of payloads) r.recording.webhooks[type] = payload;
  } finally {
    await receiver.close();
  }

  await recordErrors(r, acme, quote.body.id);
  return r.recording;
}

/** Every error code the document declares, each provoked for real. */
async function recordErrors(r: Recorder, acme: Merchant, usedQuoteId: string): Promise<void> {
  const missing = randomUUID();
  const { destination_provider_code: _, destination_account_name: __, ...incomplete } = bankPayout();
  await r.error(
    'VALIDATION_FAILED',
    'A bank payout without provider code and account name',
    'createPayout',
    acme,
    {
      body: incomplete,
    },
  );
  await r.error('INVALID_CURSOR', 'A cursor this API did not issue for this list', 'listPayouts', acme, {
    query: { cursor: 'eyJsIjoicGF5b3V0cyJ9.forged' },
  });
  await r.error(
    'IDEMPOTENCY_KEY_REQUIRED',
    'A write without Idempotency-Key',
    'createPayout',
    acme,
    { body: bankPayout() },
    {
      idempotencyKey: null,
    },
  );
  await r.error(
    'IDEMPOTENCY_KEY_INVALID',
    'A UUID that is not version 4',
    'createPayout',
    acme,
    { body: bankPayout() },
    {
      idempotencyKey: '0193a5b2-7c1d-7e4f-9a0b-1c2d3e4f5a6b',
    },
  );
  await r.error('WEBHOOK_URL_INVALID', 'Plain HTTP to a public host', 'setWebhookConfig', acme, {
    body: { webhook_url: 'http://hooks.acme-remit.example/payouts' },
  });
  await r.error('UNAUTHENTICATED', 'No X-API-Key', 'listPayouts', null);
  const reader = await merchant('Acme read-only key', { scopes: ['payouts:read'] });
  await r.error('INSUFFICIENT_SCOPES', 'A read-only key creating a payout', 'createPayout', reader, {
    body: bankPayout(),
  });
  const pending = await merchant('Gamma Trading (KYB pending)', { approved: false });
  await r.error('TENANT_NOT_APPROVED', 'KYB not complete', 'createPayout', pending, { body: bankPayout() });
  await r.error(
    'WEBHOOK_URL_NOT_SET',
    'A test event before any webhook URL was set',
    'sendWebhookTest',
    pending,
  );
  await r.error('PAYOUT_NOT_FOUND', 'No such payout for this merchant', 'getPayout', acme, {
    path: { id: missing },
  });
  await r.error('QUOTE_NOT_FOUND', 'No such quote', 'getQuote', acme, { path: { id: missing } });
  await r.error('OUTFLOW_NOT_FOUND', 'No such outflow', 'getOutflow', acme, { path: { id: missing } });
  await r.error('INFLOW_NOT_FOUND', 'No such inflow', 'getInflow', acme, { path: { id: missing } });
  await r.error('REFUND_NOT_FOUND', 'No such refund', 'getRefund', acme, { path: { id: missing } });
  await r.error('QUOTE_NOT_ACCEPTABLE', 'The quote was already used by a payout', 'acceptQuote', acme, {
    path: { id: usedQuoteId },
  });
  const lapsed = await call('POST', '/v1/rates/quotes', {
    key: acme.key,
    body: { settlement_currency: 'USDT', destination_currency: 'KES', destination_amount: 2500 },
  });
  harness().clock.advance(deps().config.QUOTE_TTL_MS + 1000);
  await r.error('QUOTE_EXPIRED', 'Accepted after its TTL', 'acceptQuote', acme, {
    path: { id: lapsed.body.id },
  });
  const fresh = await call('POST', '/v1/rates/quotes', {
    key: acme.key,
    body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 100000 },
  });
  await r.error('QUOTE_MISMATCH', 'A quote priced for another amount', 'createPayout', acme, {
    body: bankPayout('5678', { quote_id: fresh.body.id }),
  });
  const careful = await payoutReadyMerchant();
  await cliAs()('tenant', 'payee-policy', careful.tenantId, '--policy', 'refuse');
  await r.error(
    'PAYEE_NAME_MISMATCH',
    'A name the bank does not hold for the account, under a policy that refuses such payouts',
    'createPayout',
    careful,
    { body: bankPayout('7891') },
  );
  await r.error(
    'PAYLOAD_TOO_LARGE',
    'A body over 1 MiB',
    'createPayout',
    acme,
    {},
    {
      rawBody: JSON.stringify({ merchant_reference: 'x'.repeat(1024 * 1024) }),
      headers: { 'content-type': 'application/json' },
    },
  );
  await r.error(
    'UNSUPPORTED_MEDIA_TYPE',
    'A form instead of JSON',
    'createPayout',
    acme,
    {},
    {
      rawBody: 'destination_type=BANK_ACCOUNT',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    },
  );
  const key = randomUUID();
  await call('POST', '/v1/payouts', { key: acme.key, body: mobilePayout, idempotencyKey: key });
  await r.error(
    'IDEMPOTENCY_KEY_REUSED',
    'The key of another request',
    'createPayout',
    acme,
    {
      body: { ...mobilePayout, destination_amount: 3000 },
    },
    { idempotencyKey: key },
  );
  const newcomer = await merchant('Delta Imports (no refund destination)');
  await r.error(
    'REFUND_DESTINATION_REQUIRED',
    'No refund destination for USDT yet',
    'createPayout',
    newcomer,
    {
      body: bankPayout(),
    },
  );
  await r.error(
    'BANK_ACCOUNT_VERIFICATION_FAILED',
    'The bank has no such account',
    'setRefundDestination',
    acme,
    {
      body: { currency: 'NGN', type: 'BANK_ACCOUNT', bank_code: '058', account_number: '0123450000' },
    },
  );
  await r.error('ACCOUNT_NOT_FOUND', 'The bank has no such account', 'resolveAccount', acme, {
    body: {
      destination_type: 'BANK_ACCOUNT',
      destination_currency: 'NGN',
      destination_account_unique: '0123450000',
      destination_provider_code: '058',
    },
  });
  await r.error('CORRIDOR_NOT_SUPPORTED', 'KES payouts settled in NGN', 'createPayout', acme, {
    body: { ...mobilePayout, settlement_currency: 'NGN' },
  });
  await r.error('PROVIDER_CODE_UNKNOWN', 'A bank code not in the directory', 'createPayout', acme, {
    body: bankPayout('5678', { destination_provider_code: '999' }),
  });

  // What the service answers when things beyond the merchant's request go wrong.
  const service = deps();
  const limiter = service.rateLimiter;
  // A small bucket, so that it runs dry in a few requests (the envelope is the same whatever the size).
  service.rateLimiter = new RateLimiter({ perSecond: 1, burst: 3 });
  try {
    for (let i = 0; i < 3; i++) await call('GET', '/v1/refund-destinations', { key: acme.key });
    await r.error(
      'RATE_LIMITED',
      'Over the key’s limit: wait Retry-After seconds',
      'listRefundDestinations',
      acme,
    );
  } finally {
    service.rateLimiter = limiter;
  }
  const rates = sinon
    .stub(service.providers.rates, 'midMarket')
    .rejects(new ProviderUnavailableError('rates', 'timed out'));
  try {
    await r.error('UPSTREAM_UNAVAILABLE', 'The rate source did not answer', 'getIndicativeRate', acme, {
      query: { from: 'USDT', to: 'GHS' },
    });
  } finally {
    rates.restore();
  }
  // The database drops the connection under the request: what node-postgres says then.
  const lost = sinon.stub(service.sql, 'rows').rejects(new Error('Connection terminated unexpectedly'));
  try {
    await r.error(
      'SERVICE_UNAVAILABLE',
      'The database connection was lost: retry after Retry-After seconds',
      'listRefundDestinations',
      acme,
    );
  } finally {
    lost.restore();
  }
  const broken = sinon.stub(service.corridors, 'find').throws(new Error('corridor table unreadable'));
  try {
    await r.error('INTERNAL_ERROR', 'Something failed on the service’s side', 'createPayout', acme, {
      body: mobilePayout,
    });
  } finally {
    broken.restore();
  }
}
