import { z } from 'zod';
import { RAILS } from '#src/corridors/corridors.ts';
import { decimalOut, timestampOut } from '#src/http/schemas.ts';

/** The contract's Indicative rate: non-binding, fees excluded. */
export const indicativeRateOut = z.object({
  settlement_currency: z.string(),
  destination_currency: z.string(),
  rate: decimalOut.describe('Destination units per 1 settlement unit, after spread.'),
  mid_market_rate: decimalOut.describe('Destination units per 1 settlement unit, before spread.'),
  spread_percent: decimalOut,
  rail: z.enum(RAILS),
  source: z.string(),
  as_of: timestampOut,
});
