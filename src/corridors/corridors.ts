import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { type Decimal, isCurrency, toDecimal } from '#src/lib/money.ts';

export const DESTINATION_TYPES = ['MOBILE_MONEY', 'BANK_ACCOUNT', 'CRYPTO_WALLET'] as const;
export type DestinationType = (typeof DESTINATION_TYPES)[number];
export const SETTLEMENT_CURRENCIES = ['USDT', 'NGN'] as const;
export type SettlementCurrency = (typeof SETTLEMENT_CURRENCIES)[number];
export const NETWORKS = ['TRON', 'BSC'] as const;
export type Network = (typeof NETWORKS)[number];
/** USDT's token standard on each network: the payment instruction's `network` says this. */
export const NETWORK_STANDARDS = { TRON: 'TRC20', BSC: 'BEP20' } as const satisfies Record<Network, string>;
/** Every name an input may give a network: the chain's (`TRON`) or the token standard's (`TRC20`). */
export const NETWORK_NAMES = ['TRON', 'TRC20', 'BSC', 'BEP20'] as const;
export type NetworkName = (typeof NETWORK_NAMES)[number];

/** The network a name stands for (`TRC20` is TRON), exactly as written; undefined for anything else. */
export function networkNamed(name: string): Network | undefined {
  return NETWORKS.find((network) => network === name || NETWORK_STANDARDS[network] === name);
}

/**
 * `request` (an input not yet checked) with `field` naming its network by the chain when it names
 * one by either name (`TRC20` → `TRON`), ignoring case when `anyCase`; otherwise unchanged. For
 * comparing two requests that say the same thing in two spellings.
 */
export function withChainName<T>(request: T, field: string, options: { anyCase?: boolean } = {}): T {
  if (request === null || typeof request !== 'object' || Array.isArray(request)) return request;
  const value = (request as Record<string, unknown>)[field];
  if (typeof value !== 'string') return request;
  const chain = networkNamed(options.anyCase ? value.trim().toUpperCase() : value);
  return chain && chain !== value ? { ...request, [field]: chain } : request;
}

/** The names of `network` an input may use, for refusals and documents: `TRON or TRC20`. */
export function namesOf(network: Network): [Network, string] {
  return [network, NETWORK_STANDARDS[network]];
}
export const RAILS = ['CRYPTO', 'BANK_TRANSFER'] as const;
export type Rail = (typeof RAILS)[number];

const decimal = z
  .string()
  .regex(/^\d+(\.\d+)?$/, 'must be a non-negative decimal string')
  .transform((v) => toDecimal(v));
const currency = z.string().refine(isCurrency, 'is not a currency the service knows');

/** How a country's mobile numbers are written: its calling code and its national trunk prefix. */
export interface MobileNumbering {
  /** The country calling code, without `+`: `254`. */
  countryCode: string;
  /** What starts a number dialled within the country, before the national number: `0`. */
  trunkPrefix: string;
}

/** What an account identifier of one kind looks like: the rule and how to tell a merchant. */
export interface AccountFormat {
  /** The rule of the canonical form (for a mobile number, E.164). */
  pattern: RegExp;
  /** Completes "must be …", e.g. "a 10-digit NUBAN". */
  description: string;
  /** An identifier that fits, shown to merchants. */
  example: string;
  /** For mobile numbers: how people write them, so that every spelling comes to E.164. */
  mobile?: MobileNumbering;
}

/** What may separate the digits of a mobile number as people write it: spaces, dashes, dots, brackets. */
const MOBILE_SEPARATORS = /[ \-.()]/g;

/**
 * A mobile number as written (`+254 712 345 678`, `254712345678`, `00254-712-345678`,
 * `0712345678`) in its E.164 form (`+254712345678`): separators dropped, then the country code
 * with or without `+` or `00`, or the trunk prefix, made `+` and the country code. Anything else
 * is returned as written, for the format's check to refuse.
 */
export function canonicalMobile(numbering: MobileNumbering, written: string): string {
  const compact = written.replace(MOBILE_SEPARATORS, '');
  const digits = /^(\+|00)?([0-9]+)$/.exec(compact);
  if (!digits) return written;
  const [, international, number] = digits as unknown as [string, string | undefined, string];
  const { countryCode, trunkPrefix } = numbering;
  // A calling code never starts with 0, the trunk prefix of every corridor: the two never meet.
  if (number.startsWith(countryCode)) return `+${number}`;
  if (!international && trunkPrefix !== '' && number.startsWith(trunkPrefix))
    return `+${countryCode}${number.slice(trunkPrefix.length)}`;
  return written;
}

