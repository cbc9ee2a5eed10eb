import { signatureHeaderValue } from '#src/client/verifier.ts';

/** What identifies a delivery to the receiver besides its body. */
export interface DeliveryHeaderInput {
  /** The exact bytes that will be sent. */
  body: string;
  eventType: string;
  /** The delivery job's id: the same on every attempt of one event to one URL. */
  deliveryId: string;
  /** The tenant's current signing secret, or null: the delivery then goes unsigned. */
  secret: string | null;
  /** When the attempt is made; the signature's timestamp is this instant in unix seconds. */
  now: Date;
}

/** The unix timestamp (whole seconds) a signature made at `now` carries. */
export function unixSeconds(now: Date): number {
  return Math.floor(now.getTime() / 1000);
}

/**
 * The headers of one attempt. Pure: the same input gives the same headers, and each attempt
 * passes its own `now` (and the secret in force at that moment), so the signature is computed
 * afresh per attempt. Without a secret both signature headers are left out, not sent empty.
 */
export function deliveryHeaders(input: DeliveryHeaderInput): Record<string, string> {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'payout-service-webhooks/1',
    'x-service-event': input.eventType,
    'x-service-delivery': input.deliveryId,
  };
  if (input.secret !== null) {
    const t = unixSeconds(input.now);
    headers['x-service-signature'] = signatureHeaderValue(input.secret, t, input.body);
    headers['x-service-timestamp'] = String(t);
  }
  return headers;
}
