import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { signCallback, verifyCallback } from '#src/providers/callback-signature.ts';

describe('provider callback signatures', () => {
  const secret = 'shared-callback-secret';
  const body = '{"event":"credit","amount":"5000.00"}';
  const t = 1_767_225_600;

  it('signs as t=<seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">', () => {
    const expected = createHmac('sha256', secret).update(`${t}.${body}`).digest('hex');
    expect(signCallback(secret, body, t)).to.equal(`t=${t},v1=${expected}`);
  });

  it('uses whole seconds when given a fractional time', () => {
    expect(signCallback(secret, body, t + 0.9)).to.equal(signCallback(secret, body, t));
  });

  it('verifies its own signature over the raw bytes and reports the timestamp', () => {
    const header = signCallback(secret, body, t);
    expect(verifyCallback(secret, Buffer.from(body), header, t)).to.deep.equal({ valid: true, timestamp: t });
  });

  it('verifies bodies that are not valid UTF-8 exactly as sent', () => {
    const raw = Buffer.from([0x7b, 0xff, 0xfe, 0x7d]);
    expect(verifyCallback(secret, raw, signCallback(secret, raw, t), t).valid).to.equal(true);
  });

  it('refuses a changed body, another secret or another timestamp', () => {
    const header = signCallback(secret, body, t);
    const changed = Buffer.from(body.replace('5000.00', '50000.00'));
    expect(verifyCallback(secret, changed, header, t)).to.deep.equal({ valid: false, reason: 'mismatch' });
    expect(verifyCallback('another-secret', Buffer.from(body), header, t)).to.deep.equal({
      valid: false,
      reason: 'mismatch',
    });
    const moved = header.replace(`t=${t}`, `t=${t + 1}`);
    expect(verifyCallback(secret, Buffer.from(body), moved, t)).to.deep.equal({
      valid: false,
      reason: 'mismatch',
    });
  });

  it('accepts timestamps within the tolerance on either side and refuses older or newer ones', () => {
    const header = signCallback(secret, body, t);
    const raw = Buffer.from(body);
    expect(verifyCallback(secret, raw, header, t + 300).valid).to.equal(true);
    expect(verifyCallback(secret, raw, header, t - 300).valid).to.equal(true);
    expect(verifyCallback(secret, raw, header, t + 301)).to.deep.equal({ valid: false, reason: 'stale' });
    expect(verifyCallback(secret, raw, header, t - 301)).to.deep.equal({ valid: false, reason: 'stale' });
    expect(verifyCallback(secret, raw, header, t + 30, 10)).to.deep.equal({ valid: false, reason: 'stale' });
  });

  it('reports a missing header apart from a malformed one', () => {
    const raw = Buffer.from(body);
    expect(verifyCallback(secret, raw, undefined, t)).to.deep.equal({ valid: false, reason: 'missing' });
    expect(verifyCallback(secret, raw, '', t)).to.deep.equal({ valid: false, reason: 'missing' });
    const v1 = signCallback(secret, body, t).split(',')[1];
    for (const header of [
      'garbage',
      `t=${t}`,
      v1!,
      `t=soon,${v1}`,
      `t=${t},t=${t},${v1}`,
      `t=${t},${v1}=extra`,
    ]) {
      expect(verifyCallback(secret, raw, header, t), header).to.deep.equal({
        valid: false,
        reason: 'malformed',
      });
    }
  });

  it('accepts any one matching v1 among several and ignores other schemes', () => {
    const good = signCallback(secret, body, t);
    const v1 = good.split(',')[1];
    const header = `t=${t},v0=legacy,v1=${'0'.repeat(64)},${v1}`;
    expect(verifyCallback(secret, Buffer.from(body), header, t).valid).to.equal(true);
    expect(verifyCallback(secret, Buffer.from(body), `t=${t},v1=${'0'.repeat(64)}`, t).valid).to.equal(false);
  });
});
