import { z } from 'zod';
import { type Decimal, moneyJson, type RawJSON, toDecimal } from '#src/lib/money.ts';

/**
 * Schemas shared by every module's procedures. Money crosses the API as JSON numbers but never
 * as JavaScript floats: inputs are checked to be exactly representable and become Decimals;
 * outputs are written with `moneyJson`, which emits the stored digits verbatim.
 */

/** A monetary amount in a response: a JSON number with exactly the stored digits. */
export const moneyOut = z
  .custom<RawJSON>((v) => JSON.isRawJSON(v), 'must be an amount rendered with moneyJson()')
  .meta({ override: { type: 'number' } } as never);

/** A rate or other exact decimal in a response (same wire form as money). */
export const decimalOut = moneyOut;

export { moneyJson };

/** ISO-8601 UTC timestamp in a response. */
export const timestampOut = z.string().meta({ format: 'date-time' } as never);

export function iso(date: Date): string;
export function iso(date: Date | null | undefined): string | null;
export function iso(date: Date | null | undefined): string | null {
  return date ? date.toISOString() : null;
}

/** Most significant digits an amount may have: beyond 15 a JSON number stops being exact. */
const MAX_SIGNIFICANT_DIGITS = 15;

/**
 * A positive monetary amount in a request, sent as a JSON number. Accepted only when it is
 * exactly what the client wrote (at most 15 significant digits); returned as a Decimal.
 */
export const amountIn = z
  .number()
  .positive('must be greater than zero')
  .refine(Number.isFinite, 'must be finite')
  .transform((value, ctx): Decimal => {
    const d = toDecimal(String(value));
    if ((d.precision(true) ?? 0) > MAX_SIGNIFICANT_DIGITS) {
      ctx.addIssue({
        code: 'custom',
        message: `must have at most ${MAX_SIGNIFICANT_DIGITS} significant digits`,
      });
      return z.NEVER;
    }
    return d;
  })
  .meta({ override: { type: 'number', exclusiveMinimum: 0 } } as never);

/** An id in a path. A malformed one is looked up like any other and is simply not found (404). */
export const idParam = z.string().min(1).max(200);

/** Checks that an amount has no more decimals than its currency allows. */
export function decimalsIssue(amount: Decimal, currency: string, decimals: number): string | null {
  return (amount.decimalPlaces() ?? 0) > decimals
    ? `${currency} amounts have at most ${decimals} decimal places`
    : null;
}
