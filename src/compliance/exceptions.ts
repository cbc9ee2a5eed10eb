import { rowsWith, type Sql, type Statement, statement, toDate, WITHOUT_JIT } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { decodeCursor, pageFrom } from '#src/http/pagination.ts';
import { EXCEPTION_QUEUES, type ExceptionQueue } from './queues.ts';

/**
 * The queues where money (or a message about it) waits for a person, for `admin.exceptions`:
 * how many objects each holds and since when the oldest has waited. Every queue is read from a
 * partial index that holds exactly its rows (migration `exception_queues`), so the counts cost
 * the size of the queues, not of the tables.
 */

export {
  EXCEPTION_QUEUES,
  type ExceptionQueue,
  QUEUE_INFO,
  type QueueInfo,
} from './queues.ts';

/**
 * Each queue's rows: the object's `id` and `since`, when it started waiting. The `where` of each is
 * the predicate of the queue's partial index, word for word (PostgreSQL uses a partial index only
 * for a query that implies its predicate). A new queue adds its part here.
 */
const QUEUE_ROWS: Record<ExceptionQueue, string> = {
  PAYOUTS_HELD_UNDERPAID: `select p.id, held.since
     from payouts p
     cross join lateral (
       select min(t.created_at) as since from payout_status_timeline t
        where t.payout_id = p.id and t.reason_code = 'SETTLEMENT_UNDERPAID') held
    where p.status = 'PENDING_PAYMENT' and (p.snapshot->'value'->>'PENDING_PAYMENT') = 'held'`,
  PAYOUTS_HELD_PAYEE_NAME: `select p.id, held.since
     from payouts p
     cross join lateral (
       select max(t.created_at) as since from payout_status_timeline t
        where t.payout_id = p.id and t.reason_code = 'PAYEE_NAME_HELD') held
    where p.status = 'CREATED' and (p.snapshot->'value'->>'CREATED') = 'payeeHeld'`,
  INFLOWS_UNMATCHED: `select id, arrived_at as since
     from inflows where state = 'UNMATCHED' or (state = 'HELD' and payout_id is null)`,
  REFUNDS_FAILED: `select id, updated_at as since from refunds where status = 'FAILED'`,
  // Not while its RAISE_REFUND task is open: the service is about to raise the refund itself.
  MONEY_HELD_NO_REFUND_DESTINATION: `select p.id, p.updated_at as since
     from payouts p
    where p.status = 'FAILED' and p.is_refunded = false and p.received_amount > 0
      and not exists (
        select 1 from tasks t
         where t.kind = 'RAISE_REFUND' and t.subject_id = p.id and t.done_at is null)`,
  // Set aside at success (the excess of what it received over what it asked for) and not yet
  // returned: a refund of the payout, of its overpayment or of everything, takes the excess back.
  // The refund is looked for row by row, by the refunds' unique key (a scalar subquery: as an
  // anti-join the planner would read the refunds whole).
  PAYOUTS_OVERPAYMENT_TO_RETURN: `select p.id, p.updated_at as since
     from payouts p
    where p.status = 'SUCCESSFUL' and p.received_amount > p.settlement_amount
      and (select count(*) from refunds r where r.payout_id = p.id and r.tenant_id = p.tenant_id) = 0`,
  WEBHOOK_DELIVERIES_DEAD: `select d.id, d.updated_at as since
     from webhook_deliveries d
    where d.status = 'DEAD'
      and not exists (
        select 1 from webhook_deliveries r
         where r.event_id = d.event_id and r.redelivery_of is not null and r.id <> d.id
           and r.created_at >= d.created_at)`,
  APPROVALS_PENDING: `select id, created_at as since from approvals where status = 'PENDING'`,
  RECONCILIATION_BREAKS: `select id, created_at as since from recon_breaks where status = 'OPEN'`,
  OUT_OF_BALANCE: `select id, first_seen_at as since from ledger_violations where resolved_at is null`,
};

/** `$n` of a queue in the statements below: its overdue cut-off (a time; older is overdue). */
const cutoff = (queue: ExceptionQueue): string => `$${EXCEPTION_QUEUES.indexOf(queue) + 1}::timestamptz`;

/**
 * One row per queue: how many wait, since when the oldest, how many are overdue. Takes one
 * cut-off per queue, in the order of EXCEPTION_QUEUES.
 */
export const exceptionCounts = statement(
  'exception_queue_counts',
  EXCEPTION_QUEUES.map(
    (q) =>
      `select '${q}' as queue, count(*)::int as count, min(since) as oldest_at,
              (count(*) filter (where since <= ${cutoff(q)}))::int as overdue
         from (${QUEUE_ROWS[q]}) q`,
  ).join('\n   union all\n   '),
);

/** The overdue items of every queue, oldest first per queue (same cut-offs as `exceptionCounts`). */
export const overdueItems = statement(
  'exception_queue_overdue_items',
  EXCEPTION_QUEUES.map(
    (q) => `(select '${q}' as queue, id, since from (${QUEUE_ROWS[q]}) q where since <= ${cutoff(q)})`,
  ).join('\n   union all\n   '),
);

export interface QueueCount {
  queue: ExceptionQueue;
  count: number;
  oldestAt: Date | null;
  /** Items that have waited longer than the queue's overdue age. */
  overdue: number;
}

