import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import { idColumn, timestamps } from '#src/db/columns.ts';

export const TASK_KINDS = [
  'GENERATE_INSTRUCTION',
  'DISPATCH',
  'QUERY_OUTFLOW',
  'RAISE_REFUND',
  'DISPATCH_REFUND',
] as const;
export type TaskKind = (typeof TASK_KINDS)[number];

/**
 * Background work as rows: what to do, to what (and whose), from when. Jobs claim due rows with
 * `FOR UPDATE SKIP LOCKED`, so any number of instances can run them; a crash loses nothing
 * because the row stays until the work is done.
 *
 * A claim is a lease (`leased_until`), a column no index reads, and the table leaves half of each
 * page free (fillfactor 45, set by its migration): a claim then rewrites the row on its own page
 * without touching an index (a HOT update), about half the cost of moving the indexed due time.
 */
export const Task = defineEntity({
  name: 'Task',
  tableName: 'tasks',
  indexes: [
    {
      name: 'tasks_open_unique',
      expression:
        'create unique index "tasks_open_unique" on "tasks" ("kind", "subject_id") where "done_at" is null',
    },
    {
      name: 'tasks_due_index',
      expression: 'create index "tasks_due_index" on "tasks" ("due_at") where "done_at" is null',
    },
  ],
  properties: {
    id: idColumn(),
    kind: p.enum(TASK_KINDS),
    subjectId: p.uuid(),
    /** The subject's tenant; null on tasks scheduled before tasks carried it. */
    tenantId: p.uuid().nullable(),
    dueAt: p.datetime(),
    /** Claimed by a worker until then; a task whose worker died is claimable again afterwards. */
    leasedUntil: p.datetime().nullable(),
    attempts: p.integer().default(0),
    /**
     * Bumped whenever the work is scheduled again while the task is open (possibly while a worker
     * is handling it): that worker's completion then leaves the task open for another pass.
     */
    generation: p.integer().default(0),
    lastError: p.text().nullable(),
    doneAt: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type Task = InferEntity<typeof Task>;
