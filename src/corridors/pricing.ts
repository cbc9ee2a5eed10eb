import { type Decimal, roundMoney, toDecimal } from '#src/lib/money.ts';
import type { Pricing } from './corridors.ts';

/** Everything a quote or a payment instruction freezes about a price. */
export interface Price {
  midMarketRate: Decimal;
  /** Destination units per 1 settlement unit, after spread. */
  exchangeRate: Decimal;
  spreadPercent: Decimal;
  platformFee: Decimal;
  networkFee: Decimal;
  totalFee: Decimal;
  /** What the merchant sends: the converted amount plus every fee. */
  settlementAmount: Decimal;
}

/** Significant digits kept in a customer rate; enough for NGN per USDT and KES per NGN alike. */
const RATE_SIGNIFICANT_DIGITS = 10;

/**
 * Prices a payout of `destinationAmount` (pure). The rate is the mid-market rate less the
 * spread; the converted amount rounds up (the service never under-collects); the percentage
 * fee applies to the converted amount and rounds half-up; fees are in the settlement currency.
 */
export function price(args: {
  destinationAmount: Decimal;
  settlementCurrency: string;
  midMarketRate: Decimal;
  pricing: Pricing;
  networkFee: Decimal;
}): Price {
  const { pricing, settlementCurrency } = args;
  const spreadFactor = toDecimal(1).minus(pricing.spreadPercent.dividedBy(100));
  const exchangeRate = args.midMarketRate.times(spreadFactor).precision(RATE_SIGNIFICANT_DIGITS, 1);
  const converted = roundMoney(args.destinationAmount.dividedBy(exchangeRate), settlementCurrency, 'up');
  const platformFee = roundMoney(
    converted.times(pricing.platformFeePercent).dividedBy(100).plus(pricing.platformFeeFixed),
    settlementCurrency,
    'half-up',
  );
  const networkFee = roundMoney(args.networkFee, settlementCurrency, 'half-up');
  const totalFee = platformFee.plus(networkFee);
  return {
    midMarketRate: args.midMarketRate,
    exchangeRate,
    spreadPercent: pricing.spreadPercent,
    platformFee,
    networkFee,
    totalFee,
    settlementAmount: converted.plus(totalFee),
  };
}
