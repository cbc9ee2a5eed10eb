import { z } from 'zod';
import { type AccountFormat, Corridors, NETWORKS, namesOf } from '#src/corridors/corridors.ts';
import {
  iso,
  networkIn,
  networkSchema,
  type RequestVariant,
  requestVariants,
  settlementCurrencySchema,
  timestampOut,
} from '#src/http/schemas.ts';
import { maskAccountNumber, maskAddress } from '#src/lib/masking.ts';
import type { RefundDestination } from './entities.ts';

export const REFUND_CURRENCIES = ['NGN', 'USDT'] as const;
export type RefundCurrency = (typeof REFUND_CURRENCIES)[number];
export const REFUND_DESTINATION_TYPES = ['BANK_ACCOUNT', 'CRYPTO_ADDRESS'] as const;
export const REFUND_NETWORKS = ['TRON', 'BSC'] as const;
export type RefundNetwork = (typeof REFUND_NETWORKS)[number];

/** The one destination type each settlement currency can be refunded to. */
export const TYPE_OF_CURRENCY = {
  NGN: 'BANK_ACCOUNT',
  USDT: 'CRYPTO_ADDRESS',
} as const satisfies Record<RefundCurrency, (typeof REFUND_DESTINATION_TYPES)[number]>;

/**
 * The JSON Schema of "an address on the network named by `networkField`", for the OpenAPI document:
 * one `if`/`then` per network, with the address formats of the corridors file. The subschemas say
 * outright that they constrain one field and leave the others to the object they sit in (example
 * validators may otherwise read them as closed).
 */
export function addressByNetwork(networkField: string, addressField: string): Record<string, unknown>[] {
  const corridors = Corridors.shipped();
  return NETWORKS.map((network) => ({
    if: {
      properties: { [networkField]: { enum: namesOf(network) } },
      required: [networkField],
      additionalProperties: true,
    },
    // biome-ignore lint/suspicious/noThenProperty: JSON Schema's if/then, never awaited
    then: {
      properties: { [addressField]: { pattern: corridors.addressFormat(network).pattern.source } },
      additionalProperties: true,
    },
  }));
}

/** NGN is refunded to a Nigerian bank account: the format of the NGN corridor's bank accounts. */
export function ngnBankAccountFormat(corridors: Corridors): AccountFormat {
  const corridor = corridors.byCurrency('NGN');
  const format = corridor && corridors.accountFormat(corridor, 'BANK_ACCOUNT', null);
  if (!format) throw new Error('the corridors file has no NGN bank accounts to refund to');
  return format;
}

export const refundDestinationTypeSchema = z.enum(REFUND_DESTINATION_TYPES).meta({
  id: 'RefundDestinationType',
  description: 'BANK_ACCOUNT for NGN, CRYPTO_ADDRESS for USDT.',
});

const refundCurrencySchema = settlementCurrencySchema.describe(
  'The settlement currency refunded to this destination.',
);

/**
 * The body of `PUT /v1/refund-destinations`. Which fields are required depends on `type`, so that
 * is checked by `destinationRequest` with one detail per missing field. Optional fields accept
 * null as "not sent".
 */
export const refundDestinationIn = z
  .strictObject({
    currency: refundCurrencySchema,
    type: refundDestinationTypeSchema,
    bank_code: z
      .string()
      .min(1)
      .max(16)
      .nullish()
      .describe('BANK_ACCOUNT: provider_code from GET /v1/banks.'),
    account_number: z.string().nullish().describe('BANK_ACCOUNT: the 10-digit NUBAN.'),
    bank_name: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .nullish()
      .describe("BANK_ACCOUNT, display only: defaults to the directory's name for bank_code."),
    network: networkIn
      .nullish()
      .describe('CRYPTO_ADDRESS: TRON (or TRC20) or BSC (or BEP20); the destination names the chain.'),
    address: z.string().nullish().describe('CRYPTO_ADDRESS: the address on that network.'),
    tag: z
      .string()
      .min(1)
      .max(100)
      .nullish()
      .describe('CRYPTO_ADDRESS: destination tag or memo where the chain uses one.'),
  })
  .meta({
    id: 'RefundDestinationRequest',
    description: 'Where refunds of one settlement currency go; the fields depend on type.',
    ...requestVariants('type', {
      BANK_ACCOUNT: {
        name: 'BankAccountRefundDestinationRequest',
        description:
          'NGN refunds go to a Nigerian bank account, verified by name enquiry before it is saved.',
        require: ['bank_code', 'account_number'],
        omit: ['network', 'address', 'tag'],
        narrow: {
          currency: { const: 'NGN' },
          account_number: { pattern: ngnBankAccountFormat(Corridors.shipped()).pattern.source },
        },
      },
      CRYPTO_ADDRESS: {
        name: 'CryptoAddressRefundDestinationRequest',
        description:
          'USDT refunds go to an address on TRON (TRC20) or BSC (BEP20); its correctness is the merchant’s.',
        require: ['network', 'address'],
        omit: ['bank_code', 'account_number', 'bank_name'],
        narrow: { currency: { const: 'USDT' } },
        allOf: addressByNetwork('network', 'address'),
      },
    } satisfies Record<(typeof REFUND_DESTINATION_TYPES)[number], RequestVariant>),
  });
export type RefundDestinationIn = z.infer<typeof refundDestinationIn>;

export const refundDestinationOut = z
  .object({
    id: z.string(),
    currency: refundCurrencySchema,
    type: refundDestinationTypeSchema,
    bank_name: z.string().nullable(),
    bank_code: z.string().nullable(),
    account_number_masked: z.string().nullable().describe('Last 4 digits visible, the rest asterisks.'),
    account_name: z.string().nullable().describe('The bank-confirmed name.'),
    network: networkSchema.nullable(),
    address_masked: z
      .string()
      .nullable()
      .describe('First 6 and last 4 characters visible, the rest asterisks.'),
    is_verified: z
      .boolean()
      .describe('True for bank accounts confirmed by name enquiry; always false for crypto addresses.'),
    is_active: z.boolean(),
    created_at: timestampOut,
    updated_at: timestampOut,
  })
  .meta({
    id: 'RefundDestination',
    description: 'Where refunds of one settlement currency go; account numbers and addresses always masked.',
  });
export type RefundDestinationOut = z.infer<typeof refundDestinationOut>;

/** The API view of a stored destination: masked, with the fields of the other type null. */
export function toRefundDestinationOut(row: RefundDestination): RefundDestinationOut {
  // Keys in schema order: the first response and its idempotent replay must be the same bytes.
  return {
    id: row.id,
    currency: row.currency,
    type: row.type,
    bank_name: row.bankName ?? null,
    bank_code: row.bankCode ?? null,
    account_number_masked: row.accountNumber ? maskAccountNumber(row.accountNumber) : null,
    account_name: row.accountName ?? null,
    network: row.network ?? null,
    address_masked: row.address ? maskAddress(row.address) : null,
    is_verified: row.isVerified,
    is_active: row.isActive,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}
