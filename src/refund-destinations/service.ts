import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import { resolveAccount } from '#src/banks/service.ts';
import { accountFormatIssue, type Corridors } from '#src/corridors/corridors.ts';
import type { Deps } from '#src/deps.ts';
import { AppError, type ErrorDetail } from '#src/http/errors.ts';
import { Tenant } from '#src/tenants/entities.ts';
import { RefundDestination } from './entities.ts';
import {
  ngnBankAccountFormat,
  type RefundCurrency,
  type RefundDestinationIn,
  type RefundNetwork,
  TYPE_OF_CURRENCY,
} from './schemas.ts';

/** A destination request whose fields fit its type (still unverified). */
export type DestinationRequest =
  | {
      currency: 'NGN';
      type: 'BANK_ACCOUNT';
      bankCode: string;
      accountNumber: string;
      bankName: string | null;
    }
  | { currency: 'USDT'; type: 'CRYPTO_ADDRESS'; network: RefundNetwork; address: string; tag: string | null };

/** What is stored for a new destination: the request after verification. */
export interface DestinationValues {
  currency: RefundCurrency;
  type: 'BANK_ACCOUNT' | 'CRYPTO_ADDRESS';
  bankCode: string | null;
  bankName: string | null;
  accountNumber: string | null;
  accountName: string | null;
  network: RefundNetwork | null;
  address: string | null;
  tag: string | null;
  isVerified: boolean;
}

/**
 * Checks the rules that span fields: the type must be the currency's, every field the type needs
 * is present and well formed (the account and address formats of the corridors file), and no
 * field of the other type is sent. All problems are reported at once (400 VALIDATION_FAILED),
 * except a wrong type, which makes the rest meaningless.
 */
export function destinationRequest(corridors: Corridors, input: RefundDestinationIn): DestinationRequest {
  const expected = TYPE_OF_CURRENCY[input.currency];
  if (input.type !== expected) {
    throw new AppError('VALIDATION_FAILED', {
      details: [{ field: 'type', issue: `must be ${expected} for ${input.currency}` }],
    });
  }
  const details: ErrorDetail[] = [];
  const required = <T>(field: string, value: T | null | undefined): value is T => {
    if (value !== null && value !== undefined) return true;
    details.push({ field, issue: `is required for ${input.type}` });
    return false;
  };
  const notApplicable = (fields: Record<string, unknown>) => {
    for (const [field, value] of Object.entries(fields)) {
      if (value !== null && value !== undefined)
        details.push({ field, issue: `does not apply to ${input.type}` });
    }
  };

  if (input.currency === 'NGN') {
    const hasCode = required('bank_code', input.bank_code);
    const hasNumber = required('account_number', input.account_number);
    if (hasNumber) {
      const issue = accountFormatIssue(ngnBankAccountFormat(corridors), input.account_number as string);
      if (issue) details.push({ field: 'account_number', issue });
    }
    notApplicable({ network: input.network, address: input.address, tag: input.tag });
    if (details.length > 0 || !hasCode || !hasNumber) throw new AppError('VALIDATION_FAILED', { details });
    return {
      currency: 'NGN',
      type: 'BANK_ACCOUNT',
      bankCode: input.bank_code as string,
      accountNumber: input.account_number as string,
      bankName: input.bank_name ?? null,
    };
  }

  const hasNetwork = required('network', input.network);
  const hasAddress = required('address', input.address);
  if (hasNetwork && hasAddress) {
    const format = corridors.addressFormat(input.network as RefundNetwork);
    const issue = accountFormatIssue(format, input.address as string);
    if (issue) details.push({ field: 'address', issue });
  }
  notApplicable({
    bank_code: input.bank_code,
    account_number: input.account_number,
    bank_name: input.bank_name,
  });
  if (details.length > 0 || !hasNetwork || !hasAddress) throw new AppError('VALIDATION_FAILED', { details });
  return {
    currency: 'USDT',
    type: 'CRYPTO_ADDRESS',
    network: input.network as RefundNetwork,
    address: input.address as string,
    tag: input.tag ?? null,
  };
}

