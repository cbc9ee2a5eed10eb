import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { countryCode, currencyCode } from '#src/banks/schemas.ts';
import { requireInstitution } from '#src/banks/service.ts';
import {
  Corridors,
  checkAccount,
  type DestinationType,
  NETWORK_NAMES,
  type Network,
  networkNamed,
  type SettlementCurrency,
  withChainName,
  writtenPattern,
} from '#src/corridors/corridors.ts';
import { emSql } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { AppError, type ErrorDetail } from '#src/http/errors.ts';
import {
  AMOUNT_RULES,
  amountDecimals,
  amountIn,
  decimalsIssue,
  destinationTypeSchema,
  idIn,
  networkIn,
  type RequestVariant,
  requestVariants,
  settlementCurrencySchema,
  when,
} from '#src/http/schemas.ts';
import type { IdempotentWrite } from '#src/idempotency/idempotency.ts';
import { newId } from '#src/lib/ids.ts';
import { currencyDecimals } from '#src/lib/money.ts';
import { checkPayeeAtCreate, type PayeeCheckState, payeeDecision } from '#src/payees/check.ts';
import { useQuote } from '#src/quotes/service.ts';
import { addressByNetwork } from '#src/refund-destinations/schemas.ts';
import type { TenantInfo } from '#src/tenants/auth.ts';
import { checkWebhookUrl, systemResolver, urlPolicyOf } from '#src/webhooks/url-policy.ts';
import { insertNewPayout, type NewPayout } from './lifecycle.ts';
import { metadataIn } from './metadata.ts';
import type { PayoutResource } from './resource.ts';

/**
 * What each destination type requires beyond the common fields, and what it refuses. The
 * server checks these in `crossFieldIssues`; the OpenAPI document shows one request shape per type.
 */
const DESTINATION_SHAPES = {
  BANK_ACCOUNT: {
    name: 'BankAccountPayoutRequest',
    description:
      'A payout to a bank account: provider code and account name are required, and the account number ' +
      'has the format of its corridor (destination_country and destination_currency).',
    require: ['destination_provider_code', 'destination_account_name'],
    allOf: accountFormatsByCorridor('BANK_ACCOUNT'),
  },
  MOBILE_MONEY: {
    name: 'MobileMoneyPayoutRequest',
    description:
      'A payout to a mobile money wallet: provider code and account name are required, and the number is ' +
      'one of its corridor (destination_country and destination_currency), in any spelling the pattern allows.',
    require: ['destination_provider_code', 'destination_account_name'],
    allOf: accountFormatsByCorridor('MOBILE_MONEY'),
  },
  CRYPTO_WALLET: {
    name: 'CryptoWalletPayoutRequest',
    description:
      'A payout in USDT to a crypto wallet: destination_provider_name is the network (TRON or BSC, or ' +
      'their token standards TRC20 and BEP20; the payout names the chain), destination_account_unique ' +
      'an address on it, and there is no provider code.',
    omit: ['destination_provider_code'],
    narrow: { destination_provider_name: { enum: [...NETWORK_NAMES] } },
    allOf: addressByNetwork('destination_provider_name', 'destination_account_unique'),
  },
} as const satisfies Record<DestinationType, RequestVariant>;

/**
 * The document's form of the account check of `crossFieldIssues`: per corridor, the pattern of
 * every spelling of an account of `type` that the server accepts.
 */
function accountFormatsByCorridor(type: 'BANK_ACCOUNT' | 'MOBILE_MONEY'): Record<string, unknown>[] {
  return Corridors.shipped().data.corridors.flatMap((corridor) => {
    const format = corridor.account_formats[type];
    if (!format) return [];
    return [
      when(
        { destination_country: corridor.country, destination_currency: corridor.currency },
        { destination_account_unique: { pattern: writtenPattern(format) } },
      ),
    ];
  });
}

export const createPayoutIn = z
  .strictObject({
    destination_type: destinationTypeSchema,
    destination_country: countryCode,
    destination_currency: currencyCode,
    destination_amount: amountIn.describe(
      `What the beneficiary receives, in destination_currency. ${AMOUNT_RULES}`,
    ),
    destination_account_unique: z
      .string()
      .trim()
      .min(1)
      .max(128)
      .describe(
        'Mobile number, bank account number, or crypto address, in the format of its corridor ' +
          '(each destination type gives the pattern of each corridor; docs/account-formats.md; a refusal says ' +
          'which). A mobile number may be written with or without +, with 00, or nationally with the trunk 0, ' +
          'with spaces or dashes: it is kept in E.164.',
      ),
    destination_provider_name: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .describe('Display name of the provider or bank; the network (TRON or BSC) for CRYPTO_WALLET.'),
    destination_provider_code: z
      .string()
      .trim()
      .min(1)
      .max(32)
      .optional()
      .describe('provider_code from GET /v1/banks; the processor routes on it, never on the name.'),
    destination_account_name: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe('Beneficiary name, as returned by POST /v1/banks/resolve.'),
    settlement_currency: settlementCurrencySchema.default('USDT'),
    settlement_network: networkIn
      .optional()
      .describe(
        'USDT network to pay on (crypto rail only; default TRON); TRC20 and BEP20 name the same networks; ignored for NGN.',
      ),
    merchant_reference: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .optional()
      .describe('Your own reference, echoed back.'),
    metadata: metadataIn.optional(),
    notification_url: z
      .string()
      .max(2048)
      .optional()
      .describe('Per-payout webhook URL (HTTPS): this payout’s events go here instead of the tenant URL.'),
    quote_id: idIn
      .optional()
      .describe('A PENDING or ACCEPTED quote of the same currencies and amount, to use its frozen price.'),
  })
  .meta({
    id: 'CreatePayoutRequest',
    description: 'A payout request; which fields are required depends on destination_type.',
    allOf: amountDecimals('destination_currency', 'destination_amount'),
    ...requestVariants('destination_type', DESTINATION_SHAPES),
  });
