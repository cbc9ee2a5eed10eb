import type { Deps } from '#src/deps.ts';
import { type CheckRun, checkLedger } from './checks.ts';
import { compactBalances } from './read.ts';

/** How often the `ledger` job folds balances and checks the invariants when nothing wakes it. */
export const LEDGER_INTERVAL_MS = 60_000;

/** How far back a pass looks for payouts whose money changed (every open violation is looked at again too). */
export const LEDGER_CHECK_WINDOW_MS = 60 * 60_000;

// A thread's first pass checks every payout; the later ones those changed within the window.
let checkedAll = false;

/** What one pass of the `ledger` job did. */
export interface LedgerRun {
  /** Lines of the balances the pending deltas were folded into. */
  compacted: number;
  check: CheckRun;
}

/**
 * One pass of the `ledger` job: fold the pending balance deltas into the balances (instances take
 * different deltas, SKIP LOCKED), then check the ledger's invariants (one instance at a time).
 */
export async function runLedgerOnce(deps: Deps): Promise<LedgerRun> {
  const now = deps.clock.now();
  const compacted = await compactBalances(deps.sql, now);
  const since = checkedAll ? new Date(now.getTime() - LEDGER_CHECK_WINDOW_MS) : null;
  const check = await checkLedger(deps.sql, { since, now, log: deps.log });
  checkedAll = true;
  return { compacted, check };
}
