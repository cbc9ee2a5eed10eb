import { expect } from 'chai';
import { toDecimal } from '#src/lib/money.ts';
import {
  type InstructionFacts,
  isOpenAt,
  judgeBankInflow,
  judgeCryptoInflow,
  settlementTotals,
} from '#src/settlement/rules.ts';

const T0 = new Date('2026-03-02T09:00:00Z');
const minutes = (n: number) => new Date(T0.getTime() + n * 60_000);
const TTL = 30 * 60_000;

function instruction(
  id: string,
  amount: string,
  overrides: Partial<InstructionFacts> = {},
): InstructionFacts {
  return {
    id,
    status: 'UNPAID',
    expectedAmount: toDecimal(amount),
    expiresAt: minutes(30),
    createdAt: T0,
    payoutStatus: 'PENDING_PAYMENT',
    heldTotal: toDecimal(0),
    ...overrides,
  };
}

const judge = (amount: string, list: InstructionFacts[], at = minutes(5)) =>
  judgeCryptoInflow(toDecimal(amount), at, list, TTL);

describe('settlement rules (pure)', () => {
  describe('crypto: which open instruction an amount belongs to', () => {
    it('takes the instruction with exactly that amount', () => {
      const list = [instruction('a', '100.000001'), instruction('b', '100.000002'), instruction('c', '50')];
      expect(judge('100.000002', list)).to.deep.equal({
        outcome: 'ATTRIBUTE',
        instructionId: 'b',
        rule: 'EXACT',
      });
    });

    it('otherwise takes the largest open amount below it (overpayment), the oldest on a tie', () => {
      const list = [
        instruction('small', '10'),
        instruction('newer', '80', { createdAt: minutes(2) }),
        instruction('older', '80', { createdAt: minutes(1) }),
        instruction('large', '120'),
      ];
      expect(judge('100', list)).to.deep.equal({
        outcome: 'ATTRIBUTE',
        instructionId: 'older',
        rule: 'OVERPAYMENT',
      });
    });

    it('holds an amount below every open instruction, and leaves it unmatched when none is open', () => {
      expect(judge('5', [instruction('a', '10'), instruction('b', '20')])).to.deep.equal({ outcome: 'HELD' });
      expect(judge('5', [])).to.deep.equal({ outcome: 'UNMATCHED', reason: 'NO_OPEN_INSTRUCTION' });
      expect(
        judge('50', [instruction('gone', '10', { status: 'EXPIRED', expiresAt: minutes(-1) })]),
      ).to.deep.equal({
        outcome: 'UNMATCHED',
        reason: 'NO_OPEN_INSTRUCTION',
      });
    });

    it('treats instructions as open only while UNPAID, unexpired at the inflow’s time and their payout waiting', () => {
      const at = minutes(10);
      expect(isOpenAt(instruction('a', '1'), at)).to.equal(true);
      expect(isOpenAt(instruction('a', '1', { expiresAt: at }), at), 'expiry instant is closed').to.equal(
        false,
      );
      expect(isOpenAt(instruction('a', '1', { status: 'PAID' }), at)).to.equal(false);
      expect(isOpenAt(instruction('a', '1', { payoutStatus: 'FAILED' }), at)).to.equal(false);
      // The instruction job has not marked it yet, but its time was up when the money came.
      expect(isOpenAt(instruction('a', '1', { expiresAt: minutes(9) }), at)).to.equal(false);
    });

    it('keeps the exact amount of a recently closed instruction unmatched instead of overpaying another', () => {
      const lapsed = instruction('lapsed', '150.000001', { status: 'EXPIRED', expiresAt: minutes(-5) });
      const paid = instruction('paid', '99', { status: 'PAID' });
      const open = instruction('open', '20');
      expect(judge('150.000001', [lapsed, open])).to.deep.equal({
        outcome: 'UNMATCHED',
        reason: 'CLOSED_INSTRUCTION_AMOUNT',
      });
      expect(judge('99', [paid, open]), 'paid twice').to.deep.equal({
        outcome: 'UNMATCHED',
        reason: 'CLOSED_INSTRUCTION_AMOUNT',
      });
      // Long closed, or created after the money arrived: not what this money was for.
      const old = instruction('old', '150.000001', { status: 'EXPIRED', expiresAt: minutes(-5 - 30) });
      expect(judge('150.000001', [old, open])).to.deep.include({
        outcome: 'ATTRIBUTE',
        instructionId: 'open',
      });
      const later = instruction('later', '150.000001', { status: 'PAID', createdAt: minutes(6) });
      expect(judge('150.000001', [later, open])).to.deep.include({
        outcome: 'ATTRIBUTE',
        instructionId: 'open',
      });
    });

    it('pins the recently-closed window to the millisecond at both ends', () => {
      const at = minutes(5);
      const open = instruction('open', '20');
      const closed = (overrides: Partial<InstructionFacts>) =>
        judge(
          '150.000001',
          [instruction('closed', '150.000001', { status: 'EXPIRED', ...overrides }), open],
          at,
        ).outcome;
      const windowStart = at.getTime() - TTL;
      // Closed exactly `recentMs` before the money: outside the window; one millisecond later: inside.
      expect(closed({ expiresAt: new Date(windowStart) })).to.equal('ATTRIBUTE');
      expect(closed({ expiresAt: new Date(windowStart + 1) })).to.equal('UNMATCHED');
      // Created at the very instant the money arrived: it counts; one millisecond later: it does not.
      expect(closed({ expiresAt: minutes(-1), createdAt: at })).to.equal('UNMATCHED');
      expect(closed({ expiresAt: minutes(-1), createdAt: new Date(at.getTime() + 1) })).to.equal('ATTRIBUTE');
    });

    it('takes exactly what a held instruction still lacks as its top-up, before any overpayment', () => {
      const held = instruction('held', '100', { heldTotal: toDecimal('60') });
      const other = instruction('other', '30');
      expect(judge('40', [held, other])).to.deep.equal({
        outcome: 'ATTRIBUTE',
        instructionId: 'held',
        rule: 'TOP_UP',
      });
      expect(judge('40', [held, instruction('forty', '40')]), 'an exact amount still wins').to.deep.include({
        instructionId: 'forty',
      });
      expect(judge('41', [held, other])).to.deep.include({ instructionId: 'other', rule: 'OVERPAYMENT' });
    });

    it('prefers an open exact amount to a closed one with the same amount', () => {
      const lapsed = instruction('lapsed', '70', { status: 'EXPIRED', expiresAt: minutes(-1) });
      const reused = instruction('reused', '70', { createdAt: minutes(1) });
      expect(judge('70', [lapsed, reused])).to.deep.equal({
        outcome: 'ATTRIBUTE',
        instructionId: 'reused',
        rule: 'EXACT',
      });
    });
  });

  describe('bank: the account names its instruction', () => {
    it('attributes while the instruction is open at the credit’s time, and not after', () => {
      expect(judgeBankInflow(minutes(29), instruction('a', '1000'))).to.deep.equal({
        outcome: 'ATTRIBUTE',
        instructionId: 'a',
      });
      expect(judgeBankInflow(minutes(30), instruction('a', '1000'))).to.deep.equal({
        outcome: 'UNMATCHED',
        reason: 'INSTRUCTION_CLOSED',
      });
      expect(judgeBankInflow(minutes(1), instruction('a', '1000', { status: 'PAID' })).outcome).to.equal(
        'UNMATCHED',
      );
    });
  });

  describe('totals', () => {
    it('adds every attributed amount and works the overpayment out on the total', () => {
      const short = settlementTotals([toDecimal('400')], toDecimal('500'), toDecimal('1000'));
      expect([short.total.toFixed(), short.covers, short.overpayment.toFixed()]).to.deep.equal([
        '900',
        false,
        '0',
      ]);
      const over = settlementTotals(
        [toDecimal('400'), toDecimal('0.1')],
        toDecimal('600.2'),
        toDecimal('1000'),
      );
      expect([over.total.toFixed(), over.covers, over.overpayment.toFixed()]).to.deep.equal([
        '1000.3',
        true,
        '0.3',
      ]);
      const exact = settlementTotals([], toDecimal('1000.00'), toDecimal('1000'));
      expect([exact.covers, exact.overpayment.toFixed()]).to.deep.equal([true, '0']);
    });
  });
});