/** The spellings of `example` a merchant may use, for refusals and documents. */
export function mobileSpellings(numbering: MobileNumbering, example: string): string[] {
  const national = example.slice(1 + numbering.countryCode.length);
  return [
    example,
    example.slice(1),
    `00${example.slice(1)}`,
    ...(numbering.trunkPrefix ? [`${numbering.trunkPrefix}${national}`] : []),
  ];
}

/** Any run of the separators `canonicalMobile` drops, as a regular expression. */
const SEPARATORS = '[-. ()]*';
const QUANTIFIER = /^(?:\{\d+(?:,\d*)?\}|[?*+])\??/;

/**
 * `source` (a pattern without anchors) with a run of separators allowed after every character it
 * matches: `[0-9]{7}` becomes `(?:[0-9][-. ()]*){7}`. Knows the syntax the corridors' patterns use:
 * literals, escapes, classes, groups, alternatives and quantifiers.
 */
function withSeparators(source: string): string {
  let out = '';
  for (let i = 0; i < source.length; ) {
    let atom: string;
    const c = source[i]!;
    if (c === '\\') atom = source.slice(i, i + 2);
    else if (c === '[') {
      let j = i + 1;
      while (source[j] !== ']') j += source[j] === '\\' ? 2 : 1;
      atom = source.slice(i, j + 1);
    } else if ('()|'.includes(c)) {
      const group = source.startsWith('(?:', i) ? '(?:' : c;
      i += group.length;
      // A group's content already allows separators after each character: its quantifier stays.
      const quantifier = c === ')' ? (QUANTIFIER.exec(source.slice(i))?.[0] ?? '') : '';
      out += group + quantifier;
      i += quantifier.length;
      continue;
    } else if ('^$'.includes(c)) throw new Error(`an anchor inside a mobile pattern: ${source}`);
    else atom = c;
    i += atom.length;
    const quantifier = QUANTIFIER.exec(source.slice(i))?.[0];
    if (quantifier) {
      out += `(?:${atom}${SEPARATORS})${quantifier}`;
      i += quantifier.length;
    } else out += `${atom}${SEPARATORS}`;
  }
  return out;
}

/**
 * The pattern of every spelling of an account that `checkAccount` accepts (after trimming): for a
 * mobile number, the E.164 pattern with `+`, `00`, the bare calling code or the trunk prefix in
 * front and separators anywhere; for anything else, the pattern itself. For documents that must be
 * exactly as strict as the server.
 */
export function writtenPattern(format: AccountFormat): string {
  if (!format.mobile) return format.pattern.source;
  const { countryCode, trunkPrefix } = format.mobile;
  const head = `^\\+${countryCode}`;
  const source = format.pattern.source;
  if (!source.startsWith(head) || !source.endsWith('$'))
    throw new Error(`a mobile pattern must read ${head}…$: ${source}`);
  const national = withSeparators(source.slice(head.length, -1));
  const international = `(?:\\+${SEPARATORS}|0${SEPARATORS}0${SEPARATORS})?${withSeparators(countryCode)}`;
  const prefix = trunkPrefix ? `(?:${international}|${withSeparators(trunkPrefix)})` : international;
  return `^${SEPARATORS}${prefix}${national}$`;
}

/** An account format as the file writes it: an anchored pattern and an example that fits it. */
const accountFormat = z
  .object({
    pattern: z.string().min(3),
    description: z.string().min(1),
    example: z.string().min(1),
    mobile: z
      .object({
        country_code: z.string().regex(/^[1-9][0-9]{0,2}$/, 'must be a calling code without +'),
        trunk_prefix: z.string().regex(/^[0-9]?$/, 'must be one digit, or empty'),
      })
      .optional(),
  })
  .transform((f, ctx): AccountFormat => {
    if (!f.pattern.startsWith('^') || !f.pattern.endsWith('$')) {
      ctx.addIssue({ code: 'custom', message: 'pattern must be anchored: ^…$' });
      return z.NEVER;
    }
    let pattern: RegExp;
    try {
      pattern = new RegExp(f.pattern, 'u');
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: `pattern does not compile: ${(err as Error).message}` });
      return z.NEVER;
    }
    if (!pattern.test(f.example)) {
      ctx.addIssue({ code: 'custom', message: `example ${f.example} does not fit the pattern` });
      return z.NEVER;
    }
    const format: AccountFormat = { pattern, description: f.description, example: f.example };
    if (f.mobile) {
      format.mobile = { countryCode: f.mobile.country_code, trunkPrefix: f.mobile.trunk_prefix };
      // Every spelling a refusal offers must come back to the example itself.
      for (const spelling of mobileSpellings(format.mobile, f.example)) {
        if (canonicalMobile(format.mobile, spelling) !== f.example) {
          ctx.addIssue({
            code: 'custom',
            message: `the mobile spelling ${spelling} does not come to the example ${f.example}`,
          });
          return z.NEVER;
        }
      }
    }
    return format;
  });

