import { z } from 'zod';
import { currencyOut, decimalOut, documentedAs, railSchema, timestampOut } from '#src/http/schemas.ts';

/** The contract's Indicative rate: non-binding, fees excluded. */
export const indicativeRateOut = z
  .object({
    settlement_currency: documentedAs('SettlementCurrency'),
    destination_currency: currencyOut,
    rate: decimalOut.describe('Destination units per 1 settlement unit, after spread.'),
    mid_market_rate: decimalOut.describe('Destination units per 1 settlement unit, before spread.'),
    spread_percent: decimalOut,
    rail: railSchema,
    source: z.string().describe('Label of the rate source.'),
    as_of: timestampOut,
  })
  .meta({ id: 'IndicativeRate', description: 'A non-binding rate, fees excluded; quote to freeze a price.' });
