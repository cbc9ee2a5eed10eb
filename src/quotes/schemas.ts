import { z } from 'zod';
import {
  currencyOut,
  decimalOut,
  documentedAs,
  moneyOut,
  railSchema,
  timestampOut,
} from '#src/http/schemas.ts';

export const QUOTE_STATUSES = ['PENDING', 'ACCEPTED', 'USED', 'EXPIRED'] as const;

/** The contract's Quote resource; every fee is in the settlement currency. */
export const quoteOut = z
  .object({
    id: z.string(),
    rail: railSchema,
    exchange_rate: decimalOut.describe('Destination units per 1 settlement unit, after spread.'),
    spread: decimalOut.describe('Spread in percent of the mid-market rate.'),
    destination_amount: moneyOut,
    destination_currency: currencyOut,
    settlement_amount: moneyOut.describe('What the merchant must send: the converted amount plus every fee.'),
    settlement_currency: documentedAs('SettlementCurrency'),
    platform_fee_amount: moneyOut,
    platform_fee_currency: documentedAs('SettlementCurrency'),
    network_fee_amount: moneyOut,
    network_fee_currency: documentedAs('SettlementCurrency'),
    total_fee_amount: moneyOut,
    total_fee_currency: documentedAs('SettlementCurrency'),
    provider: z.string().describe('Label of the rate source.'),
    status: z
      .enum(QUOTE_STATUSES)
      .meta({ id: 'QuoteStatus', description: 'A quote whose expires_at has passed reads as EXPIRED.' }),
    expires_at: timestampOut,
    created_at: timestampOut,
  })
  .meta({
    id: 'Quote',
    description: 'A price frozen until expires_at: rate, spread and every fee, in the settlement currency.',
  });

export type QuoteResource = z.input<typeof quoteOut>;
