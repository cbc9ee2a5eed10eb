import { z } from 'zod';
import { DESTINATION_TYPES } from '#src/corridors/corridors.ts';

export const countryCode = z.string().regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code, upper case');
export const currencyCode = z.string().regex(/^[A-Z]{3,4}$/, 'must be an ISO 4217 code, upper case');
export const payableType = z.enum(['BANK_ACCOUNT', 'MOBILE_MONEY']);
export const destinationType = z.enum(DESTINATION_TYPES);

export const institutionOut = z.object({
  provider_name: z.string(),
  provider_code: z.string(),
  destination_type: destinationType,
});

export const nameEnquiryOut = z.object({
  destination_account_name: z.string(),
  destination_account_unique: z.string(),
  destination_provider_code: z.string(),
  destination_type: destinationType,
});

/**
 * Account-number shapes the service accepts before asking anyone: a 10-digit NUBAN for Nigerian
 * banks, 6 to 20 digits for other banks, an international or local phone number for mobile money.
 */
export function accountFormatIssue(
  type: 'BANK_ACCOUNT' | 'MOBILE_MONEY',
  currency: string,
  account: string,
): string | null {
  if (type === 'MOBILE_MONEY')
    return /^\+?\d{9,15}$/.test(account) ? null : 'must be a phone number of 9 to 15 digits';
  if (currency === 'NGN') return /^\d{10}$/.test(account) ? null : 'must be a 10-digit NUBAN';
  return /^\d{6,20}$/.test(account) ? null : 'must be 6 to 20 digits';
}
