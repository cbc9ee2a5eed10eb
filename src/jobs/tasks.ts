import type { EntityManager } from '@mikro-orm/postgresql';
import { emSql, type Sql, statement } from '#src/db/sql.ts';
import { newId } from '#src/lib/ids.ts';
import type { TaskKind } from './entities.ts';

/**
 * Makes `kind` due for `subjectId` (of `tenantId`) at `dueAt` inside the caller's transaction. At
 * most one open task exists per kind and subject (a partial unique index), so the same work is
 * never queued twice; scheduling an open task again bumps its generation, so that a worker
 * handling it right now cannot complete away the work just asked for. Its due time is left alone:
 * a task waiting out a retry's backoff keeps waiting, and a task a worker holds becomes due at
 * once when that worker completes it (see {@link completeTask}).
 */
export async function scheduleTask(
  em: EntityManager,
  args: { kind: TaskKind; subjectId: string; tenantId: string; dueAt: Date; now: Date },
): Promise<void> {
  await em.execute(
    `insert into tasks (id, kind, subject_id, tenant_id, due_at, attempts, created_at, updated_at)
     values (?, ?, ?, ?, ?, 0, ?, ?)
     on conflict (kind, subject_id) where done_at is null
     do update set generation = tasks.generation + 1, tenant_id = coalesce(tasks.tenant_id, excluded.tenant_id),
                   updated_at = excluded.updated_at`,
    [newId(), args.kind, args.subjectId, args.tenantId, args.dueAt, args.now, args.now],
  );
}

const scheduleMany = statement(
  'tasks_schedule',
  `insert into tasks (id, kind, subject_id, tenant_id, due_at, attempts, generation, created_at, updated_at)
   select t.id, t.kind, t.subject_id, t.tenant_id, $4, 0, 0, $5, $5
     from unnest($1::uuid[], $2::text[], $3::uuid[], $6::uuid[]) as t(id, kind, subject_id, tenant_id)
   on conflict (kind, subject_id) where done_at is null
   do update set generation = tasks.generation + 1, tenant_id = coalesce(tasks.tenant_id, excluded.tenant_id),
                 updated_at = excluded.updated_at`,
);

/** {@link scheduleTask} for many (kind, subject) pairs in one statement. */
export async function scheduleTasks(
  sql: Sql,
  items: readonly { kind: TaskKind; subjectId: string; tenantId: string }[],
  args: { dueAt: Date; now: Date },
): Promise<void> {
  // One row per pair: a statement may not bump the same open task twice.
  const unique = [...new Map(items.map((i) => [`${i.kind}:${i.subjectId}`, i])).values()];
  if (unique.length === 0) return;
  await sql.rows(scheduleMany, [
    unique.map(() => newId()),
    unique.map((i) => i.kind),
    unique.map((i) => i.subjectId),
    args.dueAt,
    args.now,
    unique.map((i) => i.tenantId),
  ]);
}

export interface ClaimedTask {
  id: string;
  kind: TaskKind;
  subjectId: string;
  /** The subject's tenant, null on a task scheduled before tasks carried it. */
  tenantId: string | null;
  attempts: number;
  /** The generation claimed: completing is refused once the task was scheduled again. */
  generation: number;
}

/**
 * How a worker finds a task's subject through the ORM: by id and tenant (the primary key of the
 * tenants' tables), or by id alone on a task scheduled before tasks carried the tenant.
 */
export function taskSubject(task: Pick<ClaimedTask, 'subjectId' | 'tenantId'>): {
  id: string;
  tenant?: string;
} {
  return task.tenantId ? { id: task.subjectId, tenant: task.tenantId } : { id: task.subjectId };
}

/**
 * Claims up to `limit` due tasks of `kind` by leasing them for `leaseMs`, in one statement under
 * `FOR UPDATE SKIP LOCKED`: two instances never claim the same task, and a task whose worker died
 * is claimable again when its lease runs out. The lease is a column of its own, not a later due
 * time: the claim moves nothing an index reads, so PostgreSQL rewrites each row in place (HOT).
 * Leased tasks stay in the due index, and the next claims read past them (the batches in flight,
 * a few hundred rows at most).
 */
