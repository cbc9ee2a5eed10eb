import { expect } from 'chai';
import { maskAccountNumber, maskAddress } from '#src/lib/masking.ts';

describe('masking', () => {
  describe('account numbers', () => {
    it('shows only the last 4 digits of a NUBAN, keeping its length', () => {
      expect(maskAccountNumber('0123456789')).to.equal('******6789');
    });

    it('hides a value of 4 characters or fewer entirely', () => {
      expect(maskAccountNumber('1234')).to.equal('****');
      expect(maskAccountNumber('12')).to.equal('**');
      expect(maskAccountNumber('')).to.equal('');
    });

    it('never contains more than 4 characters of the original', () => {
      const masked = maskAccountNumber('00112233445566778899');
      expect(masked.replaceAll('*', '')).to.equal('8899');
      expect(masked).to.have.length(20);
    });
  });

  describe('addresses', () => {
    it('shows the first 6 and last 4 characters of a TRON address', () => {
      const address = 'TLa2f6VPqDgRE67v1736s7bJ8Ray5wYjU7';
      expect(maskAddress(address)).to.equal(`TLa2f6${'*'.repeat(24)}YjU7`);
    });

    it('shows the first 6 and last 4 characters of a BSC address', () => {
      const address = `0x${'ab'.repeat(20)}`;
      const masked = maskAddress(address);
      expect(masked).to.have.length(42);
      expect(masked.startsWith('0xabab')).to.equal(true);
      expect(masked.endsWith('abab')).to.equal(true);
      expect(masked.slice(6, -4)).to.match(/^\*+$/);
    });

    it('hides a value of 10 characters or fewer entirely (nothing would be hidden otherwise)', () => {
      expect(maskAddress('0123456789')).to.equal('**********');
      expect(maskAddress('abc')).to.equal('***');
    });

    it('still hides the middle when only one character is left to hide', () => {
      expect(maskAddress('ABCDEFGHIJK')).to.equal('ABCDEF*HIJK');
    });
  });
});
