import { type Decimal, toDecimal } from '#src/lib/money.ts';

/**
 * The decisions of settlement matching (product decisions §2), free of I/O: which instruction a
 * received amount belongs to. What a verdict does to the inflow is the inflow machine's
 * (`machines/inflow.machine.ts`); `matching.ts` gathers the facts under row locks and applies
 * both in one transaction.
 */

/** What matching needs to know about one instruction on the receiving account. */
export interface InstructionFacts {
  id: string;
  status: 'UNPAID' | 'PAID' | 'EXPIRED';
  expectedAmount: Decimal;
  expiresAt: Date;
  createdAt: Date;
  /** Status of the instruction's payout: only a PENDING_PAYMENT payout can take money. */
  payoutStatus: string;
  /** Money already attributed to the payout and held (short of the expected amount); zero when none. */
  heldTotal: Decimal;
}

/**
 * Whether an instruction takes money that arrived at `at`: UNPAID, its payout waiting for money
 * (awaiting or held), and not yet lapsed at that moment. The instruction job may not have marked
 * a lapsed instruction EXPIRED yet, so the time is checked here too.
 */
export function isOpenAt(instruction: InstructionFacts, at: Date): boolean {
  return (
    instruction.status === 'UNPAID' &&
    instruction.payoutStatus === 'PENDING_PAYMENT' &&
    instruction.expiresAt.getTime() > at.getTime()
  );
}

/** Where a crypto inflow goes. */
export type CryptoVerdict =
  /** Attributed to this instruction: exactly its amount, or the overpayment rule. */
  | { outcome: 'ATTRIBUTE'; instructionId: string; rule: 'EXACT' | 'TOP_UP' | 'OVERPAYMENT' }
  /** Below every open instruction on the address: held for operations, attributed to nobody. */
  | { outcome: 'HELD' }
  /** Late or stray money: recorded, attributed to nobody, shown to operators. */
  | { outcome: 'UNMATCHED'; reason: 'CLOSED_INSTRUCTION_AMOUNT' | 'NO_OPEN_INSTRUCTION' };

/**
 * The crypto rule of §2 for an inflow of `amount` that arrived at `at` on a shared address whose
 * instructions are `instructions` (open and closed alike):
 *
 * 1. exactly the amount of an open instruction: that one;
 * 1b. exactly what a held open instruction still lacks (expected − held total): its top-up. An
 *    operator who attributed short money to a payout asks the merchant for the rest, which is
 *    below every open amount and would otherwise be held again, or overpay another instruction;
 * 2. exactly the amount of an instruction that is no longer open (it lapsed, was paid, or its
 *    payout ended) and was open within `recentMs` before `at`: late or repeated money for that
 *    instruction, UNMATCHED. Unique amounts on a shared address make an exact amount the
 *    merchant's own label; giving it to another payout as an "overpayment" would attribute it
 *    silently to the wrong payout;
 * 3. the open instruction with the largest amount below it (overpayment; ties: oldest);
 * 4. below every open instruction: HELD, unattributed;
 * 5. no open instruction at all: UNMATCHED (nothing was being waited for).
 */
export function judgeCryptoInflow(
  amount: Decimal,
  at: Date,
  instructions: readonly InstructionFacts[],
  recentMs: number,
): CryptoVerdict {
  const open = instructions.filter((i) => isOpenAt(i, at));
  const exact = oldestFirst(open.filter((i) => i.expectedAmount.eq(amount)))[0];
  if (exact) return { outcome: 'ATTRIBUTE', instructionId: exact.id, rule: 'EXACT' };
  const topUp = oldestFirst(
    open.filter((i) => i.heldTotal.gt(0) && i.expectedAmount.minus(i.heldTotal).eq(amount)),
  )[0];
  if (topUp) return { outcome: 'ATTRIBUTE', instructionId: topUp.id, rule: 'TOP_UP' };

  const closedExact = instructions.some(
    (i) =>
      !isOpenAt(i, at) &&
      i.expectedAmount.eq(amount) &&
      i.expiresAt.getTime() > at.getTime() - recentMs &&
      i.createdAt.getTime() <= at.getTime(),
  );
  if (closedExact) return { outcome: 'UNMATCHED', reason: 'CLOSED_INSTRUCTION_AMOUNT' };

  const below = open.filter((i) => i.expectedAmount.lt(amount));
  if (below.length > 0) {
    const largest = below.reduce((a, b) => (b.expectedAmount.gt(a.expectedAmount) ? b : a));
    const best = oldestFirst(below.filter((i) => i.expectedAmount.eq(largest.expectedAmount)))[0]!;
    return { outcome: 'ATTRIBUTE', instructionId: best.id, rule: 'OVERPAYMENT' };
  }
  return open.length > 0 ? { outcome: 'HELD' } : { outcome: 'UNMATCHED', reason: 'NO_OPEN_INSTRUCTION' };
}

/** Where a bank inflow goes: the account names its one instruction. */
export type BankVerdict =
  | { outcome: 'ATTRIBUTE'; instructionId: string }
  | { outcome: 'UNMATCHED'; reason: 'INSTRUCTION_CLOSED' };

/**
 * The bank rule of §2: a virtual account belongs to one instruction, so money to it is that
 * instruction's while the instruction is open at the moment the money arrived; afterwards (it
 * lapsed, was already paid, or its payout ended) it is UNMATCHED for operators.
 */
export function judgeBankInflow(at: Date, instruction: InstructionFacts): BankVerdict {
  return isOpenAt(instruction, at)
    ? { outcome: 'ATTRIBUTE', instructionId: instruction.id }
    : { outcome: 'UNMATCHED', reason: 'INSTRUCTION_CLOSED' };
}

/** What attributing money to a payout does, given all of it attributed so far. */
export interface SettlementTotals {
  total: Decimal;
  /** The total covers the expected amount: the payout is paid. */
  covers: boolean;
  /** What the total brings beyond the expected amount (zero when none). */
  overpayment: Decimal;
}

/** The payout's totals once `amount` is added to what was attributed to it before. */
export function settlementTotals(
  previous: readonly Decimal[],
  amount: Decimal,
  expected: Decimal,
): SettlementTotals {
  const total = previous.reduce((sum, a) => sum.plus(a), amount);
  const covers = total.gte(expected);
  return { total, covers, overpayment: covers ? total.minus(expected) : toDecimal(0) };
}

function oldestFirst(list: readonly InstructionFacts[]): InstructionFacts[] {
  return [...list].sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
}
