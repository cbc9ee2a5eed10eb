import { NETWORKS } from '#src/corridors/corridors.ts';
import type { Deps } from '#src/deps.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { pullBankStatement } from './bank-statement.ts';
import { type ChainScan, scanChain } from './chain-scan.ts';
import type { RailSource } from './entities.ts';
import { type MatchSummary, matchConfirmedInflows } from './matching.ts';
import { sweepHeldOfFailedPayouts } from './payout-failure.ts';
import type { RailRead } from './rail-reader.ts';

/** What one run of the settlement job did. */
export interface SettlementRun {
  scans: ChainScan[];
  /** The read of the bank's statement; null when it failed. */
  statement: RailRead | null;
  /** Rails whose read failed this run (the cursor stays where it was; the next run retries). */
  failedScans: RailSource[];
  matching: MatchSummary;
  /** Inflows found HELD against a FAILED payout and handed to its refund (FOR_REFUND); null when that failed. */
  handedToRefund: number | null;
}

/**
 * One run of the settlement job: scan every network (record new transfers, count
 * confirmations), read the bank's statement when its interval is up (record the credits whose
 * notification never came), then match every CONFIRMED inflow, bank credits the callback could
 * not match included; last, hand to their refunds any inflows still HELD against a FAILED payout
 * (`sweepHeldOfFailedPayouts`). A rail that cannot be read does not stop the others or the matching.
 */
export async function runSettlementOnce(deps: Deps): Promise<SettlementRun> {
  const scans: ChainScan[] = [];
  const failedScans: RailSource[] = [];
  const failed = (source: RailSource, err: unknown) => {
    failedScans.push(source);
    if (err instanceof ProviderUnavailableError)
      deps.log.warn({ err, source }, 'rail read failed; will retry');
    else deps.log.error({ err, source }, 'rail read failed; will retry');
  };
  for (const network of NETWORKS) {
    try {
      scans.push(await scanChain(deps, network));
    } catch (err) {
      failed(network, err);
    }
  }
  let statement: RailRead | null = null;
  try {
    statement = await pullBankStatement(deps);
  } catch (err) {
    failed('BANK', err);
  }
  const matching = await matchConfirmedInflows(deps);
  let handedToRefund: number | null = null;
  try {
    handedToRefund = await sweepHeldOfFailedPayouts(deps);
  } catch (err) {
    deps.log.error({ err }, 'handing money held against failed payouts to their refunds failed; will retry');
  }
  return { scans, statement, failedScans, matching, handedToRefund };
}
