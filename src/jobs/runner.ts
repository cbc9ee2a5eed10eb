import type { EntityManager } from '@mikro-orm/postgresql';
import type { Deps } from '#src/deps.ts';
import { inRounds } from '#src/lib/rounds.ts';
import type { TaskKind } from './entities.ts';
import { type ClaimedTask, claimTasks, completeTask, retryTask, taskBackoffMs } from './tasks.ts';

/** What a task handler concluded: done, or try again later (with why). */
export type TaskOutcome = { done: true } | { done: false; error: string; retryInMs?: number };

export const DONE: TaskOutcome = { done: true };

/**
 * Claims due tasks of `kind`, `batch` at a time, and hands each batch (with the EntityManager that
 * claimed it) to `handle`, until a claim comes back empty or short or `maxRounds` batches were
 * handled. Returns how many tasks were claimed.
 */
export async function inClaimedBatches(
  deps: Pick<Deps, 'orm' | 'clock'>,
  kind: TaskKind,
  options: { batch: number; leaseMs: number; maxRounds: number },
  handle: (tasks: ClaimedTask[], em: EntityManager) => Promise<void>,
): Promise<number> {
  const { batch, leaseMs, maxRounds } = options;
  return inRounds({ batch, maxRounds }, async () => {
    const em = deps.orm.em.fork();
    const tasks = await claimTasks(em, { kind, now: deps.clock.now(), limit: batch, leaseMs });
    if (tasks.length > 0) await handle(tasks, em);
    return tasks.length;
  });
}

/**
 * Drains due tasks of one kind in batches until none is due, running each through `handle`
 * outside any transaction (handlers open their own, and call providers between them). A handler
 * that throws is retried with backoff; nothing is lost if the process dies mid-way, because a
 * claimed task is only a lease. Returns how many tasks were handled.
 */
export async function drainTasks(
  deps: Deps,
  kind: TaskKind,
  handle: (task: ClaimedTask) => Promise<TaskOutcome>,
  options: { batch?: number; leaseMs?: number; maxRounds?: number } = {},
): Promise<number> {
  const limits = {
    batch: options.batch ?? 50,
    leaseMs: options.leaseMs ?? 60_000,
    maxRounds: options.maxRounds ?? 100,
  };
  return inClaimedBatches(deps, kind, limits, async (tasks, em) => {
    for (const task of tasks) {
      let outcome: TaskOutcome;
      try {
        outcome = await handle(task);
      } catch (err) {
        deps.log.warn({ err, task: task.id, kind, subject: task.subjectId }, 'task failed; will retry');
        outcome = { done: false, error: err instanceof Error ? `${err.name}: ${err.message}` : String(err) };
      }
      const now = deps.clock.now();
      if (outcome.done) await completeTask(em, task, now);
      else {
        const wait = outcome.retryInMs ?? taskBackoffMs(task.attempts);
        await retryTask(em, {
          task,
          dueAt: new Date(now.getTime() + wait),
          error: outcome.error,
          now,
        });
      }
    }
  });
}
