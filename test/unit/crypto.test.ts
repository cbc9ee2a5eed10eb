import { createHash, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import {
  constantTimeEqual,
  decryptSecret,
  encryptSecret,
  hmacSha256Hex,
  randomToken,
  sha256Hex,
} from '#src/lib/crypto.ts';
import { generateSigningSecret, openSigningSecret, sealSigningSecret } from '#src/webhooks/secret.ts';

/** Flips one bit of the base64url part `index` of a sealed value. */
function tamper(sealed: string, index: number): string {
  const parts = sealed.split('.');
  const bytes = Buffer.from(parts[index] ?? '', 'base64url');
  bytes[0] = (bytes[0] ?? 0) ^ 0x01;
  parts[index] = bytes.toString('base64url');
  return parts.join('.');
}

describe('crypto', () => {
  const key = randomBytes(32);

  describe('sealed secrets (AES-256-GCM)', () => {
    it('round-trips a secret', () => {
      const sealed = encryptSecret(key, 'whsec_round-trip');
      expect(decryptSecret(key, sealed)).to.equal('whsec_round-trip');
    });

    it('never contains the plaintext and differs on every call (fresh IV)', () => {
      const a = encryptSecret(key, 'whsec_same-value');
      const b = encryptSecret(key, 'whsec_same-value');
      expect(a).to.not.equal(b);
      expect(a).to.match(/^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
      expect(a).to.not.include('whsec_same-value');
      expect(Buffer.from(a.split('.')[3] ?? '', 'base64url').toString('utf8')).to.not.include('same-value');
    });

    it('detects a tampered ciphertext, tag or IV', () => {
      const sealed = encryptSecret(key, 'whsec_tamper-me');
      for (const part of [1, 2, 3]) {
        expect(() => decryptSecret(key, tamper(sealed, part)), `part ${part}`).to.throw();
      }
    });

    it('refuses the wrong key', () => {
      const sealed = encryptSecret(key, 'whsec_key-bound');
      expect(() => decryptSecret(randomBytes(32), sealed)).to.throw();
    });

    it('refuses an unknown format version or a truncated value', () => {
      const sealed = encryptSecret(key, 'whsec_versioned');
      expect(() => decryptSecret(key, sealed.replace(/^v1\./, 'v2.'))).to.throw('unrecognised sealed secret');
      expect(() => decryptSecret(key, sealed.split('.').slice(0, 2).join('.'))).to.throw(
        'unrecognised sealed secret',
      );
    });
  });

  describe('webhook signing secrets', () => {
    it('are whsec_ followed by 32 random bytes in base64url', () => {
      const secret = generateSigningSecret();
      expect(secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);
      expect(Buffer.from(secret.slice('whsec_'.length), 'base64url')).to.have.length(32);
      expect(generateSigningSecret()).to.not.equal(secret);
    });

    it('seal and open through AES-256-GCM', () => {
      const secret = generateSigningSecret();
      const sealed = sealSigningSecret(key, secret);
      expect(sealed).to.not.include(secret.slice('whsec_'.length));
      expect(openSigningSecret(key, sealed)).to.equal(secret);
      expect(() => openSigningSecret(key, tamper(sealed, 3))).to.throw();
    });
  });

  describe('helpers', () => {
    it('HMAC-SHA256 matches RFC 4231 test case 2', () => {
      expect(hmacSha256Hex('Jefe', 'what do ya want for nothing?')).to.equal(
        '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
      );
    });

    it('SHA-256 of text (as UTF-8) and of bytes, as a Hash object gives it', () => {
      expect(sha256Hex('abc')).to.equal('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
      for (const text of ['', 'sk_é€😀', 'x'.repeat(1000)]) {
        expect(sha256Hex(text)).to.equal(createHash('sha256').update(text, 'utf8').digest('hex'));
        expect(sha256Hex(Buffer.from(text))).to.equal(sha256Hex(text));
      }
    });

    it('compares strings in constant time, unequal lengths included', () => {
      expect(constantTimeEqual('abc', 'abc')).to.equal(true);
      expect(constantTimeEqual('abc', 'abd')).to.equal(false);
      expect(constantTimeEqual('abc', 'abcd')).to.equal(false);
    });

    it('random tokens are base64url of the requested size', () => {
      expect(Buffer.from(randomToken(16), 'base64url')).to.have.length(16);
      expect(randomToken(16)).to.match(/^[A-Za-z0-9_-]{22}$/);
    });
  });
});
