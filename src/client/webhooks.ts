import type { WebhookEvent } from './api.ts';
import {
  DEFAULT_TOLERANCE_SECONDS,
  type VerificationFailure,
  verifyWebhook as verifySignature,
} from './verifier.ts';

export { DEFAULT_TOLERANCE_SECONDS, type VerificationFailure };

/** Request headers as Node (`req.headers`) or the Fetch API (`request.headers`) hold them. */
export type HeaderBag = Headers | Record<string, string | string[] | undefined>;

export type WebhookVerification =
  | { ok: true; event: WebhookEvent; timestamp: number }
  | { ok: false; reason: VerificationFailure | 'invalid_payload' };

/**
 * Verifies a delivery with the service's reference verifier (`verifier.ts`: the same
 * signature, timestamp tolerance and constant-time comparison), then parses the body into a typed
 * event. Pass the body exactly as received, before any JSON parsing.
 *
 *   const result = verifyWebhook({ rawBody, headers: req.headers, secret: process.env.WEBHOOK_SECRET });
 *   if (!result.ok) return res.writeHead(400).end();
 *   if (result.event.event_type === 'payout.successful') ... // result.event.data is the Payout
 */
export function verifyWebhook(options: {
  rawBody: Uint8Array | string;
  headers: HeaderBag;
  /** The signing secret as issued, `whsec_…`. */
  secret: string;
  /** The receiver's clock in unix seconds; now by default. */
  now?: number;
  /** Seconds either way between the signature's time and `now` (300 by default). */
  toleranceSeconds?: number;
}): WebhookVerification {
  const verified = verifySignature({
    rawBody: options.rawBody,
    signatureHeader: header(options.headers, 'x-service-signature'),
    timestampHeader: header(options.headers, 'x-service-timestamp'),
    secret: options.secret,
    ...(options.now !== undefined ? { now: options.now } : {}),
    ...(options.toleranceSeconds !== undefined ? { toleranceSeconds: options.toleranceSeconds } : {}),
  });
  if (!verified.ok) return verified;
  const text =
    typeof options.rawBody === 'string' ? options.rawBody : new TextDecoder().decode(options.rawBody);
  let event: unknown;
  try {
    event = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'invalid_payload' };
  }
  if (typeof (event as { event_type?: unknown } | null)?.event_type !== 'string')
    return { ok: false, reason: 'invalid_payload' };
  return { ok: true, event: event as WebhookEvent, timestamp: verified.timestamp };
}

function header(headers: HeaderBag, name: string): string | string[] | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  return key === undefined ? undefined : headers[key];
}
