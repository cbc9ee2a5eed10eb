import { z } from 'zod';
import { textOfLength } from '#src/http/schemas.ts';

/** The merchant's own key-value pairs on a payout: how many, and how long keys and values may be. */
export const METADATA_LIMITS = { keys: 20, keyLength: 40, valueLength: 500 } as const;

export type PayoutMetadata = Record<string, string>;

const EXAMPLE: PayoutMetadata = { order_id: 'ord_8812', customer_id: 'cus_0042' };

/**
 * `metadata` of a payout request. Lengths count characters as JSON Schema does (code points), so
 * the document and the server agree. The key `__proto__` is refused before the schemas run (see
 * `controlCharacterIssue`); the document says so.
 */
export const metadataIn = z
  .record(
    textOfLength(1, METADATA_LIMITS.keyLength, 'keys').meta({
      minLength: 1,
      maxLength: METADATA_LIMITS.keyLength,
      not: { const: '__proto__' },
    } as never),
    textOfLength(0, METADATA_LIMITS.valueLength, 'values'),
  )
  .superRefine((metadata, ctx) => {
    if (Object.keys(metadata).length > METADATA_LIMITS.keys)
      ctx.addIssue({ code: 'custom', message: `must have at most ${METADATA_LIMITS.keys} keys` });
  })
  .meta({
    maxProperties: METADATA_LIMITS.keys,
    description:
      `Your own key-value pairs, returned with the payout and in its webhooks: at most ${METADATA_LIMITS.keys} ` +
      `keys of 1 to ${METADATA_LIMITS.keyLength} characters, string values of at most ${METADATA_LIMITS.valueLength}.`,
    example: EXAMPLE,
  } as never);

/** `metadata` of a payout resource: `{}` when the request had none. */
export const metadataOut = z.record(z.string(), z.string()).meta({
  description: 'The key-value pairs given at creation, keys in code-point order; {} when none were.',
  example: EXAMPLE,
} as never);

/** Metadata in one order whatever the request's or the database's (jsonb orders keys its own way). */
export function orderedMetadata(metadata: PayoutMetadata): PayoutMetadata {
  return Object.fromEntries(Object.entries(metadata).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
