import type { Deps } from '#src/deps.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { pullSettlementChanges } from './records.ts';
import { runDueReconciliations } from './service.ts';

/** How often the `reconciliation` job pulls the processor's report changes and looks whether yesterday's runs are due. */
export const RECON_INTERVAL_MS = 60_000;

/**
 * The `reconciliation` job: first the processor's settlement report changes since the last read,
 * kept ahead of the runs (instances side by side lease the read: one reads, the others move on);
 * then yesterday's run of each rail, once RECON_RUN_AT (UTC) has passed.
 */
export async function runReconciliationOnce(deps: Deps): Promise<{ pulled: number | null; ran: number }> {
  let pulled: number | null = null;
  try {
    pulled = (await pullSettlementChanges(deps, { wait: false })).recorded;
  } catch (err) {
    // The runs still read what is new themselves; the next pass pulls again.
    if (err instanceof ProviderUnavailableError)
      deps.log.warn({ err }, "pulling the processor's settlement report changes failed; will retry");
    else deps.log.error({ err }, "pulling the processor's settlement report changes failed; will retry");
  }
  const { ran } = await runDueReconciliations(deps);
  return { pulled, ran: ran.length };
}
