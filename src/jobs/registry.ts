import { APPROVALS_INTERVAL_MS, runApprovalsOnce } from '#src/approvals/job.ts';
import type { Config, JobName } from '#src/config.ts';
import type { Deps } from '#src/deps.ts';
import { runDispatchOnce } from '#src/dispatch/job.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { LEDGER_INTERVAL_MS, runLedgerOnce } from '#src/ledger/job.ts';
import { RECON_INTERVAL_MS, runReconciliationOnce } from '#src/reconciliation/job.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { runSettlementOnce } from '#src/settlement/job.ts';
import { runWebhooksOnce } from '#src/webhooks/job.ts';
import { RETENTION_INTERVAL_MS, runRetentionOnce } from './retention.ts';

/** A background job: one pass over its due work, and how often it looks when not woken. */
export interface JobDefinition {
  name: JobName;
  intervalMs(config: Config): number;
  runOnce(deps: Deps): Promise<unknown>;
}

/** Every background job; each runs in its own Bree worker thread. */
export const JOBS: readonly JobDefinition[] = [
  {
    name: 'instructions',
    // The contract's sweep; a request wakes the job right after creating a payout.
    intervalMs: (config) => config.INSTRUCTION_SWEEP_INTERVAL_MS,
    runOnce: runInstructionsOnce,
  },
  // Proposals past APPROVAL_TTL_HOURS become EXPIRED; nothing wakes it.
  { name: 'approvals', intervalMs: () => APPROVALS_INTERVAL_MS, runOnce: runApprovalsOnce },
  { name: 'dispatch', intervalMs: (config) => config.WORKER_POLL_INTERVAL_MS, runOnce: runDispatchOnce },
  { name: 'refunds', intervalMs: (config) => config.WORKER_POLL_INTERVAL_MS, runOnce: runRefundsOnce },
  { name: 'settlement', intervalMs: (config) => config.WORKER_POLL_INTERVAL_MS, runOnce: runSettlementOnce },
  // A pass keeps going while attempts are in flight; between passes it looks for new events.
  { name: 'webhooks', intervalMs: (config) => config.WORKER_POLL_INTERVAL_MS, runOnce: runWebhooksOnce },
  // Expired idempotency keys and old done tasks; nothing wakes it.
  { name: 'retention', intervalMs: () => RETENTION_INTERVAL_MS, runOnce: runRetentionOnce },
  // Yesterday's reconciliation of every rail, once RECON_RUN_AT has passed; nothing wakes it.
  { name: 'reconciliation', intervalMs: () => RECON_INTERVAL_MS, runOnce: runReconciliationOnce },
  // Folds the balances and checks the ledger's invariants; nothing wakes it.
  { name: 'ledger', intervalMs: () => LEDGER_INTERVAL_MS, runOnce: runLedgerOnce },
];

export function jobNamed(name: string): JobDefinition {
  const job = JOBS.find((j) => j.name === name);
  if (!job) throw new Error(`no job named ${name}`);
  return job;
}
