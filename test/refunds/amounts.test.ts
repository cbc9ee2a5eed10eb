import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { Corridors, DEFAULT_CORRIDORS_FILE } from '#src/corridors/corridors.ts';
import { toDecimal } from '#src/lib/money.ts';
import { refundAmounts } from '#src/refunds/service.ts';

describe('refund amounts (pure)', () => {
  const corridors = Corridors.load();

  it('returns everything received, overpayment included, minus the rail’s configured refund fee', () => {
    const tron = refundAmounts(corridors, 'USDT', 'TRON', toDecimal('102.5'));
    expect(tron.fee.toFixed()).to.equal(corridors.refundFee('USDT', 'TRON').toFixed());
    expect(tron.refund.toFixed()).to.equal(toDecimal('102.5').minus(tron.fee).toFixed());
    const bsc = refundAmounts(corridors, 'USDT', 'BSC', toDecimal('102.5'));
    expect(bsc.fee.toFixed()).to.equal(corridors.refundFee('USDT', 'BSC').toFixed());
    const ngn = refundAmounts(corridors, 'NGN', null, toDecimal('150000.00'));
    expect(ngn.refund.plus(ngn.fee).toFixed()).to.equal('150000');
  });

  it('never goes negative: the fee is capped at what was received', () => {
    const tiny = refundAmounts(corridors, 'USDT', 'TRON', toDecimal('0.4'));
    expect(tiny.fee.toFixed()).to.equal('0.4');
    expect(tiny.refund.toFixed()).to.equal('0');
  });

  it('resolves an unconfigured fee to zero', () => {
    const raw = JSON.parse(readFileSync(DEFAULT_CORRIDORS_FILE, 'utf8'));
    delete raw.settlement.NGN.refund_fee;
    const bare = new Corridors(raw);
    expect(refundAmounts(bare, 'NGN', null, toDecimal('10')).fee.toFixed()).to.equal('0');
  });
});
