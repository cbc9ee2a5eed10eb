import { expect } from 'chai';
import {
  CURRENCY_DECIMALS,
  currencyDecimals,
  Decimal,
  isCurrency,
  moneyJson,
  roundMoney,
  toDecimal,
} from '#src/lib/money.ts';

describe('money', () => {
  describe('the one BigNumber configuration', () => {
    it('divides to 18 decimal places, rounding the last one half-up', () => {
      expect(new Decimal(1).div(3).toString()).to.equal('0.333333333333333333');
      expect(new Decimal(2).div(3).toString()).to.equal('0.666666666666666667');
    });

    it('writes tiny and huge amounts in plain digits, never in exponent notation', () => {
      expect(new Decimal('1e-25').toString()).to.equal('0.0000000000000000000000001');
      expect(new Decimal('1e59').toString()).to.equal(`1${'0'.repeat(59)}`);
      // Beyond the configured range a string may use exponent notation; no amount gets there.
      expect(new Decimal('1e61').toString()).to.equal('1e+61');
    });
  });

  describe('currencies', () => {
    it('knows each currency’s minor unit, and nothing else', () => {
      expect(currencyDecimals('USDT')).to.equal(6);
      expect(currencyDecimals('NGN')).to.equal(2);
      expect(currencyDecimals('UGX')).to.equal(0);
      expect(currencyDecimals('XOF')).to.equal(0);
      expect(isCurrency('KES')).to.equal(true);
      expect(isCurrency('EUR')).to.equal(false);
      // Inherited properties of a plain object are not currencies.
      expect(isCurrency('toString')).to.equal(false);
      expect(() => currencyDecimals('EUR')).to.throw('unknown currency EUR');
      expect(Object.keys(CURRENCY_DECIMALS)).to.include.members([
        'USDT',
        'NGN',
        'KES',
        'GHS',
        'UGX',
        'TZS',
        'ZAR',
        'XOF',
        'USD',
      ]);
    });
  });

  describe('roundMoney', () => {
    it('rounds to the currency’s minor unit in the direction asked', () => {
      expect(roundMoney('1.005', 'USD', 'up').toFixed()).to.equal('1.01');
      expect(roundMoney('1.001', 'USD', 'up').toFixed()).to.equal('1.01');
      expect(roundMoney('1.009', 'USD', 'down').toFixed()).to.equal('1');
      expect(roundMoney('1.005', 'USD', 'half-up').toFixed()).to.equal('1.01');
      expect(roundMoney('1.0049', 'USD', 'half-up').toFixed()).to.equal('1');
      expect(roundMoney('1500.5', 'UGX', 'down').toFixed()).to.equal('1500');
      expect(roundMoney('1500.5', 'UGX', 'half-up').toFixed()).to.equal('1501');
      expect(roundMoney('0.1234565', 'USDT', 'half-up').toFixed()).to.equal('0.123457');
      expect(roundMoney('0.1234561', 'USDT', 'up').toFixed()).to.equal('0.123457');
    });

    it('refuses a currency it has no precision for, rather than guessing one', () => {
      expect(() => roundMoney('1.005', 'EUR', 'half-up')).to.throw('unknown currency EUR');
      expect(() => roundMoney('1', '', 'down')).to.throw('unknown currency');
    });
  });

  describe('toDecimal', () => {
    it('parses decimal strings, numbers and BigNumbers exactly', () => {
      expect(toDecimal('100.10').toFixed()).to.equal('100.1');
      expect(toDecimal(7).toFixed()).to.equal('7');
      expect(toDecimal(new Decimal('0.000001')).toFixed()).to.equal('0.000001');
    });

    it('refuses garbage, NaN and the infinities instead of passing NaN on', () => {
      // bignumber.js itself refuses what is no number at all; NaN and the infinities it accepts.
      expect(() => toDecimal('abc')).to.throw('Not a number: abc');
      expect(() => toDecimal('')).to.throw('Not a number');
      expect(() => toDecimal('NaN')).to.throw('not a finite decimal: NaN');
      expect(() => toDecimal(Number.NaN)).to.throw('not a finite decimal: NaN');
      expect(() => toDecimal(Number.POSITIVE_INFINITY)).to.throw('not a finite decimal: Infinity');
      expect(() => toDecimal('-Infinity')).to.throw('not a finite decimal: -Infinity');
    });
  });

  describe('moneyJson', () => {
    it('writes the digits as a JSON number, canonical or not, and refuses what is not a number', () => {
      const json = (value: string | number | Decimal) => JSON.stringify({ a: moneyJson(value) });
      expect(json('0')).to.equal('{"a":0}');
      expect(json('1234.5')).to.equal('{"a":1234.5}');
      expect(json('1234.50')).to.equal('{"a":1234.5}');
      expect(json('007')).to.equal('{"a":7}');
      expect(json(new Decimal('1e-25'))).to.equal('{"a":0.0000000000000000000000001}');
      expect(json(12)).to.equal('{"a":12}');
      expect(() => moneyJson('1e')).to.throw('Not a number: 1e');
      expect(() => moneyJson(Number.NaN)).to.throw('not a finite decimal: NaN');
    });
  });
});
