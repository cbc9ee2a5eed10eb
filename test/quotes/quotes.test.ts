import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import { Corridors } from '#src/corridors/corridors.ts';
import { price } from '#src/corridors/pricing.ts';
import { toDecimal } from '#src/lib/money.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { Quote } from '#src/quotes/entities.ts';
import { useQuote } from '#src/quotes/service.ts';
import { rateFeedOf, sandboxMidRate } from '#src/sandbox/rates.ts';
import { type ApiResponse, call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';

const QUOTE_FIELDS = [
  'id',
  'rail',
  'exchange_rate',
  'spread',
  'destination_amount',
  'destination_currency',
  'settlement_amount',
  'settlement_currency',
  'platform_fee_amount',
  'platform_fee_currency',
  'network_fee_amount',
  'network_fee_currency',
  'total_fee_amount',
  'total_fee_currency',
  'provider',
  'status',
  'expires_at',
  'created_at',
];

const usdtToNgn = { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 150000 };

describe('quotes', () => {
  const corridors = Corridors.load();
  const ttl = () => harness().service.deps.config.QUOTE_TTL_MS;
  const em = () => harness().service.deps.orm.em.fork();
  let merchant: Merchant;

  before(async () => {
    merchant = await createMerchant({ scopes: ['rates:read'] });
  });

  async function create(body: object = usdtToNgn, who: Merchant = merchant): Promise<ApiResponse> {
    const res = await call('POST', '/v1/rates/quotes', { key: who.key, body });
    expect(res.status, res.text).to.equal(201);
    return res;
  }

  const accept = (id: string, options: { idempotencyKey?: string; who?: Merchant } = {}) =>
    call('POST', `/v1/rates/quotes/${id}/accept`, {
      key: (options.who ?? merchant).key,
      idempotencyKey: options.idempotencyKey,
    });

  const read = (id: string, who: Merchant = merchant) =>
    call('GET', `/v1/rates/quotes/${id}`, { key: who.key });

  const row = (id: string) => em().findOneOrFail(Quote, id);

  describe('POST /v1/rates/quotes', () => {
    it('freezes the market rate less the spread, every fee and a 30 s expiry, answering 201 PENDING', async () => {
      const now = harness().clock.now();
      const res = await create();
      expect(Object.keys(res.body)).to.deep.equal(QUOTE_FIELDS);

      const mid = sandboxMidRate(rateFeedOf(corridors), 'USDT', 'NGN', now);
      const ng = corridors.byCurrency('NGN')!;
      const expected = price({
        destinationAmount: toDecimal(150000),
        settlementCurrency: 'USDT',
        midMarketRate: mid,
        pricing: corridors.pricing(ng, 'USDT')!,
        networkFee: corridors.networkFee('USDT', null),
      });
      expect(res.body).to.include({
        rail: 'CRYPTO',
        spread: 1,
        destination_amount: 150000,
        destination_currency: 'NGN',
        settlement_currency: 'USDT',
        platform_fee_currency: 'USDT',
        network_fee_amount: 1,
        network_fee_currency: 'USDT',
        total_fee_currency: 'USDT',
        provider: 'sandbox-feed',
        status: 'PENDING',
        created_at: now.toISOString(),
        expires_at: new Date(now.getTime() + ttl()).toISOString(),
      });
      // Exact digits on the wire, as JSON numbers.
      expect(res.text).to.include(`"exchange_rate":${expected.exchangeRate.toFixed()},`);
      expect(res.text).to.include(`"settlement_amount":${expected.settlementAmount.toFixed()},`);
      expect(res.text).to.include(`"platform_fee_amount":${expected.platformFee.toFixed()},`);
      expect(res.text).to.include(`"total_fee_amount":${expected.totalFee.toFixed()},`);

      const stored = await row(res.body.id);
      expect(stored.status).to.equal('PENDING');
      expect(stored.snapshot).to.include({ value: 'PENDING' });
      expect(toDecimal(stored.midMarketRate).toFixed()).to.equal(mid.toFixed());
    });

    it('quotes NGN paid out and settled in NGN at par on the bank rail, fees in NGN', async () => {
      const res = await create({
        settlement_currency: 'NGN',
        destination_currency: 'NGN',
        destination_amount: 100000.5,
      });
      expect(res.body).to.include({
        rail: 'BANK_TRANSFER',
        exchange_rate: 1,
        spread: 0,
        destination_amount: 100000.5,
        provider: 'par',
        network_fee_amount: 50,
        network_fee_currency: 'NGN',
        platform_fee_currency: 'NGN',
        total_fee_currency: 'NGN',
      });
      // 100000.50 x 0.25% + 100 = 350.00125 -> 350.00; + 50 network fee
      expect(res.body.platform_fee_amount).to.equal(350);
      expect(res.body.total_fee_amount).to.equal(400);
      expect(res.body.settlement_amount).to.equal(100400.5);
    });

    it('quotes a USDT payout settled in USDT with no spread', async () => {
      const res = await create({
        settlement_currency: 'USDT',
        destination_currency: 'USDT',
        destination_amount: 250.123456,
      });
      expect(res.body).to.include({ exchange_rate: 1, spread: 0, rail: 'CRYPTO' });
    });

    describe('validation', () => {
      it('names every missing field', async () => {
        const res = await call('POST', '/v1/rates/quotes', { key: merchant.key, body: {} });
        expect(res.status).to.equal(400);
        const error = errorOf(res);
        expect(error.code).to.equal('VALIDATION_FAILED');
        expect(error.details).to.have.deep.members([
          { field: 'settlement_currency', issue: 'is required' },
          { field: 'destination_currency', issue: 'is required' },
          { field: 'destination_amount', issue: 'is required' },
        ]);
      });

      for (const [label, amount] of [
        ['zero', 0],
        ['negative', -5],
        ['a string', '100'],
      ] as const) {
        it(`refuses a destination_amount that is ${label}`, async () => {
          const res = await call('POST', '/v1/rates/quotes', {
            key: merchant.key,
            body: { ...usdtToNgn, destination_amount: amount },
          });
          expect(res.status).to.equal(400);
          expect(errorOf(res).details.map((d) => d.field)).to.deep.equal(['destination_amount']);
        });
      }

      it('refuses more decimals than the destination currency has', async () => {
        const res = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: { ...usdtToNgn, destination_amount: 100.001 },
        });
        expect(res.status).to.equal(400);
        expect(errorOf(res).details).to.deep.equal([
          { field: 'destination_amount', issue: 'NGN amounts have at most 2 decimal places' },
        ]);
      });

      it('refuses unknown fields and malformed currency codes', async () => {
        const res = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: { ...usdtToNgn, settlement_currency: 'usdt', quote_id: 'x' },
        });
        expect(res.status).to.equal(400);
        expect(errorOf(res).details.map((d) => d.field)).to.have.members(['settlement_currency', 'quote_id']);
      });

      it('refuses a settlement currency the corridor does not offer', async () => {
        const res = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: { settlement_currency: 'NGN', destination_currency: 'GHS', destination_amount: 100 },
        });
        expect(res.status).to.equal(422);
        const error = errorOf(res);
        expect(error.code).to.equal('CORRIDOR_NOT_SUPPORTED');
        expect(error.details.map((d) => d.field)).to.deep.equal(['settlement_currency']);
      });

      it('refuses a destination currency no corridor pays out as invalid', async () => {
        const res = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: { settlement_currency: 'USDT', destination_currency: 'ZAR', destination_amount: 100 },
        });
        expect(res.status).to.equal(400);
        const error = errorOf(res);
        expect(error.code).to.equal('VALIDATION_FAILED');
        expect(error.details.map((d) => d.field)).to.deep.equal(['destination_currency']);
      });
    });

    describe('idempotency', () => {
      it('replays the identical bytes for a retry with the same key and creates nothing new', async () => {
        const key = randomUUID();
        const first = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: usdtToNgn,
          idempotencyKey: key,
        });
        expect(first.status).to.equal(201);
        const count = await em().count(Quote, { tenant: merchant.tenantId });
        // Even once the market has moved and the quote has lapsed, the retry answers the original.
        harness().clock.advance(ttl() + 1);
        const retry = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: usdtToNgn,
          idempotencyKey: key,
        });
        expect(retry.status).to.equal(201);
        expect(retry.text).to.equal(first.text);
        expect(retry.headers.get('idempotent-replayed')).to.equal('true');
        expect(await em().count(Quote, { tenant: merchant.tenantId })).to.equal(count);
      });

      it('refuses the same key with a different body', async () => {
        const key = randomUUID();
        await call('POST', '/v1/rates/quotes', { key: merchant.key, body: usdtToNgn, idempotencyKey: key });
        const res = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: { ...usdtToNgn, destination_amount: 150001 },
          idempotencyKey: key,
        });
        expect(res.status).to.equal(422);
        expect(errorOf(res).code).to.equal('IDEMPOTENCY_KEY_REUSED');
      });

      it('requires an Idempotency-Key', async () => {
        const res = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: usdtToNgn,
          idempotencyKey: null,
        });
        expect(res.status).to.equal(400);
        expect(errorOf(res).code).to.equal('IDEMPOTENCY_KEY_REQUIRED');
      });

      it('keeps a refused request from using up its key', async () => {
        const key = randomUUID();
        const refused = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: { ...usdtToNgn, settlement_currency: 'NGN', destination_currency: 'KES' },
          idempotencyKey: key,
        });
        expect(refused.status).to.equal(422);
        const fixed = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: usdtToNgn,
          idempotencyKey: key,
        });
        expect(fixed.status).to.equal(201);
      });
    });
    describe('when the rate source is down', () => {
      afterEach(() => sinon.restore());

      it('answers 503, stores nothing and leaves the Idempotency-Key free for the retry', async () => {
        const rates = harness().service.deps.providers.rates;
        sinon.stub(rates, 'midMarket').rejects(new ProviderUnavailableError('rates', 'timed out'));
        const key = randomUUID();
        const count = await em().count(Quote, { tenant: merchant.tenantId });
        const res = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: usdtToNgn,
          idempotencyKey: key,
        });
        expect(res.status).to.equal(503);
        expect(errorOf(res).code).to.equal('UPSTREAM_UNAVAILABLE');
        expect(await em().count(Quote, { tenant: merchant.tenantId })).to.equal(count);
        sinon.restore();
        const retry = await call('POST', '/v1/rates/quotes', {
          key: merchant.key,
          body: usdtToNgn,
          idempotencyKey: key,
        });
        expect(retry.status).to.equal(201);
      });
    });
  });

  describe('GET /v1/rates/quotes/{id}', () => {
    it('answers the quote exactly as created', async () => {
      const created = await create();
      const res = await read(created.body.id);
      expect(res.status).to.equal(200);
      expect(res.text).to.equal(created.text);
    });

    it('reads a lapsed quote as EXPIRED, from the expiry instant on, without writing anything', async () => {
      const created = await create();
      harness().clock.advance(ttl() - 1);
      expect((await read(created.body.id)).body.status).to.equal('PENDING');
      harness().clock.advance(1);
      const res = await read(created.body.id);
      expect(res.body.status).to.equal('EXPIRED');
      expect({ ...res.body, status: 'PENDING' }).to.deep.equal(created.body);
      expect((await row(created.body.id)).status).to.equal('PENDING');
    });

    it("answers 404 for another tenant's quote, an unknown id and a malformed id alike", async () => {
      const created = await create();
      const stranger = await createMerchant({ scopes: ['rates:read'] });
      for (const res of [
        await read(created.body.id, stranger),
        await read(randomUUID()),
        await read('not-a-quote-id'),
      ]) {
        expect(res.status).to.equal(404);
        expect(errorOf(res).code).to.equal('QUOTE_NOT_FOUND');
      }
    });
  });

  describe('POST /v1/rates/quotes/{id}/accept', () => {
    it('accepts a PENDING quote and keeps the price', async () => {
      const created = await create();
      const res = await accept(created.body.id);
      expect(res.status).to.equal(200);
      expect(res.body).to.deep.equal({ ...created.body, status: 'ACCEPTED' });
      expect((await read(created.body.id)).body.status).to.equal('ACCEPTED');
      const stored = await row(created.body.id);
      expect(stored.status).to.equal('ACCEPTED');
      expect(stored.snapshot).to.include({ value: 'ACCEPTED' });
    });

    it('returns an ACCEPTED quote unchanged when accepted again with a new key', async () => {
      const created = await create();
      const first = await accept(created.body.id);
      const again = await accept(created.body.id);
      expect(again.status).to.equal(200);
      expect(again.headers.get('idempotent-replayed')).to.equal(null);
      expect(again.text).to.equal(first.text);
    });

    it('replays the first answer for a retry with the same key', async () => {
      const created = await create();
      const key = randomUUID();
      const first = await accept(created.body.id, { idempotencyKey: key });
      const retry = await accept(created.body.id, { idempotencyKey: key });
      expect(retry.status).to.equal(200);
      expect(retry.headers.get('idempotent-replayed')).to.equal('true');
      expect(retry.text).to.equal(first.text);
    });

    it('answers 409 QUOTE_EXPIRED for a lapsed quote and records the expiry', async () => {
      const created = await create();
      harness().clock.advance(ttl() + 1);
      const res = await accept(created.body.id);
      expect(res.status).to.equal(409);
      const error = errorOf(res);
      expect(error.code).to.equal('QUOTE_EXPIRED');
      expect(error.details.map((d) => d.field)).to.deep.equal(['id']);
      const stored = await row(created.body.id);
      expect(stored.status).to.equal('EXPIRED');
      expect(stored.snapshot).to.include({ value: 'EXPIRED', status: 'done' });
      // Asked again, the (now persisted) expiry answers the same.
      const again = await accept(created.body.id);
      expect(again.status).to.equal(409);
      expect(errorOf(again).code).to.equal('QUOTE_EXPIRED');
      expect((await read(created.body.id)).body.status).to.equal('EXPIRED');
    });

    it('answers 409 QUOTE_EXPIRED for an ACCEPTED quote that has lapsed since', async () => {
      const created = await create();
      await accept(created.body.id);
      harness().clock.advance(ttl());
      const res = await accept(created.body.id);
      expect(res.status).to.equal(409);
      expect(errorOf(res).code).to.equal('QUOTE_EXPIRED');
      expect((await row(created.body.id)).status).to.equal('EXPIRED');
    });

    it('answers 409 QUOTE_NOT_ACCEPTABLE for a quote a payout has used', async () => {
      const created = await create();
      await em().transactional((tx) =>
        useQuote(tx, {
          tenantId: merchant.tenantId,
          quoteId: created.body.id,
          payoutId: randomUUID(),
          now: harness().clock.now(),
          settlementCurrency: 'USDT',
          destinationCurrency: 'NGN',
          destinationAmount: toDecimal(150000),
        }),
      );
      const res = await accept(created.body.id);
      expect(res.status).to.equal(409);
      expect(errorOf(res).code).to.equal('QUOTE_NOT_ACCEPTABLE');
      expect((await read(created.body.id)).body.status).to.equal('USED');
      // A used quote stays USED even after its expiry instant.
      harness().clock.advance(ttl() + 1);
      expect((await read(created.body.id)).body.status).to.equal('USED');
    });

    it("answers 404 for another tenant's quote and leaves it alone", async () => {
      const created = await create();
      const stranger = await createMerchant({ scopes: ['rates:read'] });
      const res = await accept(created.body.id, { who: stranger });
      expect(res.status).to.equal(404);
      expect(errorOf(res).code).to.equal('QUOTE_NOT_FOUND');
      expect((await row(created.body.id)).status).to.equal('PENDING');
    });

    it('answers 404 for a malformed id', async () => {
      const res = await accept('not-a-quote-id');
      expect(res.status).to.equal(404);
      expect(errorOf(res).code).to.equal('QUOTE_NOT_FOUND');
    });

    it('takes no body', async () => {
      const created = await create();
      const res = await call('POST', `/v1/rates/quotes/${created.body.id}/accept`, {
        key: merchant.key,
        body: { status: 'ACCEPTED' },
      });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details.map((d) => d.field)).to.deep.equal(['status']);
    });

    it('requires an Idempotency-Key', async () => {
      const created = await create();
      const res = await call('POST', `/v1/rates/quotes/${created.body.id}/accept`, {
        key: merchant.key,
        idempotencyKey: null,
      });
      expect(res.status).to.equal(400);
      expect(errorOf(res).code).to.equal('IDEMPOTENCY_KEY_REQUIRED');
    });
  });

  describe('security', () => {
    it('needs rates:read for every quote operation', async () => {
      const created = await create();
      const other = await createMerchant({ scopes: ['payouts:read', 'payouts:write'] });
      for (const res of [
        await call('POST', '/v1/rates/quotes', { key: other.key, body: usdtToNgn }),
        await read(created.body.id, other),
        await accept(created.body.id, { who: other }),
      ]) {
        expect(res.status).to.equal(403);
        expect(errorOf(res).code).to.equal('INSUFFICIENT_SCOPES');
      }
    });
  });
});
