import { expect } from 'chai';
import { RateLimiter } from '#src/http/rate-limit.ts';

describe('rate limiter', () => {
  it('allows a burst, then refills at the configured rate, per key', () => {
    const limiter = new RateLimiter({ perSecond: 10, burst: 3 });
    expect([0, 0, 0].map(() => limiter.take('k', 1000))).to.deep.equal([0, 0, 0]);
    expect(limiter.take('k', 1000)).to.equal(100);
    expect(limiter.take('other', 1000)).to.equal(0);
    expect(limiter.take('k', 1100)).to.equal(0);
    expect(limiter.take('k', 1100)).to.be.greaterThan(0);
  });
});
