import type { Deps } from '#src/deps.ts';
import { DONE, drainTasks } from '#src/jobs/runner.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import {
  expireInstructions,
  failGeneration,
  generateInstruction,
  PermanentGenerationError,
} from './service.ts';

/** Transient failures tolerated before a payout's instruction generation fails for good. */
export const MAX_GENERATION_ATTEMPTS = 8;

/**
 * One run of the instructions job: generate every due instruction (right after creation, and
 * again for those whose earlier attempt failed transiently), then end the lapsed ones.
 */
export async function runInstructionsOnce(deps: Deps): Promise<{ generated: number; expired: number }> {
  const generated = await drainTasks(deps, 'GENERATE_INSTRUCTION', async (task) => {
    try {
      await generateInstruction(deps, task.subjectId);
      return DONE;
    } catch (err) {
      if (err instanceof PermanentGenerationError) {
        await failGeneration(deps, task.subjectId, err.message);
        return DONE;
      }
      if (err instanceof ProviderUnavailableError && task.attempts < MAX_GENERATION_ATTEMPTS) {
        return { done: false, error: err.message };
      }
      if (task.attempts >= MAX_GENERATION_ATTEMPTS) {
        await failGeneration(
          deps,
          task.subjectId,
          `gave up after ${task.attempts} attempts: ${(err as Error).message}`,
        );
        return DONE;
      }
      throw err;
    }
  });
  let expired = 0;
  for (let n = await expireInstructions(deps); n > 0; n = await expireInstructions(deps)) expired += n;
  return { generated, expired };
}
