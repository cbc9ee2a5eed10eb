import { expect } from 'chai';
import type { Deps } from '#src/deps.ts';
import { RateLimiter } from '#src/http/rate-limit.ts';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';

/** The per-key limit as merchants see it: the draft's RateLimit-Policy and RateLimit on every response. */
describe('rate-limit headers', () => {
  let deps: Deps;
  let kept: RateLimiter;
  let merchant: Merchant;

  beforeEach(async () => {
    deps = harness().service.deps;
    kept = deps.rateLimiter;
    // A bucket of 3 that refills one request every 10 s of the test's clock.
    deps.rateLimiter = new RateLimiter({ perSecond: 0.1, burst: 3 });
    merchant = await createMerchant();
  });
  afterEach(() => {
    deps.rateLimiter = kept;
  });

  it('advertises the policy and counts down what is left, on successes and errors alike', async () => {
    const first = await call('GET', '/v1/payouts', { key: merchant.key });
    expect(first.status).to.equal(200);
    expect(first.headers.get('ratelimit-policy')).to.equal('"api-key";q=3;w=30');
    expect(first.headers.get('ratelimit')).to.equal('"api-key";r=2;t=10');

    const invalid = await call('GET', '/v1/payouts?limit=1000', { key: merchant.key });
    expect(invalid.status).to.equal(400);
    expect(invalid.headers.get('ratelimit-policy')).to.equal('"api-key";q=3;w=30');
    expect(invalid.headers.get('ratelimit')).to.equal('"api-key";r=1;t=20');
  });

  it('answers 429 with Retry-After once the bucket is empty, and lets the key through once it refilled', async () => {
    for (let i = 0; i < 3; i++)
      expect((await call('GET', '/v1/refunds', { key: merchant.key })).status).to.equal(200);
    const refused = await call('GET', '/v1/refunds', { key: merchant.key });
    expect(refused.status).to.equal(429);
    expect(errorOf(refused).code).to.equal('RATE_LIMITED');
    expect(refused.headers.get('retry-after')).to.equal('10');
    expect(refused.headers.get('ratelimit')).to.equal('"api-key";r=0;t=10');
    expect(refused.headers.get('ratelimit-policy')).to.equal('"api-key";q=3;w=30');

    // Another key has a bucket of its own.
    const other = await createMerchant();
    expect((await call('GET', '/v1/refunds', { key: other.key })).status).to.equal(200);

    harness().clock.advance(10_000);
    const again = await call('GET', '/v1/refunds', { key: merchant.key });
    expect(again.status).to.equal(200);
    expect(again.headers.get('ratelimit')).to.equal('"api-key";r=0;t=30');
  });

  it('counts writes and their replays, which carry the headers too', async () => {
    const idempotencyKey = '0b7c2f1e-8d4a-4b6e-9f3a-2c1d5e7f9a0b';
    const body = { webhook_url: 'https://merchant.example/hooks' };
    const first = await call('PUT', '/v1/webhooks/config', { key: merchant.key, body, idempotencyKey });
    const replay = await call('PUT', '/v1/webhooks/config', { key: merchant.key, body, idempotencyKey });
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect([first.headers.get('ratelimit'), replay.headers.get('ratelimit')]).to.deep.equal([
      '"api-key";r=2;t=10',
      '"api-key";r=1;t=20',
    ]);
  });

  it('shows no bucket to a caller without a valid key', async () => {
    const res = await call('GET', '/v1/payouts', { key: 'sk_not_a_key' });
    expect(res.status).to.equal(401);
    expect(res.headers.get('ratelimit-policy')).to.equal('"api-key";q=3;w=30');
    expect(res.headers.get('ratelimit')).to.equal(null);
  });

  it('advertises the policy on what is refused before the route: 405, 413, 415 and an unknown /v1 path', async () => {
    const refusals = [
      await call('DELETE', '/v1/payouts', { key: merchant.key }),
      await call('POST', '/v1/payouts', {
        key: merchant.key,
        rawBody: 'x'.repeat(1024 * 1024 + 1),
        headers: { 'content-type': 'application/json' },
      }),
      await call('POST', '/v1/payouts', {
        key: merchant.key,
        rawBody: 'destination_type=BANK_ACCOUNT',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      }),
      await call('GET', '/v1/no-such-thing', { key: merchant.key }),
    ];
    expect(refusals.map((r) => [r.status, errorOf(r).code])).to.deep.equal([
      [405, 'METHOD_NOT_ALLOWED'],
      [413, 'PAYLOAD_TOO_LARGE'],
      [415, 'UNSUPPORTED_MEDIA_TYPE'],
      [404, 'ROUTE_NOT_FOUND'],
    ]);
    for (const r of refusals) expect(r.headers.get('ratelimit-policy')).to.equal('"api-key";q=3;w=30');
    // Outside the merchant API there is no bucket to speak of.
    const health = await call('GET', '/health/live');
    expect(health.headers.get('ratelimit-policy')).to.equal(null);
  });
});
