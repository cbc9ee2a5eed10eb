import { type Sql, statement, toDate } from '#src/db/sql.ts';
import type { Logger } from '#src/lib/log.ts';
import { overdueCutoffs, overdueItems } from './exceptions.ts';
import { EXCEPTION_QUEUES, type ExceptionQueue } from './queues.ts';

/**
 * Items that have become overdue since the last look, each recorded once
 * (`exception_overdue_notices`): instances running the `approvals` job side by side insert the
 * same rows, and the primary key lets exactly one of them have each.
 */
const recordNotices = statement(
  'exception_overdue_notices_insert',
  `insert into exception_overdue_notices (queue, item_id, since, noticed_at)
   select queue, id, since, $${EXCEPTION_QUEUES.length + 1}::timestamptz
     from (${overdueItems.text}) overdue
   on conflict do nothing
   returning queue, item_id, since`,
);

export interface OverdueNoticeRow {
  queue: ExceptionQueue;
  itemId: string;
  since: Date;
}

/**
 * Writes `exception overdue` (warn) once for every item that has waited longer than its queue's
 * overdue age and was not announced before; returns the items announced now.
 */
export async function announceOverdue(args: {
  sql: Sql;
  log: Logger;
  now: Date;
  hours: Readonly<Record<ExceptionQueue, number>>;
}): Promise<OverdueNoticeRow[]> {
  const { sql, log, now, hours } = args;
  const rows = await sql.rows<{ queue: ExceptionQueue; item_id: string; since: string | Date }>(
    recordNotices,
    [...overdueCutoffs(now, hours), now],
  );
  const announced = rows.map((r) => ({ queue: r.queue, itemId: r.item_id, since: toDate(r.since) }));
  for (const item of announced) {
    log.warn(
      {
        queue: item.queue,
        item_id: item.itemId,
        since: item.since.toISOString(),
        overdue_after_hours: hours[item.queue],
        waited_hours: Math.floor((now.getTime() - item.since.getTime()) / 3_600_000),
      },
      'exception overdue',
    );
  }
  return announced;
}
