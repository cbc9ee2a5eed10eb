import type { Deps } from '#src/deps.ts';
import { claimTasks } from '#src/jobs/tasks.ts';
import {
  expireInstructions,
  type PreparedGeneration,
  prepareGeneration,
  writeGeneration,
} from './service.ts';

export { MAX_GENERATION_ATTEMPTS } from './service.ts';

/**
 * Tasks claimed per batch. Large enough that a batch's fixed cost (a dozen round trips, one rate
 * call per currency pair) is small per payout; small enough that one transaction stays short
 * and the API sharing the database and the cores does not wait behind it.
 */
export const GENERATION_BATCH = 250;

/** How long a claim holds a task: a batch whose worker died is picked up again after this. */
const LEASE_MS = 60_000;

/** Batches per run; the next run (a wake-up or the sweep) carries on from there. */
const MAX_ROUNDS = 400;

/**
 * One run of the instructions job: generate every due instruction (right after creation, and
 * again for those whose earlier attempt failed transiently), a batch of claimed tasks at a
 * time, then end the lapsed ones.
 *
 * Batches are pipelined: while one batch's transaction runs in PostgreSQL, the next batch is
 * claimed and prepared (its reads and provider calls) on the pool's other connection, so the
 * worker's JavaScript and the database work at the same time instead of taking turns. Two batches
 * never write at once, and a prepared batch holds no lock, only the lease on its tasks.
 */
export async function runInstructionsOnce(deps: Deps): Promise<{ generated: number; expired: number }> {
  const claimAndPrepare = async (): Promise<PreparedGeneration | null> => {
    const tasks = await claimTasks(deps.orm.em.fork(), {
      kind: 'GENERATE_INSTRUCTION',
      now: deps.clock.now(),
      limit: GENERATION_BATCH,
      leaseMs: LEASE_MS,
    });
    return tasks.length === 0 ? null : prepareGeneration(deps, tasks);
  };
  let generated = 0;
  let next: Promise<PreparedGeneration | null> | null = claimAndPrepare();
  for (let round = 0; next && round < MAX_ROUNDS; round++) {
    const batch: PreparedGeneration | null = await next;
    if (!batch) break;
    // A full batch suggests more is due: prepare the next one while this one is written.
    next = batch.prepared.length === GENERATION_BATCH && round + 1 < MAX_ROUNDS ? claimAndPrepare() : null;
    try {
      await writeGeneration(deps, batch);
    } catch (err) {
      // The batch prepared meanwhile keeps its lease until it lapses; let its failure, if any, go unobserved.
      next?.catch(() => undefined);
      throw err;
    }
    generated += batch.prepared.length;
  }
  let expired = 0;
  for (let n = await expireInstructions(deps); n > 0; n = await expireInstructions(deps)) expired += n;
  return { generated, expired };
}
