import { expect } from 'chai';
import { RateLimiter, rateLimitField } from '#src/http/rate-limit.ts';

describe('rate limiter', () => {
  it('allows a burst, then refills at the configured rate, per key', () => {
    const limiter = new RateLimiter({ perSecond: 10, burst: 3 });
    expect([0, 0, 0].map(() => limiter.take('k', 1000).allowed)).to.deep.equal([true, true, true]);
    expect(limiter.take('k', 1000)).to.include({ allowed: false, retryAfter: 1 });
    expect(limiter.take('other', 1000).allowed).to.equal(true);
    expect(limiter.take('k', 1100).allowed).to.equal(true);
    expect(limiter.take('k', 1100).allowed).to.equal(false);
  });

  it('states its policy as a bucket of `burst` requests refilled in whole seconds', () => {
    expect(new RateLimiter({ perSecond: 50, burst: 100 }).policy).to.equal('"api-key";q=100;w=2');
    // 100 requests refill in 3.3 s at 30/s: the window rounds up, never promising more than allowed.
    expect(new RateLimiter({ perSecond: 30, burst: 100 }).policy).to.equal('"api-key";q=100;w=4');
    expect(new RateLimiter({ perSecond: 500, burst: 100 }).policy).to.equal('"api-key";q=100;w=1');
  });

  it('says what is left in the bucket and when it is full again', () => {
    const limiter = new RateLimiter({ perSecond: 2, burst: 10 });
    expect(rateLimitField(limiter.take('k', 0))).to.equal('"api-key";r=9;t=1');
    for (let i = 0; i < 8; i++) limiter.take('k', 0);
    expect(rateLimitField(limiter.take('k', 0))).to.equal('"api-key";r=0;t=5');
  });

  it('when refused, points the window and Retry-After at the next allowed request', () => {
    const limiter = new RateLimiter({ perSecond: 0.5, burst: 1 });
    limiter.take('k', 0);
    const refused = limiter.take('k', 500);
    // One token every 2 s; a quarter of it has come back after 0.5 s: 1.5 s left, rounded up.
    expect(refused).to.deep.equal({ allowed: false, remaining: 0, resetSeconds: 2, retryAfter: 2 });
    expect(rateLimitField(refused)).to.equal('"api-key";r=0;t=2');
  });
});