const fileSchema = z.object({
  settlement: z.object({
    USDT: z.object({
      rail: z.literal('CRYPTO'),
      networks: z.record(
        z.enum(NETWORKS),
        z.object({
          network_fee: decimal.optional(),
          refund_fee: decimal.optional(),
          address: accountFormat,
        }),
      ),
      default_network: z.enum(NETWORKS),
    }),
    NGN: z.object({
      rail: z.literal('BANK_TRANSFER'),
      network_fee: decimal.optional(),
      refund_fee: decimal.optional(),
    }),
  }),
  corridors: z.array(
    z
      .object({
        country: z.string().regex(/^([A-Z]{2}|\*)$/),
        currency,
        destination_types: z.array(z.enum(DESTINATION_TYPES)).min(1),
        /** Per destination type paid to an account (not CRYPTO_WALLET: its address is the network's). */
        account_formats: z.partialRecord(z.enum(['BANK_ACCOUNT', 'MOBILE_MONEY']), accountFormat).default({}),
        pricing: z.partialRecord(
          z.enum(SETTLEMENT_CURRENCIES),
          z.object({
            spread_percent: decimal,
            platform_fee_percent: decimal.optional(),
            platform_fee_fixed: decimal.optional(),
          }),
        ),
        institutions: z.array(
          z.object({
            provider_code: z.string().min(1),
            provider_name: z.string().min(1),
            destination_type: z.enum(DESTINATION_TYPES),
          }),
        ),
      })
      .superRefine((c, ctx) => {
        for (const type of c.destination_types) {
          if (type !== 'CRYPTO_WALLET' && !c.account_formats[type]) {
            ctx.addIssue({
              code: 'custom',
              path: ['account_formats', type],
              message: `${c.country}/${c.currency} pays ${type} but says nothing of its account format`,
            });
          }
          if (
            type === 'MOBILE_MONEY' &&
            c.account_formats.MOBILE_MONEY &&
            !c.account_formats.MOBILE_MONEY.mobile
          ) {
            ctx.addIssue({
              code: 'custom',
              path: ['account_formats', type, 'mobile'],
              message: `${c.country}/${c.currency} pays MOBILE_MONEY but says nothing of how its numbers are written`,
            });
          }
        }
      }),
  ),
  rate_feed: z.record(z.string(), z.string()).optional(),
});

export type CorridorsFile = z.infer<typeof fileSchema>;
export type CorridorEntry = CorridorsFile['corridors'][number];
export type Institution = CorridorEntry['institutions'][number];

/** What a corridor charges when settled in one currency. Absent fees are zero. */
export interface Pricing {
  spreadPercent: Decimal;
  platformFeePercent: Decimal;
  platformFeeFixed: Decimal;
}

export const DEFAULT_CORRIDORS_FILE = new URL('./corridors.json', import.meta.url);

/**
 * The corridors configuration (`src/corridors/corridors.json`): countries, currencies,
 * destination types, institutions, fees and spreads. Validated once at start.
 */
export class Corridors {
  readonly data: CorridorsFile;

  constructor(data: unknown) {
    this.data = fileSchema.parse(data);
  }

  static load(file: string | URL = DEFAULT_CORRIDORS_FILE): Corridors {
    return new Corridors(JSON.parse(readFileSync(file, 'utf8')));
  }

  static #shipped: Corridors | undefined;

  /** The corridors file the service ships with, loaded once: what the generated documents describe. */
  static shipped(): Corridors {
    Corridors.#shipped ??= Corridors.load();
    return Corridors.#shipped;
  }

