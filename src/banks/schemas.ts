import { z } from 'zod';
import { Corridors, writtenPattern } from '#src/corridors/corridors.ts';
import { CURRENCIES, currencySchema, destinationTypeSchema, when } from '#src/http/schemas.ts';

export const countryCode = z
  .string()
  .regex(/^[A-Z]{2}$/, 'must be an ISO 3166-1 alpha-2 code, upper case')
  .describe('ISO 3166-1 alpha-2 country code, upper case.');
export const currencyCode = currencySchema;
export const payableType = z.enum(['BANK_ACCOUNT', 'MOBILE_MONEY']).meta({
  id: 'PayableDestinationType',
  description: 'A destination with an institution behind it: a bank account or a mobile money wallet.',
});
export const destinationType = destinationTypeSchema;

export const institutionOut = z
  .object({
    provider_name: z.string().describe('Display name; never a routing value.'),
    provider_code: z.string().describe('The value to send as destination_provider_code.'),
    destination_type: destinationType,
  })
  .meta({
    id: 'Institution',
    description: 'A bank or mobile money provider able to receive payouts in a corridor.',
  });

export const nameEnquiryIn = z
  .strictObject({
    destination_type: payableType,
    destination_currency: currencyCode,
    destination_account_unique: z
      .string()
      .trim()
      .min(1)
      .max(34)
      .describe(
        'Bank account number (10-digit NUBAN for NGN) or mobile number (with or without +, with 00, or with ' +
          'the trunk 0; spaces and dashes allowed), in the format of the corridor of destination_currency ' +
          '(the request gives the pattern of each).',
      ),
    destination_provider_code: z.string().trim().min(1).max(32).describe('provider_code from GET /v1/banks.'),
  })
  .meta({ id: 'NameEnquiryRequest', allOf: accountFormatsByCurrency() } as never);

/**
 * The document's form of the account check of name enquiry (`resolveAccount`): per destination
 * type and the corridor of each currency, the pattern of every spelling the server accepts.
 */
function accountFormatsByCurrency(): Record<string, unknown>[] {
  const corridors = Corridors.shipped();
  return CURRENCIES.flatMap((currency) => {
    const corridor = corridors.byCurrency(currency);
    return payableType.options.flatMap((type) => {
      const format = corridor?.account_formats[type];
      if (!format) return [];
      return [
        when(
          { destination_type: type, destination_currency: currency },
          { destination_account_unique: { pattern: writtenPattern(format) } },
        ),
      ];
    });
  });
}

export const nameEnquiryOut = z
  .object({
    destination_account_name: z
      .string()
      .describe('The name the institution holds; send it as destination_account_name.'),
    destination_account_unique: z
      .string()
      .describe('The account as the service keeps it: a mobile number in E.164, however it was written.'),
    destination_provider_code: z.string(),
    destination_type: destinationType,
  })
  .meta({ id: 'NameEnquiryResult', description: 'The institution-confirmed holder of an account.' });