export async function claimTasks(
  em: EntityManager,
  args: { kind: TaskKind; now: Date; limit: number; leaseMs: number },
): Promise<ClaimedTask[]> {
  const rows = await em.execute<
    {
      id: string;
      kind: TaskKind;
      subject_id: string;
      tenant_id: string | null;
      attempts: number;
      generation: number;
    }[]
  >(
    `update tasks set leased_until = ?, attempts = attempts + 1, updated_at = ?
      where id in (
        select id from tasks
         where kind = ? and done_at is null and due_at <= ? and (leased_until is null or leased_until <= ?)
         order by due_at
         limit ?
         for update skip locked)
      returning id, kind, subject_id, tenant_id, attempts, generation`,
    [new Date(args.now.getTime() + args.leaseMs), args.now, args.kind, args.now, args.now, args.limit],
  );
  return rows.map((r) => ({
    id: r.id,
    kind: r.kind,
    subjectId: r.subject_id,
    tenantId: r.tenant_id,
    attempts: r.attempts,
    generation: r.generation,
  }));
}

/**
 * Marks a claimed task done and ends its lease, unless it was scheduled again since the claim:
 * then it stays open and becomes due at once, so the next pass does the new work. In the
 * EntityManager's transaction when it has one: {@link completeTasks} with one task.
 */
export async function completeTask(
  em: EntityManager,
  task: Pick<ClaimedTask, 'id' | 'generation'>,
  now: Date,
): Promise<void> {
  await completeTasks(emSql(em), [task], now);
}

const completeMany = statement(
  'tasks_complete',
  `update tasks t
      set done_at = case when t.generation = c.generation then $3::timestamptz end,
          due_at = case when t.generation = c.generation then t.due_at else $3::timestamptz end,
          leased_until = null, updated_at = $3
     from unnest($1::uuid[], $2::int[]) as c(id, generation)
    where t.id = c.id`,
);

/** {@link completeTask} for many claimed tasks in one statement. */
export async function completeTasks(
  sql: Sql,
  tasks: readonly Pick<ClaimedTask, 'id' | 'generation'>[],
  now: Date,
): Promise<void> {
  if (tasks.length === 0) return;
  await sql.rows(completeMany, [tasks.map((t) => t.id), tasks.map((t) => t.generation), now]);
}

/** A claimed task to put back for a later attempt, with what went wrong. */
export interface TaskRetry {
  task: Pick<ClaimedTask, 'id' | 'generation'>;
  dueAt: Date;
  error: string;
}

const retryMany = statement(
  'tasks_retry',
  `update tasks t
      set due_at = case when t.generation = r.generation then r.due_at else $5::timestamptz end,
          leased_until = null, last_error = r.error, updated_at = $5
     from unnest($1::uuid[], $2::int[], $3::timestamptz[], $4::text[]) as r(id, generation, due_at, error)
    where t.id = r.id`,
);

/**
 * Puts claimed tasks back for a later attempt each, in one statement, ending their leases and
 * keeping what went wrong (due at once instead when one was scheduled again meanwhile: its
 * generation moved on).
 */
export async function retryTasks(sql: Sql, retries: readonly TaskRetry[], now: Date): Promise<void> {
  if (retries.length === 0) return;
  await sql.rows(retryMany, [
    retries.map((r) => r.task.id),
    retries.map((r) => r.task.generation),
    retries.map((r) => r.dueAt),
    retries.map((r) => r.error.slice(0, 2000)),
    now,
  ]);
}

/** {@link retryTasks} for one task, in the EntityManager's transaction when it has one. */
export async function retryTask(em: EntityManager, args: TaskRetry & { now: Date }): Promise<void> {
  await retryTasks(emSql(em), [args], args.now);
}

/** Exponential backoff for task retries: 1 s, 2 s, 4 s … capped at `capMs`. */
export function taskBackoffMs(attempts: number, baseMs = 1000, capMs = 300_000): number {
  return Math.min(capMs, baseMs * 2 ** Math.max(0, attempts - 1));
}
