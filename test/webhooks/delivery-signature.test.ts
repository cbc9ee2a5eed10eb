import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import {
  computeSignature,
  parseSignatureHeader,
  signatureHeaderValue,
  verifyWebhook,
} from '#src/client/verifier.ts';
import { deliveryHeaders, unixSeconds } from '#src/webhooks/signature.ts';

/** The worked example of docs/webhooks.md; the docs test below keeps the two in step. */
const VECTOR = {
  secret: 'whsec_MfKQ9r8GKYqrTw8s6FzTj1S8a0N5oL0n5PZbGxWq3vA',
  timestamp: 1767225600,
  body:
    '{"event_id":"0193f1c2-7a4e-7b1d-9c3e-5f6a7b8c9d0e","event_type":"payout.successful",' +
    '"created_at":"2026-01-01T00:00:00.000Z","status":"SUCCESSFUL","data":{"object":"payout",' +
    '"id":"0193f1c2-6b2d-7a90-8e1f-2a3b4c5d6e7f","status":"SUCCESSFUL"}}',
  signature: 'd79453778e224db61244d57786a35fb5714873a4bde1010a0a980614132ee821',
};

const header = `t=${VECTOR.timestamp},v1=${VECTOR.signature}`;
const verify = (overrides: Partial<Parameters<typeof verifyWebhook>[0]> = {}) =>
  verifyWebhook({
    rawBody: VECTOR.body,
    signatureHeader: header,
    secret: VECTOR.secret,
    now: VECTOR.timestamp,
    ...overrides,
  });

