import { type Decimal, toDecimal } from '#src/lib/money.ts';
import type { BreakKind } from './entities.ts';

/**
 * The comparison of one day of the books with one rail's own record, as a pure function: both
 * sides are lists of movements keyed by the rail's reference (a bank session id, a transaction
 * hash, an outflow id, which is the processor's reference), and every reference either matches
 * (same amount, currency and final state) or is one break.
 */

/** A movement as one side records it. */
export interface Movement {
  /** The rail account the run counts it under (`collection:bank` for every virtual account). */
  account: string;
  /** The ledger's own account of the movement when it is narrower (`collection:bank:<account number>`). */
  ledgerAccount?: string;
  reference: string;
  amount: Decimal;
  currency: string;
  /**
   * The side's state of the movement, in the rail's words: `SUCCESSFUL`, `FAILED`, `RETURNED`,
   * `REVERSED`, `CREDITED`; `IN_FLIGHT` on the books when the outcome is not known yet (never a
   * break: the service is still waiting for it).
   */
  state: string;
  /** Whether the movement belongs to the period on this side (false: looked up by reference only). */
  inPeriod: boolean;
  /** The service's objects behind a book movement. */
  tenantId?: string | null;
  payoutId?: string | null;
  inflowId?: string | null;
  outflowId?: string | null;
}

/** A difference found. */
export interface FoundBreak {
  kind: BreakKind;
  account: string;
  reference: string;
  currency: string;
  ledger: Movement | null;
  rail: Movement | null;
  summary: string;
}

/** Counts and sums of one rail account in one currency. */
export interface AccountTotals {
  account: string;
  currency: string;
  matchedCount: number;
  matchedAmount: Decimal;
  ledgerCount: number;
  ledgerAmount: Decimal;
  railCount: number;
  railAmount: Decimal;
  breaks: number;
}

const STATE_WORDS: Record<string, string> = {
  SUCCESSFUL: 'paid',
  FAILED: 'failed',
  RETURNED: 'returned after it was paid',
  REVERSED: 'reversed by the bank',
  CREDITED: 'received',
};

const words = (state: string) => STATE_WORDS[state] ?? state.toLowerCase();

/** Compares the two sides of one period; `rail` may repeat a reference only across kinds of line. */
export function compare(
  ledger: readonly Movement[],
  rail: readonly Movement[],
): {
  accounts: AccountTotals[];
  breaks: FoundBreak[];
} {
  const totals = new Map<string, AccountTotals>();
  const total = (m: Movement): AccountTotals => {
    const key = `${m.account}\u0000${m.currency}`;
    let t = totals.get(key);
    if (!t) {
      t = {
        account: m.account,
        currency: m.currency,
        matchedCount: 0,
        matchedAmount: toDecimal(0),
        ledgerCount: 0,
        ledgerAmount: toDecimal(0),
        railCount: 0,
        railAmount: toDecimal(0),
        breaks: 0,
      };
      totals.set(key, t);
    }
    return t;
  };
  const books = new Map<string, Movement>();
  for (const m of ledger) {
    books.set(m.reference, m);
    if (!m.inPeriod) continue;
    const t = total(m);
    t.ledgerCount++;
    t.ledgerAmount = t.ledgerAmount.plus(m.amount);
  }
  const breaks: FoundBreak[] = [];
  const found = (b: FoundBreak) => {
    breaks.push(b);
    total(b.rail ?? b.ledger!).breaks++;
  };
  const seen = new Set<string>();
  for (const r of rail) {
    const t = total(r);
    if (r.inPeriod) {
      t.railCount++;
      t.railAmount = t.railAmount.plus(r.amount);
    }
    seen.add(r.reference);
    const b = books.get(r.reference);
    const base = {
      account: b?.ledgerAccount ?? r.ledgerAccount ?? r.account,
      reference: r.reference,
      currency: r.currency,
      ledger: b ?? null,
      rail: r,
    };
    if (!b) {
      found({
        ...base,
        kind: 'MISSING_IN_LEDGER',
        summary: `The rail shows ${r.amount.toFixed()} ${r.currency} ${words(r.state)} under ${r.reference}; the books have nothing under that reference.`,
      });
      continue;
    }
    if (!b.amount.eq(r.amount) || b.currency !== r.currency) {
      found({
        ...base,
        kind: 'AMOUNT_DIFFERS',
        summary: `The books have ${b.amount.toFixed()} ${b.currency} under ${r.reference}; the rail shows ${r.amount.toFixed()} ${r.currency}.`,
      });
      continue;
    }
    if (b.state === 'IN_FLIGHT') continue;
    if (b.state !== r.state) {
      found({
        ...base,
        kind: 'STATE_DIFFERS',
        summary: `The books say ${r.reference} was ${words(b.state)}; the rail says ${words(r.state)}.`,
      });
      continue;
    }
    if (r.inPeriod) {
      t.matchedCount++;
      t.matchedAmount = t.matchedAmount.plus(r.amount);
    }
  }
  for (const b of ledger) {
    if (!b.inPeriod || seen.has(b.reference) || b.state === 'IN_FLIGHT') continue;
    found({
      kind: 'MISSING_ON_RAIL',
      account: b.ledgerAccount ?? b.account,
      reference: b.reference,
      currency: b.currency,
      ledger: b,
      rail: null,
      summary: `The books have ${b.amount.toFixed()} ${b.currency} ${words(b.state)} under ${b.reference}; the rail's record of the day does not list it.`,
    });
  }
  return { accounts: [...totals.values()], breaks };
}
