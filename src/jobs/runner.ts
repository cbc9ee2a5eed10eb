import type { Deps } from '#src/deps.ts';
import type { TaskKind } from './entities.ts';
import { type ClaimedTask, claimTasks, completeTask, retryTask, taskBackoffMs } from './tasks.ts';

/** What a task handler concluded: done, or try again later (with why). */
export type TaskOutcome = { done: true } | { done: false; error: string; retryInMs?: number };

export const DONE: TaskOutcome = { done: true };

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
  const batch = options.batch ?? 50;
  const leaseMs = options.leaseMs ?? 60_000;
  let handled = 0;
  for (let round = 0; round < (options.maxRounds ?? 100); round++) {
    const em = deps.orm.em.fork();
    const tasks = await claimTasks(em, { kind, now: deps.clock.now(), limit: batch, leaseMs });
    if (tasks.length === 0) break;
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
      handled++;
    }
    if (tasks.length < batch) break;
  }
  return handled;
}
