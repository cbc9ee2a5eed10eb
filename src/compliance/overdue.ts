import { rowsWith, type Sql, statement, toDate, WITHOUT_JIT } from '#src/db/sql.ts';
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

/**
 * Deletes up to `$n` notices of items that no longer wait in their queue as noticed (they left it,
 * or came back with a new `since`, which is a new notice): a notice only stops the same wait from
 * being announced twice, so once that wait is over it is worth nothing. A notice of an item still
 * waiting is kept however old, so an item is never announced twice. `overdueItems` with every
 * cut-off at `now` lists every item waiting now.
 */
export const purgeNotices = statement(
  'retention_exception_overdue_notices',
  `with gone as (
     delete from exception_overdue_notices where (queue, item_id, since) in (
       select n.queue, n.item_id, n.since from exception_overdue_notices n
        where not exists (
          select 1 from (${overdueItems.text}) waiting
           where waiting.queue = n.queue and waiting.id = n.item_id and waiting.since = n.since)
        limit $${EXCEPTION_QUEUES.length + 1}
        for update of n skip locked)
     returning 1)
   select count(*)::int as deleted from gone`,
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
  const rows = await rowsWith<{ queue: ExceptionQueue; item_id: string; since: string | Date }>(
    sql,
    WITHOUT_JIT,
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
