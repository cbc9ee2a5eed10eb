import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Reference verifier for the service's webhooks. Merchants may copy this file as it is: it
 * depends on nothing but `node:crypto`. The service signs with `computeSignature` from this very
 * file, so the two cannot drift apart.
 *
 * Usage, with the body exactly as received (before any JSON parsing):
 *
 *   const result = verifyWebhook({
 *     rawBody,                                        // Buffer or string, untouched
 *     signatureHeader: req.headers['x-service-signature'],
 *     secret: process.env.WEBHOOK_SIGNING_SECRET,     // 'whsec_...'
 *   });
 *   if (!result.ok) return res.status(400).end();     // result.reason says why
 *   const event = JSON.parse(rawBody.toString('utf8'));
 *   // deduplicate on event.event_id; order by event.status (see docs/webhooks.md)
 */

/** Recommended tolerance between the signature's timestamp and the receiver's clock, both directions. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export type VerificationFailure =
  | 'missing_signature'
  | 'malformed_signature'
  | 'timestamp_mismatch'
  | 'timestamp_out_of_tolerance'
  | 'signature_mismatch';

export type VerificationResult = { ok: true; timestamp: number } | { ok: false; reason: VerificationFailure };

export interface VerifyOptions {
  /** The request body exactly as received (a Buffer is a Uint8Array): the bytes that were signed. */
  rawBody: Uint8Array | string;
  /** The `X-Service-Signature` header: `t=<unix seconds>,v1=<hex>`. */
  signatureHeader: string | string[] | undefined;
  /** The `X-Service-Timestamp` header; when given it must equal the signed `t`. */
  timestampHeader?: string | string[] | undefined;
  /** The signing secret as issued, `whsec_` prefix included: the whole string is the HMAC key. */
  secret: string;
  /** The receiver's clock in unix seconds; defaults to now. A non-finite value throws. */
  now?: number;
  /**
   * Maximum distance between `t` and `now`, in seconds, either way (default 300). A negative or
   * non-finite value throws: a tolerance of NaN or Infinity would accept a signature of any age.
   */
  toleranceSeconds?: number;
}

/** Hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the whole secret string. */
export function computeSignature(secret: string, timestamp: number, rawBody: Uint8Array | string): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

/** The `X-Service-Signature` header value for a body signed at `timestamp` (unix seconds). */
export function signatureHeaderValue(
  secret: string,
  timestamp: number,
  rawBody: Uint8Array | string,
): string {
  return `t=${timestamp},v1=${computeSignature(secret, timestamp, rawBody)}`;
}

/**
 * Verifies one delivery: the header parses, the timestamp is within the tolerance of `now`
 * (either way: a replayed old delivery and a future-dated one are both refused), and one `v1`
 * signature matches, compared in constant time. Throws a TypeError when `now` or
 * `toleranceSeconds` is not a usable number (a mistake in the caller, never in the delivery).
 */
export function verifyWebhook(options: VerifyOptions): VerificationResult {
  const header = single(options.signatureHeader);
  if (!header) return { ok: false, reason: 'missing_signature' };
  const parsed = parseSignatureHeader(header);
  if (!parsed) return { ok: false, reason: 'malformed_signature' };

  const stated = single(options.timestampHeader);
  if (stated !== undefined && stated !== String(parsed.timestamp)) {
    return { ok: false, reason: 'timestamp_mismatch' };
  }
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
  // A NaN compares false with everything, so the age check below would pass whatever the age.
  if (!Number.isFinite(now))
    throw new TypeError('verifyWebhook: now must be a finite number of unix seconds');
  if (!Number.isFinite(tolerance) || tolerance < 0) {
    throw new TypeError('verifyWebhook: toleranceSeconds must be a finite number of seconds, 0 or more');
  }
  if (Math.abs(now - parsed.timestamp) > tolerance)
    return { ok: false, reason: 'timestamp_out_of_tolerance' };

  const expected = Buffer.from(computeSignature(options.secret, parsed.timestamp, options.rawBody), 'hex');
  // Every candidate is compared, so the time taken does not reveal which one matched.
  let matched = false;
  for (const candidate of parsed.signatures) {
    const given = Buffer.from(candidate, 'hex');
    if (given.length === expected.length && timingSafeEqual(given, expected)) matched = true;
  }
  return matched ? { ok: true, timestamp: parsed.timestamp } : { ok: false, reason: 'signature_mismatch' };
}

/**
 * `t=<digits>` and at least one `v1=<64 hex>`; other schemes are skipped so that a future
 * `v2=` alongside does not break this verifier. Null when the header does not have that shape.
 */
export function parseSignatureHeader(header: string): { timestamp: number; signatures: string[] } | null {
  let timestamp: number | null = null;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return null;
    const key = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (key === 't') {
      if (timestamp !== null || !/^\d{1,12}$/.test(value)) return null;
      timestamp = Number(value);
    } else if (key === 'v1') {
      if (!/^[0-9a-f]{64}$/i.test(value)) return null;
      signatures.push(value.toLowerCase());
    }
  }
  if (timestamp === null || signatures.length === 0) return null;
  return { timestamp, signatures };
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? (value.length === 1 ? value[0] : undefined) : value;
}