export type CreatePayoutInput = z.output<typeof createPayoutIn>;

/** The network a crypto wallet's provider name stands for, in any case (`trc20` is TRON). */
function cryptoNetworkOf(input: CreatePayoutInput): Network | undefined {
  return networkNamed(input.destination_provider_name.toUpperCase());
}

/**
 * Field rules that depend on other fields: required per destination type, the account's format in
 * its corridor (or the address format of its network), currency precision.
 */
function crossFieldIssues(
  corridors: Corridors,
  input: CreatePayoutInput,
): { issues: ErrorDetail[]; account: string } {
  const issues: ErrorDetail[] = [];
  const shape: RequestVariant = DESTINATION_SHAPES[input.destination_type];
  for (const field of shape.require ?? []) {
    if (input[field as keyof CreatePayoutInput] === undefined)
      issues.push({ field, issue: `is required for ${input.destination_type}` });
  }
  for (const field of shape.omit ?? []) {
    if (input[field as keyof CreatePayoutInput] !== undefined)
      issues.push({ field, issue: `must be omitted for ${input.destination_type}` });
  }
  let network: Network | null = null;
  if (input.destination_type === 'CRYPTO_WALLET') {
    network = cryptoNetworkOf(input) ?? null;
    if (!network) {
      issues.push({
        field: 'destination_provider_name',
        issue: `must be the network, ${NETWORK_NAMES.join(', ')}, for CRYPTO_WALLET`,
      });
    }
  }
  // An unsupported corridor is refused later, as such; its accounts have no format to check.
  const corridor = corridors.find(input.destination_country, input.destination_currency);
  const format = corridor && corridors.accountFormat(corridor, input.destination_type, network);
  const checked = format
    ? checkAccount(format, input.destination_account_unique)
    : { account: input.destination_account_unique, issue: null };
  if (checked.issue) issues.push({ field: 'destination_account_unique', issue: checked.issue });
  const decimals = decimalsIssue(
    input.destination_amount,
    input.destination_currency,
    currencyDecimals(input.destination_currency),
  );
  if (decimals) issues.push({ field: 'destination_amount', issue: decimals });
  return { issues, account: checked.account };
}

/**
 * A create request as its Idempotency-Key compares it: the mobile number in E.164 and the networks
 * by their chains, as the payout keeps them; every other field as sent. Anything that is not yet
 * a well-formed request stays as it is (the schema refuses it next).
 */
export function comparableCreateRequest(corridors: Corridors, raw: unknown): unknown {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return raw;
  let out = withChainName(raw as Record<string, unknown>, 'settlement_network');
  if (out.destination_type === 'CRYPTO_WALLET')
    out = withChainName(out, 'destination_provider_name', { anyCase: true });
  const {
    destination_country: country,
    destination_currency: currency,
    destination_account_unique: account,
  } = out;
  if (out.destination_type !== 'MOBILE_MONEY' || typeof account !== 'string') return out;
  const corridor =
    typeof country === 'string' && typeof currency === 'string' && corridors.find(country, currency);
  const format = corridor && corridors.accountFormat(corridor, 'MOBILE_MONEY', null);
  return format ? { ...out, destination_account_unique: checkAccount(format, account.trim()).account } : out;
}

/**
 * Creates a payout (POST /v1/payouts). Everything that asks someone else (the institution
 * directory, DNS for notification_url) happens first; then one statement checks the refund
 * destination and inserts the payout in CREATED with its timeline row, its payout.created event,
 * its instruction-generation task and the idempotent response. With a quote, that statement runs
 * in a transaction that also uses the quote. Returns the resource and, when the statement stored
 * the response itself, its exact bytes.
 */