const HOUR_MS = 3_600_000;

/** The time before which an item of each queue is overdue, in the order of EXCEPTION_QUEUES. */
export function overdueCutoffs(now: Date, hours: Readonly<Record<ExceptionQueue, number>>): Date[] {
  return EXCEPTION_QUEUES.map((q) => new Date(now.getTime() - hours[q] * HOUR_MS));
}

export async function exceptionQueues(
  sql: Sql,
  args: { now: Date; hours: Readonly<Record<ExceptionQueue, number>> },
): Promise<QueueCount[]> {
  // Timestamps come back as text from the pool (`src/db/sql.ts`).
  const rows = await rowsWith<{
    queue: ExceptionQueue;
    count: number;
    oldest_at: string | Date | null;
    overdue: number;
  }>(sql, WITHOUT_JIT, exceptionCounts, overdueCutoffs(args.now, args.hours));
  const byQueue = new Map(rows.map((r) => [r.queue, r]));
  return EXCEPTION_QUEUES.map((queue) => {
    const row = byQueue.get(queue);
    return {
      queue,
      count: row?.count ?? 0,
      oldestAt: row?.oldest_at ? new Date(row.oldest_at) : null,
      overdue: row?.overdue ?? 0,
    };
  });
}

/**
 * One page of the payouts held underpaid, oldest first by (created_at, id), after the position
 * `$1, $2` (both null for the first page), `$3` rows: read from `payouts_held_underpaid_index`
 * (the same predicate, word for word), so a page costs the queue's size, not the table's. One row
 * per payout however many short payments it received; `held_since` is the first of them.
 */
export const heldUnderpaidPage = statement(
  'payouts_held_underpaid_page',
  `select p.id, p.tenant_id, p.settlement_currency, p.settlement_network, p.settlement_amount::text,
          p.received_amount::text, p.created_at, held.since as held_since
     from payouts p
     cross join lateral (
       select min(t.created_at) as since from payout_status_timeline t
        where t.payout_id = p.id and t.reason_code = 'SETTLEMENT_UNDERPAID') held
    where p.status = 'PENDING_PAYMENT' and (p.snapshot->'value'->>'PENDING_PAYMENT') = 'held'
      and ($1::timestamptz is null or (p.created_at, p.id) > ($1::timestamptz, $2::uuid))
    order by p.created_at, p.id
    limit $3`,
);

export interface HeldUnderpaidRow {
  id: string;
  tenant_id: string;
  settlement_currency: string;
  settlement_network: string | null;
  settlement_amount: string;
  received_amount: string;
  created_at: string | Date;
  held_since: string | Date | null;
}

/**
 * One page of the successful payouts whose overpayment is still set aside, oldest first by
 * (created_at, id), after the position `$1, $2` (both null for the first page), `$3` rows: read
 * in order from `payouts_overpayment_index` (the queue's predicate, less the refund it has not
 * got, which each row's probe of the refunds' unique (payout_id, tenant_id) index rules out: the
 * index holds every overpaid successful payout, returned or not, a small part of the payouts). The
 * excess is what the payout received beyond what it asked for, as its success set it aside.
 */
export const overpaymentsToReturnPage = statement(
  'payouts_overpayment_to_return_page',
  `select p.id, p.tenant_id, p.settlement_currency, p.settlement_network, p.settlement_amount::text,
          p.received_amount::text, (p.received_amount - p.settlement_amount)::text as overpayment_amount,
          p.created_at, p.updated_at as succeeded_at,
          exists (select 1 from refund_destinations d
                   where d.tenant_id = p.tenant_id and d.currency = p.settlement_currency
                     and d.is_active) as refund_destination_active
     from payouts p
    where p.status = 'SUCCESSFUL' and p.received_amount > p.settlement_amount
      and (select count(*) from refunds r where r.payout_id = p.id and r.tenant_id = p.tenant_id) = 0
      and ($1::timestamptz is null or (p.created_at, p.id) > ($1::timestamptz, $2::uuid))
    order by p.created_at, p.id
    limit $3`,
);

export interface OverpaymentToReturnRow {
  id: string;
  tenant_id: string;
  settlement_currency: string;
  settlement_network: string | null;
  settlement_amount: string;
  received_amount: string;
  overpayment_amount: string;
  created_at: string | Date;
  succeeded_at: string | Date;
  refund_destination_active: boolean;
}

/**
 * One page of a queue read by `page`, a statement of the queue's partial index that takes the
 * position `$1, $2` ((created_at, id), both null for the first page) and `$3` rows, oldest first,
 * on `sql` (the replica's for a lag-tolerant read, `deps.sql` by default).
 */
export async function queuePage<R extends { id: string; created_at: string | Date }>(
  deps: Deps,
  page: Statement,
  args: { list: string; limit: number; cursor?: string | undefined },
  sql: Sql = deps.sql,
) {
  const cursorKey = deps.secrets.cursorKey;
  const after = args.cursor ? decodeCursor(cursorKey, args.cursor, args.list) : null;
  const rows = await sql.rows<R>(page, [after?.createdAt ?? null, after?.id ?? null, args.limit + 1]);
  return pageFrom(rows, {
    list: args.list,
    limit: args.limit,
    cursorKey,
    createdAtOf: (row) => toDate(row.created_at),
  });
}
