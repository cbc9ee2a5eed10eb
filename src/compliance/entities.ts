import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';

/**
 * An exception item announced overdue (the `exception overdue` log line, `./overdue.ts`): its
 * queue, its id and when it started waiting. The primary key makes the announcement once-only
 * across instances; an item that leaves its queue and comes back has a new `since`.
 */
export const OverdueNotice = defineEntity({
  name: 'OverdueNotice',
  tableName: 'exception_overdue_notices',
  properties: {
    queue: p.string().length(64).primary(),
    itemId: p.uuid().primary(),
    since: p.datetime().primary(),
    noticedAt: p.datetime(),
  },
});
export type OverdueNotice = InferEntity<typeof OverdueNotice>;