/**
 * Name enquiry for an NGN destination. Any verification failure (no such account, unknown bank
 * code) is 422 BANK_ACCOUNT_VERIFICATION_FAILED naming `account_number` (and `bank_code` when
 * the code is the problem); an unreachable directory stays a 503 the merchant can retry.
 */
export async function verifyBankAccount(
  deps: Deps,
  request: { bankCode: string; accountNumber: string },
): Promise<{ accountName: string; institutionName: string }> {
  try {
    const { accountName, institution } = await resolveAccount(deps, {
      destinationType: 'BANK_ACCOUNT',
      currency: 'NGN',
      accountNumber: request.accountNumber,
      providerCode: request.bankCode,
      fields: { account: 'account_number', provider: 'bank_code', currency: 'currency' },
    });
    return { accountName, institutionName: institution.provider_name };
  } catch (err) {
    if (err instanceof AppError && err.code === 'ACCOUNT_NOT_FOUND') {
      throw new AppError('BANK_ACCOUNT_VERIFICATION_FAILED', {
        details: [
          { field: 'account_number', issue: 'the bank has no account with this number at bank_code' },
        ],
      });
    }
    if (err instanceof AppError && err.code === 'PROVIDER_CODE_UNKNOWN') {
      throw new AppError('BANK_ACCOUNT_VERIFICATION_FAILED', {
        details: [
          {
            field: 'bank_code',
            issue:
              'is not a Nigerian bank code; read it from GET /v1/banks?country=NG&destination_type=BANK_ACCOUNT',
          },
          { field: 'account_number', issue: 'could not be verified' },
        ],
      });
    }
    throw err;
  }
}

/**
 * Validates and verifies a PUT body into the values to store. Runs the name enquiry: call it
 * before opening the write transaction.
 */
export async function prepareDestination(deps: Deps, input: RefundDestinationIn): Promise<DestinationValues> {
  const request = destinationRequest(deps.corridors, input);
  if (request.type === 'CRYPTO_ADDRESS') {
    return {
      currency: request.currency,
      type: request.type,
      bankCode: null,
      bankName: null,
      accountNumber: null,
      accountName: null,
      network: request.network,
      address: request.address,
      tag: request.tag,
      // The contract: crypto addresses are never verified; the merchant owns their correctness.
      isVerified: false,
    };
  }
  const verified = await verifyBankAccount(deps, request);
  return {
    currency: request.currency,
    type: request.type,
    bankCode: request.bankCode,
    bankName: request.bankName ?? verified.institutionName,
    accountNumber: request.accountNumber,
    accountName: verified.accountName,
    network: null,
    address: null,
    tag: null,
    isVerified: true,
  };
}

/**
 * Makes `values` the tenant's active destination for its currency, inside the write transaction:
 * the previous active one is deactivated (kept as history; refunds in flight hold their own
 * snapshot) before the new row is inserted, as the partial unique index demands.
 */
export async function replaceRefundDestination(
  em: EntityManager,
  tenantId: string,
  values: DestinationValues,
): Promise<{ destination: RefundDestination; replaced: RefundDestination | null }> {
  // Serialises concurrent replacements for one tenant; without it both would see the same
  // active row and the second insert would hit the unique index.
  const tenant = await em.findOneOrFail(Tenant, tenantId, { lockMode: LockMode.PESSIMISTIC_WRITE });
  const replaced = await em.findOne(
    RefundDestination,
    { tenant, currency: values.currency, isActive: true },
    { refresh: true },
  );
  if (replaced) {
    replaced.isActive = false;
    await em.flush();
  }
  const destination = em.create(RefundDestination, { tenant, ...values, isActive: true });
  await em.flush();
  return { destination, replaced };
}

/** The tenant's active destination for a settlement currency, or null (payouts then need one). */
export async function activeRefundDestination(
  em: EntityManager,
  tenantId: string,
  currency: RefundCurrency,
): Promise<RefundDestination | null> {
  return em.findOne(RefundDestination, { tenant: tenantId, currency, isActive: true });
}

/** The tenant's active destinations, one per currency at most, in currency order. */
export async function listActiveRefundDestinations(
  em: EntityManager,
  tenantId: string,
): Promise<RefundDestination[]> {
  return em.find(RefundDestination, { tenant: tenantId, isActive: true }, { orderBy: { currency: 'asc' } });
}
