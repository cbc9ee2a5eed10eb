import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { countryCode, currencyCode } from '#src/banks/schemas.ts';
import { requireInstitution } from '#src/banks/service.ts';
import { NETWORKS, type Network, type SettlementCurrency } from '#src/corridors/corridors.ts';
import type { Deps } from '#src/deps.ts';
import { AppError, type ErrorDetail } from '#src/http/errors.ts';
import { amountIn, decimalsIssue } from '#src/http/schemas.ts';
import { currencyDecimals, isCurrency, toDecimal } from '#src/lib/money.ts';
import { useQuote } from '#src/quotes/service.ts';
import { cryptoAddressIssue } from '#src/refund-destinations/schemas.ts';
import { activeRefundDestination } from '#src/refund-destinations/service.ts';
import type { Tenant } from '#src/tenants/entities.ts';
import { checkWebhookUrl, systemResolver } from '#src/webhooks/url-policy.ts';
import { createPayoutRow } from './lifecycle.ts';
import { type PayoutResource, payoutResources } from './resource.ts';

export const createPayoutIn = z.strictObject({
  destination_type: z.enum(['MOBILE_MONEY', 'BANK_ACCOUNT', 'CRYPTO_WALLET']),
  destination_country: countryCode,
  destination_currency: currencyCode,
  destination_amount: amountIn,
  destination_account_unique: z.string().trim().min(1).max(128),
  destination_provider_name: z.string().trim().min(1).max(200),
  destination_provider_code: z.string().trim().min(1).max(32).optional(),
  destination_account_name: z.string().trim().min(1).max(200).optional(),
  settlement_currency: z.enum(['USDT', 'NGN']).default('USDT'),
  settlement_network: z.enum(NETWORKS).optional(),
  merchant_reference: z.string().trim().min(1).max(200).optional(),
  notification_url: z.string().max(2048).optional(),
  quote_id: z.string().min(1).max(64).optional(),
});
export type CreatePayoutInput = z.output<typeof createPayoutIn>;

/** Field rules that depend on other fields (required per destination type, currency precision). */
function crossFieldIssues(input: CreatePayoutInput): ErrorDetail[] {
  const issues: ErrorDetail[] = [];
  const payable = input.destination_type !== 'CRYPTO_WALLET';
  if (payable) {
    if (!input.destination_provider_code) {
      issues.push({ field: 'destination_provider_code', issue: `is required for ${input.destination_type}` });
    }
    if (!input.destination_account_name) {
      issues.push({ field: 'destination_account_name', issue: `is required for ${input.destination_type}` });
    }
  } else {
    if (input.destination_provider_code !== undefined) {
      issues.push({ field: 'destination_provider_code', issue: 'must be omitted for CRYPTO_WALLET' });
    }
    const network = input.destination_provider_name.toUpperCase();
    if (!(NETWORKS as readonly string[]).includes(network)) {
      issues.push({
        field: 'destination_provider_name',
        issue: 'must be the network, TRON or BSC, for CRYPTO_WALLET',
      });
    } else {
      const addressIssue = cryptoAddressIssue(network as Network, input.destination_account_unique);
      if (addressIssue) issues.push({ field: 'destination_account_unique', issue: addressIssue });
    }
  }
  if (!isCurrency(input.destination_currency)) {
    issues.push({ field: 'destination_currency', issue: 'is not a currency the service pays out' });
  } else {
    const decimals = decimalsIssue(
      input.destination_amount,
      input.destination_currency,
      currencyDecimals(input.destination_currency),
    );
    if (decimals) issues.push({ field: 'destination_amount', issue: decimals });
  }
  return issues;
}

/**
 * Creates a payout (POST /v1/payouts). Everything that asks someone else (the institution
 * directory, DNS for notification_url) happens first; then one transaction checks the refund
 * destination, uses the quote if one was given, and inserts the payout in CREATED with its
 * timeline row, its payout.created event and its instruction-generation task.
 */
export async function createPayout(
  deps: Deps,
  args: {
    tenant: Tenant;
    input: CreatePayoutInput;
    requestId: string;
    commit: <T>(work: (em: EntityManager) => Promise<T>) => Promise<T>;
  },
): Promise<PayoutResource> {
  const { tenant, input } = args;
  if (!tenant.payoutsApproved) throw new AppError('TENANT_NOT_APPROVED');
  const issues = crossFieldIssues(input);
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
  if (input.destination_type !== 'CRYPTO_WALLET') {
    const institution = await requireInstitution(deps, {
      country: corridor.country,
      currency: input.destination_currency,
      destinationType: input.destination_type,
      providerCode: input.destination_provider_code ?? '',
      field: 'destination_provider_code',
    });
    providerName = input.destination_provider_name || institution.provider_name;
  } else {
    providerName = input.destination_provider_name.toUpperCase();
  }

  let notificationUrl: string | null = null;
  if (input.notification_url !== undefined) {
    const verdict = await checkWebhookUrl(input.notification_url, {
      allowPrivate: deps.config.WEBHOOK_ALLOW_PRIVATE_URLS,
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
  const zero = toDecimal(0);

  return args.commit(async (em) => {
    const destination = await activeRefundDestination(em, tenant.id, settlement);
    if (!destination) {
      throw new AppError('REFUND_DESTINATION_REQUIRED', {
        details: [
          { field: 'settlement_currency', issue: `no refund destination is registered for ${settlement}` },
        ],
      });
    }
    const payout = await createPayoutRow(
      em,
      {
        tenant,
        merchantReference: input.merchant_reference ?? null,
        notificationUrl,
        destinationType: input.destination_type,
        destinationCountry: input.destination_country,
        destinationCurrency: input.destination_currency,
        destinationAmount: input.destination_amount,
        destinationAccountUnique: input.destination_account_unique,
        destinationProviderName: providerName,
        destinationProviderCode:
          input.destination_type === 'CRYPTO_WALLET' ? null : (input.destination_provider_code ?? null),
        destinationAccountName: input.destination_account_name ?? null,
        settlementCurrency: settlement,
        settlementNetwork: network,
        settlementAmount: zero,
        exchangeRate: zero,
        midMarketRate: zero,
        platformFeeAmount: zero,
        networkFeeAmount: zero,
        totalFeeAmount: zero,
        receivedAmount: zero,
        quoteId: null,
        isRefunded: false,
        refundReference: null,
        instructionAttempts: 0,
      },
      now,
      { metadata: { request_id: args.requestId } },
    );
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
      payout.quoteId = input.quote_id;
    }
    await em.flush();
    const [resource] = await payoutResources(em, [payout]);
    return resource as PayoutResource;
  });
}
