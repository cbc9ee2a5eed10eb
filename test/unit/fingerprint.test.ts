import { expect } from 'chai';
import { canonicalJson, requestFingerprint } from '#src/idempotency/idempotency.ts';

describe('request fingerprints', () => {
  it('writes keys in code-unit order at every depth, without undefined fields', () => {
    const value = {
      b: 1,
      a: [1, { z: undefined, y: 'é\u2028"' }, null],
      c: { d: new Date(0), e: undefined, ä: 1, A: 2, _: 3 },
    };
    expect(canonicalJson(value)).to.equal(
      '{"a":[1,{"y":"é\u2028\\""},null],"b":1,"c":{"A":2,"_":3,"d":{},"ä":1}}',
    );
    expect(canonicalJson([undefined, () => 1])).to.equal('[null,null]');
    expect(canonicalJson({})).to.equal('{}');
    expect(canonicalJson('x')).to.equal('"x"');
  });

  it('is the same whatever order the fields came in, and differs with any value', () => {
    const a = requestFingerprint('payouts.create', { amount: 10, currency: 'NGN', metadata: { x: 1, y: 2 } });
    const b = requestFingerprint('payouts.create', { metadata: { y: 2, x: 1 }, currency: 'NGN', amount: 10 });
    expect(a)
      .to.equal(b)
      .and.match(/^[0-9a-f]{64}$/);
    expect(
      requestFingerprint('payouts.create', { amount: 11, currency: 'NGN', metadata: { x: 1, y: 2 } }),
    ).to.not.equal(a);
    expect(
      requestFingerprint('refunds.create', { amount: 10, currency: 'NGN', metadata: { x: 1, y: 2 } }),
    ).to.not.equal(a);
  });
});
