import BigNumber from 'bignumber.js';

/**
 * One BigNumber configuration for the whole service: no exponent notation in strings, and
 * errors instead of silent NaN on garbage input.
 */
export const Decimal = BigNumber.clone({
  DECIMAL_PLACES: 18,
  ROUNDING_MODE: BigNumber.ROUND_HALF_UP,
  EXPONENTIAL_AT: [-30, 60],
});
export type Decimal = BigNumber;

/**
 * Minor-unit precision of every currency the service handles. Written once; every rounding of
 * money goes through {@link roundMoney}.
 */
export const CURRENCY_DECIMALS = {
  USDT: 6,
  NGN: 2,
  KES: 2,
  GHS: 2,
  UGX: 0,
  TZS: 2,
  ZAR: 2,
  XOF: 0,
  USD: 2,
} as const satisfies Record<string, number>;

export type Currency = keyof typeof CURRENCY_DECIMALS;

export function isCurrency(code: string): code is Currency {
  return Object.hasOwn(CURRENCY_DECIMALS, code);
}

export function currencyDecimals(currency: string): number {
  if (!isCurrency(currency)) throw new Error(`unknown currency ${currency}`);
  return CURRENCY_DECIMALS[currency];
}

/** How a computed amount is brought to a currency's precision. */
export type Rounding = 'up' | 'down' | 'half-up';

const ROUNDING = {
  up: BigNumber.ROUND_UP,
  down: BigNumber.ROUND_DOWN,
  'half-up': BigNumber.ROUND_HALF_UP,
} as const satisfies Record<Rounding, BigNumber.RoundingMode>;

/**
 * Rounds to the currency's minor unit. What the merchant owes rounds up (the service never
 * under-collects), what is paid out rounds down (never pays more than collected), fees round
 * half-up.
 */
export function roundMoney(amount: BigNumber.Value, currency: string, rounding: Rounding): Decimal {
  return new Decimal(amount).decimalPlaces(currencyDecimals(currency), ROUNDING[rounding]);
}

/** Parses a decimal string or BigNumber into a Decimal, refusing NaN and infinities. */
export function toDecimal(value: BigNumber.Value): Decimal {
  const d = new Decimal(value);
  if (!d.isFinite()) throw new Error(`not a finite decimal: ${String(value)}`);
  return d;
}

/**
 * Renders an amount for JSON output as a number literal with exactly the digits stored: no
 * float conversion happens between the database and the wire.
 */
export function moneyJson(amount: BigNumber.Value): RawJSON {
  // Digits read from a numeric column are usually already in this form: no need to parse them.
  // Stryker disable next-line all: a shortcut, equivalent to the general path below for such digits
  if (typeof amount === 'string' && CANONICAL_DECIMAL.test(amount)) return JSON.rawJSON(amount);
  return JSON.rawJSON(toDecimal(amount).toFixed());
}

/** A decimal as `toFixed()` writes it: no sign, no leading zeros, no trailing fractional zeros. */
// Stryker disable next-line all: only picks the shortcut above, whose result is the same either way
const CANONICAL_DECIMAL = /^(?:0|[1-9]\d*)(?:\.\d*[1-9])?$/;

/** A value produced by `JSON.rawJSON`: serialized verbatim by `JSON.stringify`. */
export type RawJSON = { readonly rawJSON: string };

declare global {
  interface JSON {
    rawJSON(text: string): RawJSON;
    isRawJSON(value: unknown): value is RawJSON;
  }
}