describe('webhook signature and the reference verifier', () => {
  describe('the test vector', () => {
    it('signs "<t>.<raw body>" with HMAC-SHA256 keyed by the whole secret, hex-encoded', () => {
      expect(computeSignature(VECTOR.secret, VECTOR.timestamp, VECTOR.body)).to.equal(VECTOR.signature);
      // The same computation spelled out with node:crypto, as a merchant would write it.
      const independent = createHmac('sha256', VECTOR.secret)
        .update(`${VECTOR.timestamp}.${VECTOR.body}`)
        .digest('hex');
      expect(independent).to.equal(VECTOR.signature);
      expect(signatureHeaderValue(VECTOR.secret, VECTOR.timestamp, VECTOR.body)).to.equal(header);
    });

    it('is the one documented in docs/webhooks.md', () => {
      const doc = readFileSync(new URL('../../docs/webhooks.md', import.meta.url), 'utf8');
      for (const value of [VECTOR.secret, String(VECTOR.timestamp), VECTOR.body, VECTOR.signature, header]) {
        expect(doc, value).to.include(value);
      }
    });
  });

  describe('verifyWebhook', () => {
    it('accepts the vector, from a string or from the raw bytes', () => {
      expect(verify()).to.deep.equal({ ok: true, timestamp: VECTOR.timestamp });
      expect(verify({ rawBody: Buffer.from(VECTOR.body) }).ok).to.equal(true);
    });

    it('refuses a body re-serialised after parsing (same JSON, other bytes)', () => {
      const reparsed = JSON.stringify(JSON.parse(VECTOR.body), null, 2);
      expect(verify({ rawBody: reparsed })).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
    });

    it('refuses another secret (a rotated-away one)', () => {
      expect(verify({ secret: 'whsec_other' })).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
    });

    it('accepts up to 300 seconds of clock difference either way, and refuses beyond', () => {
      expect(verify({ now: VECTOR.timestamp + 300 }).ok).to.equal(true);
      expect(verify({ now: VECTOR.timestamp - 300 }).ok).to.equal(true);
      expect(verify({ now: VECTOR.timestamp + 301 })).to.deep.equal({
        ok: false,
        reason: 'timestamp_out_of_tolerance',
      });
      expect(verify({ now: VECTOR.timestamp - 301 })).to.deep.equal({
        ok: false,
        reason: 'timestamp_out_of_tolerance',
      });
      expect(verify({ now: VECTOR.timestamp + 1000, toleranceSeconds: 1000 }).ok).to.equal(true);
    });

    it('never accepts a ten-year-old signature because the clock or the tolerance is not a number', () => {
      const tenYearsLater = VECTOR.timestamp + 10 * 365 * 86_400;
      for (const options of [
        { now: tenYearsLater, toleranceSeconds: Number.NaN },
        { now: tenYearsLater, toleranceSeconds: Number.POSITIVE_INFINITY },
        { now: tenYearsLater, toleranceSeconds: -1 },
        { now: Number.NaN },
        { now: Number.POSITIVE_INFINITY },
        { now: Number.NEGATIVE_INFINITY, toleranceSeconds: Number.POSITIVE_INFINITY },
      ]) {
        expect(() => verify(options), JSON.stringify(options)).to.throw(TypeError, /must be a finite number/);
      }
    });

    it('refuses a missing or malformed header', () => {
      expect(verify({ signatureHeader: undefined }).ok).to.equal(false);
      expect(verify({ signatureHeader: '' })).to.deep.equal({ ok: false, reason: 'missing_signature' });
      for (const bad of [
        `v1=${VECTOR.signature}`,
        `t=${VECTOR.timestamp}`,
        `t=abc,v1=${VECTOR.signature}`,
        `t=${VECTOR.timestamp},v1=${VECTOR.signature.slice(2)}`,
        `t=${VECTOR.timestamp},t=${VECTOR.timestamp},v1=${VECTOR.signature}`,
        'garbage',
      ]) {
        expect(verify({ signatureHeader: bad }), bad).to.deep.equal({
          ok: false,
          reason: 'malformed_signature',
        });
      }
    });

    it('refuses a timestamp header that disagrees with the signed one', () => {
      expect(verify({ timestampHeader: String(VECTOR.timestamp) }).ok).to.equal(true);
      expect(verify({ timestampHeader: String(VECTOR.timestamp + 1) })).to.deep.equal({
        ok: false,
        reason: 'timestamp_mismatch',
      });
    });

    it('refuses a signature made for another timestamp (the timestamp is signed)', () => {
      const moved = `t=${VECTOR.timestamp + 10},v1=${VECTOR.signature}`;
      expect(verify({ signatureHeader: moved })).to.deep.equal({ ok: false, reason: 'signature_mismatch' });
    });

    it('accepts when any one of several v1 signatures matches, and ignores other schemes', () => {
      const several = `t=${VECTOR.timestamp},v1=${'0'.repeat(64)},v2=whatever,v1=${VECTOR.signature}`;
      expect(verify({ signatureHeader: several }).ok).to.equal(true);
      expect(parseSignatureHeader(several)?.signatures).to.have.length(2);
    });
  });

  describe('delivery headers', () => {
    const now = new Date(VECTOR.timestamp * 1000 + 999);
    const base = { body: VECTOR.body, eventType: 'payout.successful', deliveryId: 'dlv-1', now };

    it('sign with the whole-second timestamp of the attempt, and repeat it in X-Service-Timestamp', () => {
      const headers = deliveryHeaders({ ...base, secret: VECTOR.secret });
      expect(unixSeconds(now)).to.equal(VECTOR.timestamp);
      expect(headers).to.deep.equal({
        'content-type': 'application/json',
        'user-agent': 'payout-service-webhooks/1',
        'x-service-event': 'payout.successful',
        'x-service-delivery': 'dlv-1',
        'x-service-signature': header,
        'x-service-timestamp': String(VECTOR.timestamp),
      });
    });

    it('are computed afresh for each attempt: another time, another signature', () => {
      const later = deliveryHeaders({
        ...base,
        secret: VECTOR.secret,
        now: new Date(now.getTime() + 10_000),
      });
      expect(later['x-service-signature']).to.not.equal(header);
      expect(
        verifyWebhook({
          rawBody: VECTOR.body,
          signatureHeader: later['x-service-signature'],
          secret: VECTOR.secret,
          now: VECTOR.timestamp + 10,
        }).ok,
      ).to.equal(true);
    });

    it('leave both signature headers out when the tenant has no secret', () => {
      const headers = deliveryHeaders({ ...base, secret: null });
      expect(headers).to.not.have.any.keys('x-service-signature', 'x-service-timestamp');
      expect(headers).to.include({ 'x-service-event': 'payout.successful', 'x-service-delivery': 'dlv-1' });
    });
  });
});
