import { NETWORKS } from '#src/corridors/corridors.ts';
import type { Deps } from '#src/deps.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { type ChainScan, scanChain } from './chain-scan.ts';
import { type MatchSummary, matchConfirmedInflows } from './matching.ts';

/** What one run of the settlement job did. */
export interface SettlementRun {
  scans: ChainScan[];
  /** Networks whose scan failed this run (the cursor stays where it was; the next run retries). */
  failedScans: string[];
  matching: MatchSummary;
}

/**
 * One run of the settlement job: scan every network (record new transfers, count
 * confirmations), then match every CONFIRMED inflow, bank credits the callback could not match
 * included. A chain that cannot be read does not stop the others or the matching.
 */
export async function runSettlementOnce(deps: Deps): Promise<SettlementRun> {
  const scans: ChainScan[] = [];
  const failedScans: string[] = [];
  for (const network of NETWORKS) {
    try {
      scans.push(await scanChain(deps, network));
    } catch (err) {
      failedScans.push(network);
      if (err instanceof ProviderUnavailableError)
        deps.log.warn({ err, network }, 'chain scan failed; will retry');
      else deps.log.error({ err, network }, 'chain scan failed; will retry');
    }
  }
  const matching = await matchConfirmedInflows(deps);
  return { scans, failedScans, matching };
}
