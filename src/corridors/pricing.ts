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

/** What a price depends on besides the amount: one corridor and settlement currency at one rate. */
export interface PriceTerms {
  settlementCurrency: string;
  midMarketRate: Decimal;
  pricing: Pricing;
  networkFee: Decimal;
}

/**
 * Prices a payout of `destinationAmount` (pure). The rate is the mid-market rate less the
 * spread; the converted amount rounds up (the service never under-collects); the percentage
 * fee applies to the converted amount and rounds half-up; fees are in the settlement currency.
 */
export function price(args: PriceTerms & { destinationAmount: Decimal }): Price {
  return pricer(args)(args.destinationAmount);
}

/**
 * {@link price} for many amounts on the same terms: the customer rate and the network fee,
 * which do not depend on the amount, are worked out once (a worker's batch prices hundreds of
 * payouts of a few corridors at one rate).
 */
export function pricer(terms: PriceTerms): (destinationAmount: Decimal) => Price {
  const { pricing, settlementCurrency } = terms;
  const spreadFactor = toDecimal(1).minus(pricing.spreadPercent.dividedBy(100));
  const exchangeRate = terms.midMarketRate.times(spreadFactor).precision(RATE_SIGNIFICANT_DIGITS, 1);
  const networkFee = roundMoney(terms.networkFee, settlementCurrency, 'half-up');
  return (destinationAmount) => {
    const converted = roundMoney(destinationAmount.dividedBy(exchangeRate), settlementCurrency, 'up');
    const platformFee = roundMoney(
      converted.times(pricing.platformFeePercent).dividedBy(100).plus(pricing.platformFeeFixed),
      settlementCurrency,
      'half-up',
    );
    const totalFee = platformFee.plus(networkFee);
    return {
      midMarketRate: terms.midMarketRate,
      exchangeRate,
      spreadPercent: pricing.spreadPercent,
      platformFee,
      networkFee,
      totalFee,
      settlementAmount: converted.plus(totalFee),
    };
  };
}
