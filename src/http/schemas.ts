import { z } from 'zod';
import {
  Corridors,
  DESTINATION_TYPES,
  NETWORK_NAMES,
  NETWORKS,
  type Network,
  networkNamed,
  RAILS,
  SETTLEMENT_CURRENCIES,
} from '#src/corridors/corridors.ts';
import { isUuid } from '#src/lib/ids.ts';
import {
  CURRENCY_DECIMALS,
  type Currency,
  type Decimal,
  moneyJson,
  type RawJSON,
  toDecimal,
} from '#src/lib/money.ts';

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

/**
 * A response field the OpenAPI document shows as the named schema `name` (a `$ref`), while the
 * server's own output check stays a plain string: for values that always come from a closed set
 * the document names elsewhere (a currency read back from the database).
 */
export function documentedAs(name: string): z.ZodString {
  return z.string().meta({
    override: ({ jsonSchema }: { jsonSchema: Record<string, unknown> }) => {
      for (const key of Object.keys(jsonSchema)) delete jsonSchema[key];
      jsonSchema.$ref = `#/components/schemas/${name}`;
    },
  } as never);
}

/** The message of a closed set's refusal: `is required` when absent, else the values it takes. */
function oneOf(values: readonly string[]) {
  return (issue: { input?: unknown }) =>
    issue.input === undefined ? 'is required' : `must be one of ${values.join(', ')}`;
}

/**
 * The currencies some corridor pays out in (`src/corridors/corridors.json`), a closed set: a
 * currency the service knows (`CURRENCY_DECIMALS`) that no corridor pays is refused like any
 * other value outside it. The corridors file checks that each of its currencies is known.
 */
export const CURRENCIES = Corridors.shipped().currencies() as [Currency, ...Currency[]];

/** A currency in a request: anything outside the closed set is a 400 naming the field. */
export const currencySchema = z.enum(CURRENCIES, { error: oneOf(CURRENCIES) }).meta({
  id: 'Currency',
  description:
    'A currency some corridor pays out in: ISO 4217 code, or USDT for Tether. Any other is 400 ' +
    'VALIDATION_FAILED; one that a corridor pays but not in the country, destination type or ' +
    'settlement currency asked for is 422 CORRIDOR_NOT_SUPPORTED. Amounts carry at most the ' +
    'currency’s minor units: ' +
    CURRENCIES.map((code) => `${code} ${CURRENCY_DECIMALS[code]}`).join(', ') +
    '.',
});

/** A currency in a response (always one of `CURRENCIES`). */
export const currencyOut = documentedAs('Currency');

export const settlementCurrencySchema = z
  .enum(SETTLEMENT_CURRENCIES, { error: oneOf(SETTLEMENT_CURRENCIES) })
  .meta({
    id: 'SettlementCurrency',
    description: 'What the merchant pays in: USDT on the crypto rail, NGN by bank transfer.',
  });

export const destinationTypeSchema = z.enum(DESTINATION_TYPES).meta({
  id: 'DestinationType',
  description: 'Where the beneficiary is paid: a mobile money wallet, a bank account or a crypto wallet.',
});

export const railSchema = z.enum(RAILS).meta({
  id: 'Rail',
  description: 'How the merchant settles: CRYPTO (USDT on TRON or BSC) or BANK_TRANSFER (NGN).',
});

export const networkSchema = z.enum(NETWORKS).meta({ id: 'Network', description: 'USDT network.' });

/**
 * A USDT network named in a request: the chain (`TRON`, `BSC`) or USDT's token standard on it
 * (`TRC20`, `BEP20`, as the payment instruction says), alike. Becomes the chain's name.
 */
export const networkIn = z
  .enum(NETWORK_NAMES, { error: oneOf(NETWORK_NAMES) })
  .transform((name): Network => networkNamed(name) as Network)
  .meta({
    id: 'NetworkName',
    description:
      'USDT network: TRON (or TRC20, its token standard) or BSC (or BEP20). Either name means the same ' +
      'network; responses name the chain (TRON, BSC), payment instructions the token standard.',
  });

/**
 * A string of `min` to `max` characters, counted as JSON Schema's `minLength`/`maxLength` count
 * them (code points: an emoji is one, not two UTF-16 units), so that the document and the server
 * draw the line at the same place. `what` names the strings in the refusal ("keys", "values").
 */
