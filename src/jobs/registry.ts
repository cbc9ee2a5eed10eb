import type { Config, JobName } from '#src/config.ts';
import type { Deps } from '#src/deps.ts';

/** What a job does: one pass over its due work, and how often it looks when not woken. */
export interface JobRun {
  intervalMs(config: Config): number;
  runOnce(deps: Deps): Promise<unknown>;
}

/**
 * A background job, by name. Its code is imported only by the worker thread that runs it
 * (`load`), so each thread holds its own job's modules and not every job's.
 */
export interface JobDefinition {
  name: JobName;
  load(): Promise<JobRun>;
}

/** Every background job; each runs in its own Bree worker thread. */
export const JOBS: readonly JobDefinition[] = [
  {
    name: 'instructions',
    // The contract's sweep; a request wakes the job right after creating a payout.
    load: async () => ({
      intervalMs: (config) => config.INSTRUCTION_SWEEP_INTERVAL_MS,
      runOnce: (await import('#src/instructions/job.ts')).runInstructionsOnce,
    }),
  },
  {
    name: 'approvals',
    // Proposals past APPROVAL_TTL_HOURS become EXPIRED; nothing wakes it.
    load: async () => {
      const { APPROVALS_INTERVAL_MS, runApprovalsOnce } = await import('#src/approvals/job.ts');
      return { intervalMs: () => APPROVALS_INTERVAL_MS, runOnce: runApprovalsOnce };
    },
  },
  {
    name: 'dispatch',
    load: async () => ({
      intervalMs: (config) => config.WORKER_POLL_INTERVAL_MS,
      runOnce: (await import('#src/dispatch/job.ts')).runDispatchOnce,
    }),
  },
  {
    name: 'refunds',
    load: async () => ({
      intervalMs: (config) => config.WORKER_POLL_INTERVAL_MS,
      runOnce: (await import('#src/refunds/job.ts')).runRefundsOnce,
    }),
  },
  {
    name: 'settlement',
    load: async () => ({
      intervalMs: (config) => config.WORKER_POLL_INTERVAL_MS,
      runOnce: (await import('#src/settlement/job.ts')).runSettlementOnce,
    }),
  },
  {
    name: 'webhooks',
    // A pass keeps going while attempts are in flight; between passes it looks for new events.
    load: async () => ({
      intervalMs: (config) => config.WORKER_POLL_INTERVAL_MS,
      runOnce: (await import('#src/webhooks/job.ts')).runWebhooksOnce,
    }),
  },
  {
    name: 'retention',
    // Expired idempotency keys and old done tasks; nothing wakes it.
    load: async () => {
      const { RETENTION_INTERVAL_MS, runRetentionOnce } = await import('./retention.ts');
      return { intervalMs: () => RETENTION_INTERVAL_MS, runOnce: runRetentionOnce };
    },
  },
  {
    name: 'reconciliation',
    // Yesterday's reconciliation of every rail, once RECON_RUN_AT has passed; nothing wakes it.
    load: async () => {
      const { RECON_INTERVAL_MS, runReconciliationOnce } = await import('#src/reconciliation/job.ts');
      return { intervalMs: () => RECON_INTERVAL_MS, runOnce: runReconciliationOnce };
    },
  },
  {
    name: 'ledger',
    // Folds the balances and checks the ledger's invariants; nothing wakes it.
    load: async () => {
      const { LEDGER_INTERVAL_MS, runLedgerOnce } = await import('#src/ledger/job.ts');
      return { intervalMs: () => LEDGER_INTERVAL_MS, runOnce: runLedgerOnce };
    },
  },
];

export function jobNamed(name: string): JobDefinition {
  const job = JOBS.find((j) => j.name === name);
  if (!job) throw new Error(`no job named ${name}`);
  return job;
}
