import { decryptSecret, encryptSecret, randomToken } from '#src/lib/crypto.ts';

/** Prefix that makes a leaked signing secret recognisable to secret scanners and to humans. */
export const SIGNING_SECRET_PREFIX = 'whsec_';

/** Bytes of randomness in a signing secret: 256 bits, the HMAC-SHA256 key size. */
const SIGNING_SECRET_BYTES = 32;

/** A fresh webhook signing secret: `whsec_` and 32 random bytes, base64url-encoded. */
export function generateSigningSecret(): string {
  return `${SIGNING_SECRET_PREFIX}${randomToken(SIGNING_SECRET_BYTES)}`;
}

/** Seals a signing secret for storage (AES-256-GCM); only `openSigningSecret` reverses it. */
export function sealSigningSecret(key: Buffer, secret: string): string {
  return encryptSecret(key, secret);
}

/** The signing secret in clear, for signing a delivery; throws if the sealed value was tampered with. */
export function openSigningSecret(key: Buffer, sealed: string): string {
  return decryptSecret(key, sealed);
}
