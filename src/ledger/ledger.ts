import { type Sql, statement } from '#src/db/sql.ts';
import { newId } from '#src/lib/ids.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import type { CauseObject, MovementType } from './chart.ts';

/**
 * The ledger's one write: ledger transactions, each a list of signed entries that sums to zero in
 * every currency, appended in one statement per call however many there are. The database checks
 * the same at commit (a deferred constraint trigger) and refuses any change to an entry once
 * written; this module checks first only to fail with a clearer message. Callers write in the
 * transaction of the state change that causes the money to move.
 */

/** One entry: a signed amount on one account. */
export interface Posting {
  account: string;
  currency: string;
  amount: Decimal;
  /** How the merchant's statement shows it, when it is a movement of a payout's money. */
  movement?: MovementType | null;
}

/** What caused a ledger transaction: one transition of one object. */
export interface Cause {
  object: CauseObject;
  id: string;
  /** The machine's transition: `EVENT (FROM → TO)`. */
  transition: string;
}

export interface LedgerTransaction {
  /** The tenant whose money moves; null only for money of nobody's (none today). */
  tenantId: string | null;
  /** The payout the money belongs to, when it belongs to one. */
  payoutId: string | null;
  cause: Cause;
  /** The four-eyes proposal that made an operator's move, when one did. */
  approvalId?: string | null;
  at: Date;
  entries: Posting[];
}

/** A transition as entries name it. */
export function transitionName(event: string, from: string, to: string): string {
  return `${event} (${from} → ${to})`;
}

const insertEntries = statement(
  'ledger_insert_entries',
  `insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, payout_id, movement,
       cause_object, cause_id, transition, approval_id, created_at)
   select * from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::numeric[], $6::uuid[], $7::uuid[],
                        $8::text[], $9::text[], $10::uuid[], $11::text[], $12::uuid[], $13::timestamptz[])`,
);

/** Refuses a transaction that does not sum to zero in each of its currencies, or has a zero entry. */
export function checkBalanced(tx: LedgerTransaction): void {
  const sums = new Map<string, Decimal>();
  for (const entry of tx.entries) {
    if (entry.amount.isZero())
      throw new Error(`ledger: a zero entry on ${entry.account} (${tx.cause.transition})`);
    sums.set(entry.currency, (sums.get(entry.currency) ?? toDecimal(0)).plus(entry.amount));
  }
  for (const [currency, sum] of sums) {
    if (!sum.isZero()) {
      throw new Error(
        `ledger: ${tx.cause.object} ${tx.cause.id} ${tx.cause.transition} is off by ${sum.toFixed()} ${currency}`,
      );
    }
  }
}

/**
 * Appends ledger transactions in the caller's database transaction, in one statement. Transactions
 * without entries (a flow whose amounts are all zero) write nothing. Returns the transactions' ids.
 */
export async function post(sql: Sql, transactions: readonly LedgerTransaction[]): Promise<string[]> {
  const cols: unknown[][] = Array.from({ length: 13 }, () => []);
  const ids: string[] = [];
  for (const tx of transactions) {
    if (tx.entries.length === 0) continue;
    checkBalanced(tx);
    const txId = newId();
    ids.push(txId);
    for (const e of tx.entries) {
      const row = [
        newId(),
        txId,
        e.account,
        e.currency,
        e.amount.toFixed(),
        tx.tenantId,
        tx.payoutId,
        e.movement ?? null,
        tx.cause.object,
        tx.cause.id,
        tx.cause.transition,
        tx.approvalId ?? null,
        tx.at,
      ];
      for (let i = 0; i < row.length; i++) cols[i]!.push(row[i]);
    }
  }
  if (ids.length > 0) await sql.rows(insertEntries, cols);
  return ids;
}
