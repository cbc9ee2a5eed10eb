import type { Deps } from '#src/deps.ts';
import { claimTasks } from '#src/jobs/tasks.ts';
import { expireInstructions, generateInstructions } from './service.ts';

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
 */
export async function runInstructionsOnce(deps: Deps): Promise<{ generated: number; expired: number }> {
  let generated = 0;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const tasks = await claimTasks(deps.orm.em.fork(), {
      kind: 'GENERATE_INSTRUCTION',
      now: deps.clock.now(),
      limit: GENERATION_BATCH,
      leaseMs: LEASE_MS,
    });
    if (tasks.length === 0) break;
    await generateInstructions(deps, tasks);
    generated += tasks.length;
    if (tasks.length < GENERATION_BATCH) break;
  }
  let expired = 0;
  for (let n = await expireInstructions(deps); n > 0; n = await expireInstructions(deps)) expired += n;
  return { generated, expired };
}
