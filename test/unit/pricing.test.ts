import { expect } from 'chai';
import { Corridors, type Pricing, type SettlementCurrency } from '#src/corridors/corridors.ts';
import { price, pricer } from '#src/corridors/pricing.ts';
import { toDecimal } from '#src/lib/money.ts';

const corridors = Corridors.load();

function corridorPricing(destination: string, settlement: SettlementCurrency): Pricing {
  const corridor = corridors.byCurrency(destination);
  const pricing = corridor && corridors.pricing(corridor, settlement);
  if (!pricing) throw new Error(`no pricing for ${settlement} -> ${destination}`);
  return pricing;
}

function pricing(spread: string, feePercent: string, feeFixed: string): Pricing {
  return {
    spreadPercent: toDecimal(spread),
    platformFeePercent: toDecimal(feePercent),
    platformFeeFixed: toDecimal(feeFixed),
  };
}

const flat = pricing('0', '0', '0');

describe('price()', () => {
  it('prices a USDT-settled NGN payout with the corridor spread, both platform fees and the network fee', () => {
    const p = price({
      destinationAmount: toDecimal('100000'),
      settlementCurrency: 'USDT',
      midMarketRate: toDecimal('1535.40'),
      pricing: corridorPricing('NGN', 'USDT'),
      networkFee: corridors.networkFee('USDT', null),
    });
    // 1535.40 x (1 - 1.00%) = 1520.046; 100000 / 1520.046 = 65.78748274... -> 65.787483 (up)
    expect(p.exchangeRate.toFixed()).to.equal('1520.046');
    expect(p.midMarketRate.toFixed()).to.equal('1535.4');
    expect(p.spreadPercent.toFixed()).to.equal('1');
    // 65.787483 x 0.50% + 0.50 = 0.828937415 -> 0.828937 (half-up)
    expect(p.platformFee.toFixed()).to.equal('0.828937');
    expect(p.networkFee.toFixed()).to.equal('1');
    expect(p.totalFee.toFixed()).to.equal('1.828937');
    expect(p.settlementAmount.toFixed()).to.equal('67.61642');
  });

  it('prices an NGN-settled NGN payout at par: zero spread, rate 1, fees in NGN', () => {
    const p = price({
      destinationAmount: toDecimal('100000.00'),
      settlementCurrency: 'NGN',
      midMarketRate: toDecimal('1'),
      pricing: corridorPricing('NGN', 'NGN'),
      networkFee: corridors.networkFee('NGN', null),
    });
    expect(p.spreadPercent.toFixed()).to.equal('0');
    expect(p.exchangeRate.toFixed()).to.equal('1');
    // 100000 x 0.25% + 100.00 = 350.00; network fee 50.00
    expect(p.platformFee.toFixed()).to.equal('350');
    expect(p.networkFee.toFixed()).to.equal('50');
    expect(p.totalFee.toFixed()).to.equal('400');
    expect(p.settlementAmount.toFixed()).to.equal('100400');
  });

  it('applies no spread to a USDT payout settled in USDT', () => {
    const p = price({
      destinationAmount: toDecimal('250'),
      settlementCurrency: 'USDT',
      midMarketRate: toDecimal('1'),
      pricing: corridorPricing('USDT', 'USDT'),
      networkFee: toDecimal('0'),
    });
    expect(p.exchangeRate.toFixed()).to.equal('1');
    // 250 x 0.30% = 0.75
    expect(p.platformFee.toFixed()).to.equal('0.75');
    expect(p.settlementAmount.toFixed()).to.equal('250.75');
  });

  it('prices many amounts on one set of terms as price() does each (a worker batch prices this way)', () => {
    const terms = {
      settlementCurrency: 'USDT',
      midMarketRate: toDecimal('1535.40'),
      pricing: corridorPricing('NGN', 'USDT'),
      networkFee: corridors.networkFee('USDT', null),
    };
    const priceOf = pricer(terms);
    const first = priceOf(toDecimal('100000'));
    const second = priceOf(toDecimal('50000'));
    expect(first.settlementAmount.toFixed()).to.equal('67.61642');
    // 50000 / 1520.046 = 32.89374137... -> 32.893742 (up); 32.893742 x 0.50% + 0.50 = 0.664469 (half-up)
    expect(second.platformFee.toFixed()).to.equal('0.664469');
    expect(second.settlementAmount.toFixed()).to.equal('34.558211');
    for (const [amount, got] of [
      ['100000', first],
      ['50000', second],
    ] as const) {
      const alone = price({ ...terms, destinationAmount: toDecimal(amount) });
      expect(Object.fromEntries(Object.entries(got).map(([k, v]) => [k, v.toFixed()]))).to.deep.equal(
        Object.fromEntries(Object.entries(alone).map(([k, v]) => [k, v.toFixed()])),
      );
    }
  });

  describe('rounding', () => {
    it('rounds the converted USDT amount up at 6 decimals (never under-collects)', () => {
      const p = price({
        destinationAmount: toDecimal('10'),
        settlementCurrency: 'USDT',
        midMarketRate: toDecimal('3'),
        pricing: flat,
        networkFee: toDecimal('0'),
      });
      // 10 / 3 = 3.3333333... -> 3.333334, where half-up would give 3.333333
      expect(p.settlementAmount.toFixed()).to.equal('3.333334');
    });

    it('rounds the converted NGN amount up at 2 decimals', () => {
      const p = price({
        destinationAmount: toDecimal('10'),
        settlementCurrency: 'NGN',
        midMarketRate: toDecimal('3'),
        pricing: flat,
        networkFee: toDecimal('0'),
      });
      expect(p.settlementAmount.toFixed()).to.equal('3.34');
    });

    it('leaves an exact conversion untouched', () => {
      const p = price({
        destinationAmount: toDecimal('100.01'),
        settlementCurrency: 'USDT',
        midMarketRate: toDecimal('100'),
        pricing: flat,
        networkFee: toDecimal('0'),
      });
      expect(p.settlementAmount.toFixed()).to.equal('1.0001');
    });

    it('rounds a USDT platform fee half-up at 6 decimals', () => {
      const p = price({
        destinationAmount: toDecimal('100.01'),
        settlementCurrency: 'USDT',
        midMarketRate: toDecimal('100'),
        pricing: pricing('0', '0.5', '0.5'),
        networkFee: toDecimal('0'),
      });
      // 1.0001 x 0.5% + 0.5 = 0.5050005: exactly half a micro-unit, so it rounds up
      expect(p.platformFee.toFixed()).to.equal('0.505001');
      expect(p.settlementAmount.toFixed()).to.equal('1.505101');
    });

    it('rounds an NGN platform fee half-up at 2 decimals, in both directions', () => {
      const half = price({
        destinationAmount: toDecimal('1002'),
        settlementCurrency: 'NGN',
        midMarketRate: toDecimal('1'),
        pricing: pricing('0', '0.25', '100'),
        networkFee: toDecimal('0'),
      });
      // 1002 x 0.25% + 100 = 102.505 -> 102.51
      expect(half.platformFee.toFixed()).to.equal('102.51');
      const below = price({
        destinationAmount: toDecimal('1001'),
        settlementCurrency: 'NGN',
        midMarketRate: toDecimal('1'),
        pricing: pricing('0', '0.25', '100'),
        networkFee: toDecimal('0'),
      });
      // 1001 x 0.25% + 100 = 102.5025 -> 102.50
      expect(below.platformFee.toFixed()).to.equal('102.5');
    });

    it('rounds a network fee half-up to the settlement currency', () => {
      const p = price({
        destinationAmount: toDecimal('1'),
        settlementCurrency: 'USDT',
        midMarketRate: toDecimal('1'),
        pricing: flat,
        networkFee: toDecimal('0.0000005'),
      });
      expect(p.networkFee.toFixed()).to.equal('0.000001');
      expect(p.totalFee.toFixed()).to.equal('0.000001');
    });

    it('keeps 10 significant digits of the customer rate, rounded down (in the service favour)', () => {
      const p = price({
        destinationAmount: toDecimal('1'),
        settlementCurrency: 'USDT',
        midMarketRate: toDecimal('1535.4321987'),
        pricing: pricing('1.2', '0', '0'),
        networkFee: toDecimal('0'),
      });
      // 1535.4321987 x 0.988 = 1517.0070123156 -> 1517.007012
      expect(p.exchangeRate.toFixed()).to.equal('1517.007012');
    });
  });

  it('adds every fee to the converted amount: settlement = converted + platform + network', () => {
    const p = price({
      destinationAmount: toDecimal('5000'),
      settlementCurrency: 'USDT',
      midMarketRate: toDecimal('129.25'),
      pricing: corridorPricing('KES', 'USDT'),
      networkFee: corridors.networkFee('USDT', 'BSC'),
    });
    const converted = p.settlementAmount.minus(p.totalFee);
    expect(p.totalFee.toFixed()).to.equal(p.platformFee.plus(p.networkFee).toFixed());
    expect(p.networkFee.toFixed()).to.equal('0.3');
    expect(converted.decimalPlaces()).to.be.at.most(6);
    // The converted amount at the customer rate covers the destination amount.
    expect(converted.times(p.exchangeRate).isGreaterThanOrEqualTo('5000')).to.equal(true);
  });
});
