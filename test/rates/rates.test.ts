import { expect } from 'chai';
import { Corridors } from '#src/corridors/corridors.ts';
import { toDecimal } from '#src/lib/money.ts';
import { rateFeedOf, sandboxMidRate } from '#src/sandbox/rates.ts';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';

const RATE_FIELDS = [
  'settlement_currency',
  'destination_currency',
  'rate',
  'mid_market_rate',
  'spread_percent',
  'rail',
  'source',
  'as_of',
];

describe('GET /v1/rates: indicative rate', () => {
  const feed = rateFeedOf(Corridors.load());
  let merchant: Merchant;

  before(async () => {
    merchant = await createMerchant({ scopes: ['rates:read'] });
  });

  describe('happy cases', () => {
    it('answers the USDT to NGN mid-market rate less the 1% spread of the corridor, as of now', async () => {
      const now = harness().clock.now();
      const res = await call('GET', '/v1/rates?from=USDT&to=NGN', { key: merchant.key });
      expect(res.status).to.equal(200);
      expect(Object.keys(res.body)).to.have.members(RATE_FIELDS);
      const mid = sandboxMidRate(feed, 'USDT', 'NGN', now);
      expect(res.body).to.include({
        settlement_currency: 'USDT',
        destination_currency: 'NGN',
        spread_percent: 1,
        rail: 'CRYPTO',
        source: 'sandbox-feed',
        as_of: now.toISOString(),
      });
      expect(toDecimal(res.text.match(/"mid_market_rate":([\d.]+)/)![1]!).toFixed()).to.equal(mid.toFixed());
      const expected = mid.times('0.99').precision(10, 1);
      expect(res.text).to.include(`"rate":${expected.toFixed()},`);
    });

    it('settles in USDT when from is left out', async () => {
      const res = await call('GET', '/v1/rates?to=KES', { key: merchant.key });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({
        settlement_currency: 'USDT',
        destination_currency: 'KES',
        rail: 'CRYPTO',
      });
      expect(res.body.spread_percent).to.equal(1.2);
    });

    it('prices NGN settled in NGN at par on the bank rail, without asking the market', async () => {
      const res = await call('GET', '/v1/rates?from=NGN&to=NGN', { key: merchant.key });
      expect(res.status).to.equal(200);
      expect(res.body).to.include({
        settlement_currency: 'NGN',
        destination_currency: 'NGN',
        rate: 1,
        mid_market_rate: 1,
        spread_percent: 0,
        rail: 'BANK_TRANSFER',
        source: 'par',
      });
    });

    it('moves with the market and matches the exchange rate a quote freezes at the same moment', async () => {
      const before = await call('GET', '/v1/rates?from=USDT&to=GHS', { key: merchant.key });
      harness().clock.advance(20_000);
      const after = await call('GET', '/v1/rates?from=USDT&to=GHS', { key: merchant.key });
      expect(after.body.rate).to.not.equal(before.body.rate);
      const quote = await call('POST', '/v1/rates/quotes', {
        key: merchant.key,
        body: { settlement_currency: 'USDT', destination_currency: 'GHS', destination_amount: 1000 },
      });
      expect(quote.status).to.equal(201);
      expect(quote.body.exchange_rate).to.equal(after.body.rate);
    });
  });

  describe('error cases', () => {
    it('refuses a settlement currency other than USDT or NGN, naming from', async () => {
      const res = await call('GET', '/v1/rates?from=KES&to=NGN', { key: merchant.key });
      expect(res.status).to.equal(400);
      const error = errorOf(res);
      expect(error.code).to.equal('VALIDATION_FAILED');
      expect(error.details).to.deep.equal([{ field: 'from', issue: 'must be one of USDT, NGN' }]);
    });

    it('refuses NGN settlement for a corridor that only settles in USDT, naming from', async () => {
      const res = await call('GET', '/v1/rates?from=NGN&to=KES', { key: merchant.key });
      expect(res.status).to.equal(422);
      const error = errorOf(res);
      expect(error.code).to.equal('CORRIDOR_NOT_SUPPORTED');
      expect(error.details.map((d) => d.field)).to.deep.equal(['from']);
    });

    it('refuses a destination currency no corridor pays out as invalid, naming to and the ones it takes', async () => {
      const res = await call('GET', '/v1/rates?from=USDT&to=ZAR', { key: merchant.key });
      expect(res.status).to.equal(400);
      const error = errorOf(res);
      expect(error.code).to.equal('VALIDATION_FAILED');
      expect(error.details).to.deep.equal([{ field: 'to', issue: 'must be one of NGN, KES, GHS, USDT' }]);
    });

    it('requires to', async () => {
      const res = await call('GET', '/v1/rates?from=USDT', { key: merchant.key });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details).to.deep.equal([{ field: 'to', issue: 'is required' }]);
    });

    it('names malformed and unknown query parameters', async () => {
      const res = await call('GET', '/v1/rates?from=usdt&to=N1&amount=5', { key: merchant.key });
      expect(res.status).to.equal(400);
      const error = errorOf(res);
      expect(error.code).to.equal('VALIDATION_FAILED');
      expect(error.details.map((d) => d.field)).to.have.members(['from', 'to', 'amount']);
    });
  });

  describe('security', () => {
    it('needs rates:read', async () => {
      const other = await createMerchant({ scopes: ['payouts:read'] });
      const res = await call('GET', '/v1/rates?from=USDT&to=NGN', { key: other.key });
      expect(res.status).to.equal(403);
      expect(errorOf(res).code).to.equal('INSUFFICIENT_SCOPES');
    });

    it('needs an API key', async () => {
      const res = await call('GET', '/v1/rates?from=USDT&to=NGN');
      expect(res.status).to.equal(401);
    });
  });
});