export function textOfLength(min: number, max: number, what: string): z.ZodString {
  return z
    .string()
    .superRefine((value, ctx) => {
      let length = 0;
      for (const _ of value) length++;
      if (length < min || length > max)
        ctx.addIssue({
          code: 'custom',
          message:
            min > 0
              ? `${what} must be ${min} to ${max} characters`
              : `${what} must be at most ${max} characters`,
        });
    })
    .meta({ ...(min > 0 ? { minLength: min } : {}), maxLength: max } as never);
}

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
 * A JSON Schema condition for a request's document: when every field of `given` has the value
 * given, the fields of `then` must also fit their schemas. Other fields are left alone.
 */
export function when(
  given: Record<string, string>,
  then: Record<string, Record<string, unknown>>,
): Record<string, unknown> {
  return {
    if: {
      properties: Object.fromEntries(
        Object.entries(given).map(([field, value]) => [field, { const: value }]),
      ),
      required: Object.keys(given),
      additionalProperties: true,
    },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, never awaited
    then: { properties: then, additionalProperties: true },
  };
}

/**
 * The document's form of {@link decimalsIssue}: per currency of `currencyField`, `amountField` is
 * a multiple of the currency's minor unit (`multipleOf` 0.01 for NGN), as the server requires.
 */
export function amountDecimals(currencyField: string, amountField: string): Record<string, unknown>[] {
  return CURRENCIES.map((currency) =>
    when({ [currencyField]: currency }, { [amountField]: { multipleOf: minorUnit(currency) } }),
  );
}

/** The smallest amount of `currency`, as a JSON number: 0.01 for two decimals, 1 for none. */
function minorUnit(currency: Currency): number {
  return Number(`1e-${CURRENCY_DECIMALS[currency]}`);
}

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

/**
 * What the document says of every amount in a request, after what the amount is: the rules that
 * JSON Schema states (the request's `multipleOf` per currency) and the one it cannot.
 */
export const AMOUNT_RULES =
  'At most 15 significant digits, and at most the minor units of the currency in decimals: the ' +
  'request gives the multipleOf of each currency (check it on the decimal digits: dividing binary ' +
  'floating-point numbers finds 0.07 no multiple of 0.01).';

/**
 * The input of a procedure that takes none: nothing, or an empty object. Anything else is a 400
 * naming the field, as on every procedure with an input (tRPC itself would ignore it).
 */
export const noInput = z.strictObject({}).optional();

/** An id in a path. A malformed one is looked up like any other and is simply not found (404). */
export const idParam = z.string().min(1).max(200);

/** An id in a request body (a `quote_id`): a UUID, or a 400 naming the field before any lookup. */
export const idIn = z
  .string()
  .refine(isUuid, 'must be a UUID')
  .meta({ format: 'uuid' } as never);

/** Checks that an amount has no more decimals than its currency allows. */
export function decimalsIssue(amount: Decimal, currency: string, decimals: number): string | null {
  return (amount.decimalPlaces() ?? 0) > decimals
    ? `${currency} amounts have at most ${decimals} decimal places`
    : null;
}

/**
 * One shape of a request whose required fields depend on a discriminating field: the OpenAPI
 * document shows the request as a `oneOf` of these, each a component of its own. The server
 * validates the flat schema and then the same rules in code (which reads them from here too).
 */
export interface RequestVariant {
  /** Component name of this shape, e.g. `BankAccountPayoutRequest`. */
  name: string;
  description: string;
  /** Fields that this shape requires (never null when sent). */
  require?: readonly string[];
  /** Fields that this shape does not accept. */
  omit?: readonly string[];
  /** JSON Schema keywords that narrow a field in this shape (merged into its schema). */
  narrow?: Record<string, Record<string, unknown>>;
  /** Further JSON Schema subschemas the shape must satisfy (such as `if`/`then` between two fields). */
  allOf?: Record<string, unknown>[];
}

/**
 * Metadata for a request schema whose shape depends on `discriminator`: the document generator
 * (`src/http/openapi.ts`) turns the schema into a `oneOf` of `variants`, keyed by the
 * discriminator's values.
 */
export function requestVariants(
  discriminator: string,
  variants: Record<string, RequestVariant>,
): { 'x-variants': { discriminator: string; variants: Record<string, RequestVariant> } } {
  return { 'x-variants': { discriminator, variants } };
}
