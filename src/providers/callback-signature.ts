import { constantTimeEqual, hmacSha256Hex } from '#src/lib/crypto.ts';

/**
 * Signatures on callbacks from providers (bank credit notifications, processor payout outcomes):
 * `X-Provider-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, keyed with the
 * secret the service shares with its providers. The sandbox signs with it and the service
 * verifies with it, so both sides read the same few lines.
 */

export const CALLBACK_SIGNATURE_HEADER = 'X-Provider-Signature';

/** Callbacks signed longer ago (or further ahead) than this are refused: a replay window, not a clock check. */
export const DEFAULT_CALLBACK_TOLERANCE_SECONDS = 300;

export type CallbackVerification =
  | { valid: true; timestamp: number }
  | { valid: false; reason: 'missing' | 'malformed' | 'stale' | 'mismatch' };

/** The `X-Provider-Signature` value for `body` signed at `nowSeconds`. */
export function signCallback(secret: string, body: string | Buffer, nowSeconds: number): string {
  const t = Math.floor(nowSeconds);
  return `t=${t},v1=${digest(secret, t, body)}`;
}

/**
 * Checks a callback against the exact bytes received: the timestamp within `toleranceSeconds` of
 * `nowSeconds` and one `v1` signature (a provider rotating its key may send several) matching,
 * compared in constant time.
 */
export function verifyCallback(
  secret: string,
  rawBody: Buffer,
  header: string | undefined,
  nowSeconds: number,
  toleranceSeconds: number = DEFAULT_CALLBACK_TOLERANCE_SECONDS,
): CallbackVerification {
  if (!header) return { valid: false, reason: 'missing' };
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const [key, value, ...rest] = part.trim().split('=');
    if (value === undefined || rest.length > 0) return { valid: false, reason: 'malformed' };
    if (key === 't') {
      if (timestamp !== undefined || !/^\d{1,12}$/.test(value)) return { valid: false, reason: 'malformed' };
      timestamp = Number(value);
    } else if (key === 'v1') {
      signatures.push(value);
    }
    // Other schemes (v0, a future v2) are ignored, as a verifier that predates them would.
  }
  if (timestamp === undefined || signatures.length === 0) return { valid: false, reason: 'malformed' };
  if (Math.abs(nowSeconds - timestamp) > toleranceSeconds) return { valid: false, reason: 'stale' };
  const expected = digest(secret, timestamp, rawBody);
  // Every candidate is compared, so the time taken does not say which one matched.
  let matched = false;
  for (const signature of signatures) matched = constantTimeEqual(signature, expected) || matched;
  return matched ? { valid: true, timestamp } : { valid: false, reason: 'mismatch' };
}

function digest(secret: string, t: number, body: string | Buffer): string {
  // Bytes, not a re-decoded string: a body that is not valid UTF-8 must still verify as sent.
  const payload = Buffer.concat([Buffer.from(`${t}.`), typeof body === 'string' ? Buffer.from(body) : body]);
  return hmacSha256Hex(secret, payload);
}