  /** The corridor paying `currency` in `country` (crypto corridors match any country). */
  find(country: string, currency: string): CorridorEntry | undefined {
    return (
      this.data.corridors.find((c) => c.country === country && c.currency === currency) ??
      this.data.corridors.find((c) => c.country === '*' && c.currency === currency)
    );
  }

  /** Every currency some corridor pays out in, in the file's order: the only ones a request may name. */
  currencies(): string[] {
    return [...new Set(this.data.corridors.map((c) => c.currency))];
  }

  /** The corridor that pays out in `currency`, whatever the country (quotes and rates name no country). */
  byCurrency(currency: string): CorridorEntry | undefined {
    return this.data.corridors.find((c) => c.currency === currency);
  }

  /** Pricing of a corridor for a settlement currency, or undefined when that pair is not offered. */
  pricing(corridor: CorridorEntry, settlement: SettlementCurrency): Pricing | undefined {
    const p = corridor.pricing[settlement];
    if (!p) return undefined;
    return {
      spreadPercent: p.spread_percent,
      platformFeePercent: p.platform_fee_percent ?? toDecimal(0),
      platformFeeFixed: p.platform_fee_fixed ?? toDecimal(0),
    };
  }

  railOf(settlement: SettlementCurrency): Rail {
    return this.data.settlement[settlement].rail;
  }

  defaultNetwork(): Network {
    return this.data.settlement.USDT.default_network;
  }

  /**
   * How an account of `type` is written in `corridor`: its own format for bank accounts and
   * mobile money, the network's address format for a crypto wallet.
   */
  accountFormat(
    corridor: CorridorEntry,
    type: DestinationType,
    network: Network | null,
  ): AccountFormat | undefined {
    if (type === 'CRYPTO_WALLET') return network ? this.addressFormat(network) : undefined;
    return corridor.account_formats[type];
  }

  /** What an address on `network` looks like. */
  addressFormat(network: Network): AccountFormat {
    const format = this.data.settlement.USDT.networks[network]?.address;
    if (!format) throw new Error(`the corridors file has no ${network} network`);
    return format;
  }

  /** Label of a network for display on instructions: its token standard (TRC20, BEP20). */
  networkLabel(network: Network): string {
    return NETWORK_STANDARDS[network];
  }

  /** Network fee charged on a payout settled in `settlement` (and `network` for crypto). */
  networkFee(settlement: SettlementCurrency, network: Network | null): Decimal {
    if (settlement === 'NGN') return this.data.settlement.NGN.network_fee ?? toDecimal(0);
    return this.data.settlement.USDT.networks[network ?? this.defaultNetwork()]?.network_fee ?? toDecimal(0);
  }

  /** Fee of the return transfer when refunding in `settlement`; unconfigured means zero. */
  refundFee(settlement: SettlementCurrency, network: Network | null): Decimal {
    if (settlement === 'NGN') return this.data.settlement.NGN.refund_fee ?? toDecimal(0);
    return this.data.settlement.USDT.networks[network ?? this.defaultNetwork()]?.refund_fee ?? toDecimal(0);
  }
}

export function isSettlementCurrency(value: string): value is SettlementCurrency {
  return (SETTLEMENT_CURRENCIES as readonly string[]).includes(value);
}

/**
 * An account identifier as the service keeps, checks, resolves and compares it: a mobile number
 * in E.164 whichever way it was written (see `canonicalMobile`), anything else as written. With
 * the `issue` of a refusal (null when it fits), which shows the accepted spellings.
 */
export function checkAccount(
  format: AccountFormat,
  written: string,
): { account: string; issue: string | null } {
  const account = format.mobile ? canonicalMobile(format.mobile, written) : written;
  if (format.pattern.test(account)) return { account, issue: null };
  const issue = format.mobile
    ? `must be ${format.description}, written ${orList(mobileSpellings(format.mobile, format.example))}; spaces and dashes are allowed`
    : `must be ${format.description}, such as ${format.example}`;
  return { account, issue };
}

/** Why `account` does not fit `format`, for a detail's `issue`; null when it fits. */
export function accountFormatIssue(format: AccountFormat, account: string): string | null {
  return checkAccount(format, account).issue;
}

function orList(items: readonly string[]): string {
  return items.length > 1 ? `${items.slice(0, -1).join(', ')} or ${items.at(-1)}` : (items[0] ?? '');
}
