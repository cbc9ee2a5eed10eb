import { z } from 'zod';
import { RAILS } from '#src/corridors/corridors.ts';
import { decimalOut, moneyOut, timestampOut } from '#src/http/schemas.ts';

export const QUOTE_STATUSES = ['PENDING', 'ACCEPTED', 'USED', 'EXPIRED'] as const;

/** The contract's Quote resource; every fee is in the settlement currency. */
export const quoteOut = z.object({
  id: z.string(),
  rail: z.enum(RAILS),
  exchange_rate: decimalOut.describe('Destination units per 1 settlement unit, after spread.'),
  spread: decimalOut.describe('Spread in percent of the mid-market rate.'),
  destination_amount: moneyOut,
  destination_currency: z.string(),
  settlement_amount: moneyOut.describe('What the merchant must send: the converted amount plus every fee.'),
  settlement_currency: z.string(),
  platform_fee_amount: moneyOut,
  platform_fee_currency: z.string(),
  network_fee_amount: moneyOut,
  network_fee_currency: z.string(),
  total_fee_amount: moneyOut,
  total_fee_currency: z.string(),
  provider: z.string().describe('Label of the rate source.'),
  status: z.enum(QUOTE_STATUSES).describe('A quote whose expires_at has passed reads as EXPIRED.'),
  expires_at: timestampOut,
  created_at: timestampOut,
});

export type QuoteResource = z.input<typeof quoteOut>;
