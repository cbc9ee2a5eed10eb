import type { Deps } from '#src/deps.ts';
import { runDueReconciliations } from './service.ts';

/** How often the `reconciliation` job looks whether yesterday's runs are due and not done. */
export const RECON_INTERVAL_MS = 60_000;

/** The `reconciliation` job: yesterday's run of each rail, once RECON_RUN_AT (UTC) has passed. */
export async function runReconciliationOnce(deps: Deps): Promise<{ ran: number }> {
  const { ran } = await runDueReconciliations(deps);
  return { ran: ran.length };
}
