import { expect } from 'chai';
import { CALLBACK_ROUTES } from '#src/callbacks.ts';
import {
  CALLBACK_SIGNATURE_HEADER,
  DEFAULT_CALLBACK_TOLERANCE_SECONDS,
  signCallback,
} from '#src/providers/callback-signature.ts';
import { call, errorOf } from '../client.ts';
import { harness } from '../harness.ts';
import { rowCounts } from '../http/hostile.ts';

/**
 * Replay protection, checked on every provider callback route: a callback signed correctly, with
 * the service's own secret, but longer ago (or further ahead) than the tolerance is refused before
 * its body is read, and writes nothing. Just inside the tolerance the signature passes (the empty
 * body is then refused for what it is), so the edge is pinned on both sides.
 */
describe('every provider callback route refuses a correctly signed but stale callback', () => {
  const post = (path: string, body: string, signedAt: number) =>
    call('POST', path, {
      rawBody: body,
      headers: {
        'content-type': 'application/json',
        [CALLBACK_SIGNATURE_HEADER]: signCallback(
          harness().service.deps.secrets.callbackSecret,
          body,
          signedAt,
        ),
      },
      idempotencyKey: null,
    });
  const nowSeconds = () => Math.floor(harness().clock.now().getTime() / 1000);

  it('covers some routes', () => {
    expect(CALLBACK_ROUTES.map((r) => r.path)).to.include.members([
      '/callbacks/bank',
      '/callbacks/processor',
    ]);
  });

  for (const route of CALLBACK_ROUTES) {
    it(`${route.path}: refused when signed more than ${DEFAULT_CALLBACK_TOLERANCE_SECONDS} s ago or ahead`, async () => {
      const before = await rowCounts();
      for (const skew of [
        -(DEFAULT_CALLBACK_TOLERANCE_SECONDS + 1),
        DEFAULT_CALLBACK_TOLERANCE_SECONDS + 1,
        -86_400,
      ]) {
        const res = await post(route.path, '{}', nowSeconds() + skew);
        expect(res.status, `${skew} s: ${res.text}`).to.equal(401);
        expect(errorOf(res).code).to.equal('CALLBACK_SIGNATURE_INVALID');
        expect(errorOf(res).details).to.deep.equal([{ field: CALLBACK_SIGNATURE_HEADER, issue: 'stale' }]);
      }
      expect(await rowCounts()).to.deep.equal(before);
    });

    it(`${route.path}: passes the signature check at exactly ${DEFAULT_CALLBACK_TOLERANCE_SECONDS} s`, async () => {
      for (const skew of [-DEFAULT_CALLBACK_TOLERANCE_SECONDS, DEFAULT_CALLBACK_TOLERANCE_SECONDS]) {
        const res = await post(route.path, '{}', nowSeconds() + skew);
        expect(res.status, `${skew} s: ${res.text}`).to.equal(400);
        expect(errorOf(res).code).to.equal('VALIDATION_FAILED');
      }
    });
  }
});
