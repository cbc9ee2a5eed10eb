import {
  type Corridors,
  isSettlementCurrency,
  type Pricing,
  type Rail,
  type SettlementCurrency,
} from '#src/corridors/corridors.ts';
import { price } from '#src/corridors/pricing.ts';
import type { Deps } from '#src/deps.ts';
import { AppError } from '#src/http/errors.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';

/** How a pair of currencies is priced: the settlement side's rail and the corridor's fees and spread. */
export interface PairPricing {
  settlement: SettlementCurrency;
  destination: string;
  rail: Rail;
  pricing: Pricing;
}

/** A mid-market rate and where it came from. */
export interface MidRate {
  rate: Decimal;
  asOf: Date;
  source: string;
}

/** Source label of the rate of a currency against itself: no market is asked. */
export const PAR_SOURCE = 'par';

/**
 * The pricing of settling in `settlement` for a payout in `destination`, or 422
 * CORRIDOR_NOT_SUPPORTED naming the offending request field (`fields` gives their names).
 */
export function pairPricing(
  corridors: Corridors,
  args: { settlement: string; destination: string; fields: { settlement: string; destination: string } },
): PairPricing {
  const { settlement, destination, fields } = args;
  if (!isSettlementCurrency(settlement)) {
    throw new AppError('CORRIDOR_NOT_SUPPORTED', {
      message: `Settlement in ${settlement} is not offered; settle in USDT or NGN.`,
      details: [{ field: fields.settlement, issue: 'must be USDT or NGN' }],
    });
  }
  const corridor = corridors.byCurrency(destination);
  if (!corridor) {
    throw new AppError('CORRIDOR_NOT_SUPPORTED', {
      message: `No corridor pays out in ${destination}.`,
      details: [
        { field: fields.destination, issue: `${destination} is not a payout currency of any corridor` },
      ],
    });
  }
  const pricing = corridors.pricing(corridor, settlement);
  if (!pricing) {
    throw new AppError('CORRIDOR_NOT_SUPPORTED', {
      message: `Payouts in ${destination} cannot be settled in ${settlement}.`,
      details: [
        {
          field: fields.settlement,
          issue: `${settlement} settlement is not offered for ${destination} payouts`,
        },
      ],
    });
  }
  return { settlement, destination, rail: corridors.railOf(settlement), pricing };
}

/**
 * Destination units per 1 settlement unit at the mid-market, from the rate provider. A currency
 * against itself is 1 by definition and asks nobody (a real vendor does not quote NGN/NGN).
 */
export async function midMarketRate(
  deps: Pick<Deps, 'providers' | 'clock'>,
  from: string,
  to: string,
): Promise<MidRate> {
  if (from === to) return { rate: toDecimal(1), asOf: deps.clock.now(), source: PAR_SOURCE };
  return deps.providers.rates.midMarket(from, to);
}

/** The customer rate of a pair: the mid-market rate less the corridor's spread. */
export function customerRate(pair: PairPricing, midRate: Decimal): Decimal {
  // price() owns the spread arithmetic and its rounding; a nominal amount of 1 yields its rate,
  // so the indicative rate is exactly the rate a quote made at the same moment would freeze.
  return price({
    destinationAmount: toDecimal(1),
    settlementCurrency: pair.settlement,
    midMarketRate: midRate,
    pricing: pair.pricing,
    networkFee: toDecimal(0),
  }).exchangeRate;
}

/** The non-binding rate of `GET /v1/rates`: provider first, then the corridor's spread. */
export async function indicativeRate(
  deps: Pick<Deps, 'providers' | 'clock' | 'corridors'>,
  args: { from: string; to: string },
): Promise<{ pair: PairPricing; mid: MidRate; rate: Decimal }> {
  const pair = pairPricing(deps.corridors, {
    settlement: args.from,
    destination: args.to,
    fields: { settlement: 'from', destination: 'to' },
  });
  const mid = await midMarketRate(deps, pair.settlement, pair.destination);
  return { pair, mid, rate: customerRate(pair, mid.rate) };
}
