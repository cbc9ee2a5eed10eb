import { type Sql, statement } from '#src/db/sql.ts';

/**
 * The queues where money (or a message about it) waits for a person, for `admin.exceptions`:
 * how many objects each holds and since when the oldest has waited. Every queue is read from a
 * partial index that holds exactly its rows (migration `exception_queues`), so the counts cost
 * the size of the queues, not of the tables.
 */

export const EXCEPTION_QUEUES = [
  'PAYOUTS_HELD_UNDERPAID',
  'INFLOWS_UNMATCHED',
  'REFUNDS_FAILED',
  'MONEY_HELD_NO_REFUND_DESTINATION',
  'WEBHOOK_DELIVERIES_DEAD',
  'APPROVALS_PENDING',
  'RECONCILIATION_BREAKS',
] as const;
export type ExceptionQueue = (typeof EXCEPTION_QUEUES)[number];

export interface QueueInfo {
  title: string;
  /** What waits there, and what a person can do about it. */
  description: string;
  /** The machine whose objects wait there, and the state they wait in. */
  machine: string;
  state: string;
  /** What the age is counted from. */
  since: string;
  /** The `admin.*` query that lists the queue's objects, oldest first where it can; null when none does yet. */
  list: string | null;
}

export const QUEUE_INFO: Record<ExceptionQueue, QueueInfo> = {
  PAYOUTS_HELD_UNDERPAID: {
    title: 'Payouts held underpaid',
    description:
      'Money arrived but less than the payout asked for. The merchant may top it up; otherwise operators fail the payout (four eyes) and its refund returns the money.',
    machine: 'payout',
    state: 'PENDING_PAYMENT.held',
    since: 'the first underpaid settlement',
    list: 'admin.payouts.heldUnderpaid',
  },
  // `admin.settlement.inflows` lists these as its rows with payout_id null; its other rows are the
  // money held against the payouts of PAYOUTS_HELD_UNDERPAID (`inflowsNeedingAttention`).
  INFLOWS_UNMATCHED: {
    title: 'Unmatched and late inflows',
    description:
      'Money no open instruction could take: it came late, repeated, matched nothing, or fell below every open instruction. Operators attribute it to a payout or record its return (four eyes).',
    machine: 'inflow',
    state: 'UNMATCHED, HELD.unattributed',
    since: 'the money arrived',
    list: 'admin.settlement.inflows',
  },
  REFUNDS_FAILED: {
    title: 'Failed refunds',
    description:
      "The rail refused a refund (usually the merchant's destination). Once the merchant corrects it, an operator retries the same refund.",
    machine: 'refund',
    state: 'FAILED',
    since: 'the refund failed',
    list: 'admin.refunds.failed',
  },
  MONEY_HELD_NO_REFUND_DESTINATION: {
    title: 'Money held without a refund destination',
    description:
      'A payout failed after its money arrived, and the merchant had no refund destination for that currency. Once the merchant registers one, an operator raises the refund.',
    machine: 'payout',
    state: 'FAILED',
    since: 'the payout failed',
    list: 'admin.refunds.held',
  },
  WEBHOOK_DELIVERIES_DEAD: {
    title: 'Dead webhook deliveries',
    description:
      "Every attempt to tell the merchant's server about an event failed, and nobody has sent the event again since. An operator redelivers it once the merchant's endpoint works again.",
    machine: 'webhook-delivery',
    state: 'DEAD',
    since: 'the last attempt failed',
    list: 'admin.webhooks.dead',
  },
  APPROVALS_PENDING: {
    title: 'Proposals waiting for approval',
    description:
      'An operator proposed to move money (attribute or return an inflow, fail a held payout, retry or raise a refund). A second operator, an approver or admin, approves or rejects it; nothing moves until then.',
    machine: 'approval',
    state: 'PENDING',
    since: 'it was proposed',
    list: 'admin.approvals.list',
  },
  RECONCILIATION_BREAKS: {
    title: 'Reconciliation breaks',
    description:
      "A day's reconciliation found a difference between the service's books and what a rail reports (the bank's statement, a chain, the processor's settlement report). An operator explains it with a note, or proposes a resolution that moves money (four eyes).",
    machine: 'recon-break',
    state: 'OPEN',
    since: 'a run found it',
    list: 'admin.recon.breaks',
  },
};

/**
 * One row per queue. Each part's `where` is the predicate of its partial index, word for word
 * (PostgreSQL uses a partial index only for a query that implies its predicate).
 */
export const exceptionCounts = statement(
  'exception_queue_counts',
  `select 'PAYOUTS_HELD_UNDERPAID' as queue, count(*)::int as count, min(held.since) as oldest_at
     from payouts p
     cross join lateral (
       select min(t.created_at) as since from payout_status_timeline t
        where t.payout_id = p.id and t.reason_code = 'SETTLEMENT_UNDERPAID') held
    where p.status = 'PENDING_PAYMENT' and (p.snapshot->'value'->>'PENDING_PAYMENT') = 'held'
   union all
   select 'INFLOWS_UNMATCHED', count(*)::int, min(arrived_at)
     from inflows where state = 'UNMATCHED' or (state = 'HELD' and payout_id is null)
   union all
   select 'REFUNDS_FAILED', count(*)::int, min(updated_at) from refunds where status = 'FAILED'
   union all
   select 'MONEY_HELD_NO_REFUND_DESTINATION', count(*)::int, min(updated_at)
     from payouts where status = 'FAILED' and is_refunded = false and received_amount > 0
   union all
   select 'WEBHOOK_DELIVERIES_DEAD', count(*)::int, min(d.updated_at)
     from webhook_deliveries d
    where d.status = 'DEAD'
      and not exists (
        select 1 from webhook_deliveries r
         where r.event_id = d.event_id and r.redelivery_of is not null and r.id <> d.id
           and r.created_at >= d.created_at)
   union all
   select 'APPROVALS_PENDING', count(*)::int, min(created_at) from approvals where status = 'PENDING'
   union all
   select 'RECONCILIATION_BREAKS', count(*)::int, min(created_at) from recon_breaks where status = 'OPEN'`,
);

export interface QueueCount {
  queue: ExceptionQueue;
  count: number;
  oldestAt: Date | null;
}

export async function exceptionQueues(sql: Sql): Promise<QueueCount[]> {
  // Timestamps come back as text from the pool (`src/db/sql.ts`).
  const rows = await sql.rows<{ queue: ExceptionQueue; count: number; oldest_at: string | Date | null }>(
    exceptionCounts,
  );
  const byQueue = new Map(rows.map((r) => [r.queue, r]));
  return EXCEPTION_QUEUES.map((queue) => {
    const row = byQueue.get(queue);
    return { queue, count: row?.count ?? 0, oldestAt: row?.oldest_at ? new Date(row.oldest_at) : null };
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