export async function createPayout(
  deps: Deps,
  args: {
    tenant: TenantInfo;
    input: CreatePayoutInput;
    requestId: string;
    commit: <T>(work: (em: EntityManager) => Promise<T>) => Promise<T>;
    /** The Idempotency-Key's record, which the one-statement create stores itself. */
    idempotent: IdempotentWrite | null;
  },
): Promise<{ resource: PayoutResource; rendered: string | null }> {
  const { tenant, input } = args;
  if (!tenant.payoutsApproved) throw new AppError('TENANT_NOT_APPROVED');
  // The account as kept from here on: a mobile number in E.164, however it was written.
  const { issues, account } = crossFieldIssues(deps.corridors, input);
  if (issues.length > 0) throw new AppError('VALIDATION_FAILED', { details: issues });

  const corridor = deps.corridors.find(input.destination_country, input.destination_currency);
  const settlement: SettlementCurrency = input.settlement_currency;
  if (
    !corridor?.destination_types.includes(input.destination_type) ||
    !deps.corridors.pricing(corridor, settlement)
  ) {
    throw new AppError('CORRIDOR_NOT_SUPPORTED', {
      message: `No ${input.destination_type} payouts in ${input.destination_currency} to ${input.destination_country} settled in ${settlement}.`,
      details: [
        {
          field: corridor ? 'settlement_currency' : 'destination_country',
          issue: `${input.destination_country}/${input.destination_currency}/${input.destination_type} settled in ${settlement} is not a supported corridor`,
        },
      ],
    });
  }

  let providerName = input.destination_provider_name;
  let payee: PayeeCheckState | null = null;
  if (input.destination_type !== 'CRYPTO_WALLET') {
    const institution = await requireInstitution(deps, {
      country: corridor.country,
      currency: input.destination_currency,
      destinationType: input.destination_type,
      providerCode: input.destination_provider_code ?? '',
      field: 'destination_provider_code',
    });
    providerName = input.destination_provider_name || institution.provider_name;
    payee = await checkPayeeAtCreate(deps, {
      destinationType: input.destination_type,
      currency: input.destination_currency,
      accountNumber: input.destination_account_unique,
      providerCode: input.destination_provider_code ?? null,
      accountName: input.destination_account_name ?? null,
    });
    if (
      payee &&
      payeeDecision(tenant.payeeNamePolicy, payee.check) === 'refuse' &&
      payee.check === 'NO_MATCH'
    ) {
      throw new AppError('PAYEE_NAME_MISMATCH', {
        details: [
          {
            field: 'destination_account_name',
            issue:
              payee.institutionName === null
                ? 'the institution holds no account with this number'
                : 'does not match the name the institution holds for this account (NO_MATCH)',
          },
        ],
      });
    }
  } else {
    // The chain's name, whichever name the request used: what the processor routes on.
    providerName = cryptoNetworkOf(input) as Network;
  }

  let notificationUrl: string | null = null;
  if (input.notification_url !== undefined) {
    const verdict = await checkWebhookUrl(input.notification_url, {
      ...urlPolicyOf(deps.config),
      resolve: systemResolver,
      unresolved: 'accept',
    });
    if (!verdict.ok)
      throw new AppError('WEBHOOK_URL_INVALID', {
        details: [{ field: 'notification_url', issue: verdict.issue }],
      });
    notificationUrl = verdict.url;
  }

  const network: Network | null =
    settlement === 'USDT' ? (input.settlement_network ?? deps.corridors.defaultNetwork()) : null;
  const now = deps.clock.now();
  const payout: NewPayout = {
    id: newId(),
    tenantId: tenant.id,
    merchantReference: input.merchant_reference ?? null,
    metadata: input.metadata ?? {},
    notificationUrl,
    destinationType: input.destination_type,
    destinationCountry: input.destination_country,
    destinationCurrency: input.destination_currency,
    destinationAmount: input.destination_amount,
    destinationAccountUnique: account,
    destinationProviderName: providerName,
    destinationProviderCode:
      input.destination_type === 'CRYPTO_WALLET' ? null : (input.destination_provider_code ?? null),
    destinationAccountName: input.destination_account_name ?? null,
    settlementCurrency: settlement,
    settlementNetwork: network,
    quoteId: input.quote_id ?? null,
    payee,
  };
  // The creation row says what the name check found, when it found it in time.
  const note = {
    metadata: { request_id: args.requestId },
    reasonDetail: payee && payee.check !== 'PENDING' ? { payee_name_check: payee.check } : null,
  };

  // The common case is one statement: payout, timeline, event, task and the idempotent response.
  if (input.quote_id === undefined && args.idempotent) {
    const created = await insertNewPayout(deps.sql, payout, { now, note, idempotent: args.idempotent });
    return { resource: created.resource, rendered: created.json };
  }
  // With a quote, the quote is used (its row locked, its machine moved to USED) in the same transaction.
  const resource = await args.commit(async (em) => {
    const created = await insertNewPayout(emSql(em), payout, { now, note });
    if (input.quote_id !== undefined) {
      await useQuote(em, {
        tenantId: tenant.id,
        quoteId: input.quote_id,
        payoutId: payout.id,
        now,
        settlementCurrency: settlement,
        destinationCurrency: input.destination_currency,
        destinationAmount: input.destination_amount,
      });
    }
    return created.resource;
  });
  return { resource, rendered: null };
}
