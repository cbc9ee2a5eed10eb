import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '#src/lib/ids.ts';
import type { TaskKind } from './entities.ts';

/**
 * Makes `kind` due for `subjectId` at `dueAt` inside the caller's transaction. At most one open
 * task exists per kind and subject (a partial unique index): scheduling again is a no-op, so a
 * state change can never queue the same work twice.
 */
export async function scheduleTask(
  em: EntityManager,
  args: { kind: TaskKind; subjectId: string; dueAt: Date; now: Date },
): Promise<void> {
  await em.execute(
    `insert into tasks (id, kind, subject_id, due_at, attempts, created_at, updated_at)
     values (?, ?, ?, ?, 0, ?, ?)
     on conflict (kind, subject_id) where done_at is null do nothing`,
    [newId(), args.kind, args.subjectId, args.dueAt, args.now, args.now],
  );
}

export interface ClaimedTask {
  id: string;
  kind: TaskKind;
  subjectId: string;
  attempts: number;
}

/**
 * Claims up to `limit` due tasks of `kind` by pushing their due time `leaseMs` into the future,
 * in one statement under `FOR UPDATE SKIP LOCKED`: two instances never claim the same task, and a
 * task whose worker died becomes due again when the lease runs out.
 */
export async function claimTasks(
  em: EntityManager,
  args: { kind: TaskKind; now: Date; limit: number; leaseMs: number },
): Promise<ClaimedTask[]> {
  const rows = await em.execute<{ id: string; kind: TaskKind; subject_id: string; attempts: number }[]>(
    `update tasks set due_at = ?, attempts = attempts + 1, updated_at = ?
      where id in (
        select id from tasks
         where kind = ? and done_at is null and due_at <= ?
         order by due_at
         limit ?
         for update skip locked)
      returning id, kind, subject_id, attempts`,
    [new Date(args.now.getTime() + args.leaseMs), args.now, args.kind, args.now, args.limit],
  );
  return rows.map((r) => ({ id: r.id, kind: r.kind, subjectId: r.subject_id, attempts: r.attempts }));
}

/** Marks a claimed task done. */
export async function completeTask(em: EntityManager, taskId: string, now: Date): Promise<void> {
  await em.execute('update tasks set done_at = ?, updated_at = ? where id = ?', [now, now, taskId]);
}

/** Puts a claimed task back for a later attempt, keeping what went wrong. */
export async function retryTask(
  em: EntityManager,
  args: { taskId: string; dueAt: Date; error: string; now: Date },
): Promise<void> {
  await em.execute('update tasks set due_at = ?, last_error = ?, updated_at = ? where id = ?', [
    args.dueAt,
    args.error.slice(0, 2000),
    args.now,
    args.taskId,
  ]);
}

/** Exponential backoff for task retries: 1 s, 2 s, 4 s … capped at `capMs`. */
export function taskBackoffMs(attempts: number, baseMs = 1000, capMs = 300_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempts - 1));
}
