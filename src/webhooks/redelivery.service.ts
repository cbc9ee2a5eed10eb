import { webhookDeliveryMachine } from '#machines/webhook-delivery.machine.ts';
import { type Sql, statement, toDate } from '#src/db/sql.ts';
import { initialState } from '#src/engine/engine.ts';
import { AppError } from '#src/http/errors.ts';
import { newId } from '#src/lib/ids.ts';

/**
 * Redelivery of DEAD webhook jobs (issue 18, "recovering dead notifications"): a redelivery is a
 * new job of the same event (the same payload, so the same `event_id`; signed afresh at each
 * attempt) in the machine's initial state, with its own five attempts and its own delivery
 * records. The DEAD job stays DEAD; the new one names it in `redelivery_of`.
 *
 * It goes where the event would go if it were published now: the payout's notification_url when
 * set, else the tenant's webhook URL as it is now (a merchant whose endpoint was down has often
 * fixed or moved it since).
 *
 * An event is redelivered while it has no redelivery that is open or succeeded: asking again, at
 * once or later, gets that one back (`created: false`) and sends nothing, whether by one delivery's
 * id or by "recover since" (which leaves such events out). Concurrent requests for an event take
 * its lock in turn (`lockEvents`), so exactly one of them creates the redelivery; a unique index
 * on open redeliveries backs this up.
 */

/** A redelivery job, as operators see it. */
export interface Redelivery {
  deliveryId: string;
  redeliveryOf: string;
  tenantId: string;
  eventId: string;
  eventType: string;
  payoutId: string | null;
  targetUrl: string;
  status: string;
  createdAt: Date;
  /** False when an open redelivery of the event already existed: that one is returned. */
  created: boolean;
}

const OPEN = `('PENDING', 'ATTEMPTING', 'RETRY_SCHEDULED')`;

/** The DEAD job, and where its event would go now (its event's time as text, microseconds kept). */
const CANDIDATE_COLUMNS = `d.id, d.tenant_id, d.event_id, d.payout_id, d.event_type, d.status,
       d.event_created_at::text as event_created_at,
       coalesce(p.notification_url, c.url) as target_url`;

const selectOne = statement(
  'webhook_redelivery_one',
  `select ${CANDIDATE_COLUMNS}
     from webhook_deliveries d
     left join payouts p on p.id = d.payout_id
     left join webhook_configs c on c.tenant_id = d.tenant_id
    where d.id = $1`,
);

// One tenant's DEAD jobs created in [since, until), oldest first, one per event (its latest DEAD
// job), leaving out events with a redelivery that is open or succeeded (a second "recover since"
// creates nothing twice and sends nothing the merchant acknowledged) and events with nowhere to
// go. Only redeliveries need looking at: an event's published job is DEAD once any job of it is.
const selectRange = statement(
  'webhook_redelivery_range',
  `select * from (
     select distinct on (d.event_id) ${CANDIDATE_COLUMNS}, d.created_at
       from webhook_deliveries d
       left join payouts p on p.id = d.payout_id
       left join webhook_configs c on c.tenant_id = d.tenant_id
      where d.tenant_id = $1 and d.status = 'DEAD' and d.created_at >= $2 and d.created_at < $3
        and coalesce(p.notification_url, c.url) is not null
        and not exists (
          select 1 from webhook_deliveries o
           where o.event_id = d.event_id and o.redelivery_of is not null and o.status <> 'DEAD'
        )
      order by d.event_id, d.created_at desc, d.id desc
   ) x
   order by x.created_at, x.id
   limit $4`,
);

// A conflict on the open-redelivery index means an open one exists (or was committed meanwhile
// by a concurrent request, which this insert waited for): nothing is inserted for that event.
const insertRedeliveries = statement(
  'webhook_redelivery_insert',
  `insert into webhook_deliveries (id, tenant_id, event_id, payout_id, event_type, target_url, target_origin,
       status, snapshot, attempts, due_at, redelivery_of, created_at, updated_at, event_created_at)
   select r.id, r.tenant_id, r.event_id, r.payout_id, r.event_type, r.target_url, r.target_origin,
          $2, $3::jsonb, $4, $5, r.redelivery_of, $1, $1, r.event_created_at
     from unnest($6::uuid[], $7::uuid[], $8::uuid[], $9::uuid[], $10::text[], $11::text[], $12::text[], $13::uuid[],
                 $14::timestamptz[])
          as r(id, tenant_id, event_id, payout_id, event_type, target_url, target_origin, redelivery_of, event_created_at)
   on conflict (event_id, tenant_id, event_created_at) where redelivery_of is not null and status in ${OPEN} do nothing
   returning id`,
);

// Open or succeeded first: the redelivery that stands for the event.
const selectRedeliveries = statement(
  'webhook_redelivery_of_events',
  `select distinct on (event_id) id, redelivery_of, tenant_id, event_id, event_type, payout_id, target_url,
          status, created_at
     from webhook_deliveries
    where event_id = any($1::uuid[]) and redelivery_of is not null
    order by event_id, (status <> 'DEAD') desc, created_at desc, id desc`,
);

// One transaction at a time redelivers an event: the lock is held until it commits, so the next
// one sees its redelivery (and whether it succeeded meanwhile). Taken in event order: no deadlock.
const lockEvents = statement(
  'webhook_redelivery_lock',
  `select count(pg_advisory_xact_lock(hashtextextended('webhook_redelivery/' || e::text, 0)))::int as locked
     from (select distinct e from unnest($1::uuid[]) e order by e) x`,
);

// Events that already have a redelivery that is open or succeeded: nothing is sent for them.
const selectStanding = statement(
  'webhook_redelivery_standing',
  `select distinct event_id from webhook_deliveries
    where event_id = any($1::uuid[]) and redelivery_of is not null and status <> 'DEAD'`,
);

interface CandidateRow {
  id: string;
  tenant_id: string;
  event_id: string;
  payout_id: string | null;
  event_type: string;
  status: string;
  event_created_at: string;
  target_url: string | null;
}

/**
 * Redelivers one DEAD job, in the caller's transaction. Refused when the job does not exist, is
 * not DEAD, or its event has nowhere to go.
 */
export async function redeliverOne(sql: Sql, args: { deliveryId: string; now: Date }): Promise<Redelivery> {
  const [row] = await sql.rows<CandidateRow>(selectOne, [args.deliveryId]);
  if (!row) {
    throw new AppError('DELIVERY_NOT_FOUND', {
      details: [{ field: 'delivery_id', issue: `no webhook delivery ${args.deliveryId}` }],
    });
  }
  if (row.status !== 'DEAD') {
    throw new AppError('DELIVERY_NOT_DEAD', {
      message: `Delivery ${row.id} is ${row.status}: only a DEAD delivery can be sent again.`,
      details: [{ field: 'delivery_id', issue: `is ${row.status}, not DEAD` }],
    });
  }
  if (!row.target_url) {
    throw new AppError('WEBHOOK_URL_NOT_SET', {
      message: `Tenant ${row.tenant_id} has no webhook URL (and the payout no notification_url): nowhere to send the event.`,
      details: [{ field: 'delivery_id', issue: 'its event has no URL to go to' }],
    });
  }
  const [out] = await redeliver(sql, [row], args.now);
  return out!;
}

/**
 * Redelivers a tenant's DEAD jobs created in [since, until), oldest first, at most `limit` of
 * them (see `selectRange` for which), in the caller's transaction. `hasMore`: more remain in the
 * range; running it again continues where this one stopped.
 */
export async function redeliverRange(
  sql: Sql,
  args: { tenantId: string; since: Date; until: Date; limit: number; now: Date },
): Promise<{ redelivered: Redelivery[]; hasMore: boolean }> {
  const rows = await sql.rows<CandidateRow>(selectRange, [
    args.tenantId,
    args.since,
    args.until,
    args.limit + 1,
  ]);
  const hasMore = rows.length > args.limit;
  return { redelivered: await redeliver(sql, rows.slice(0, args.limit), args.now), hasMore };
}

async function redeliver(sql: Sql, rows: readonly CandidateRow[], now: Date): Promise<Redelivery[]> {
  if (rows.length === 0) return [];
  const events = rows.map((r) => r.event_id);
  await sql.rows(lockEvents, [events]);
  const standing = new Set(
    (await sql.rows<{ event_id: string }>(selectStanding, [events])).map((r) => r.event_id),
  );
  const initial = initialState(webhookDeliveryMachine, { now });
  const context = initial.snapshot.context as { attempts: number; dueAt: string | null };
  const columns: unknown[][] = [[], [], [], [], [], [], [], [], []];
  for (const r of rows) {
    if (standing.has(r.event_id)) continue;
    const url = r.target_url!;
    const values = [
      newId(),
      r.tenant_id,
      r.event_id,
      r.payout_id,
      r.event_type,
      url,
      new URL(url).origin,
      r.id,
      // The event's time, as the DEAD job has it: the redelivery goes into the same partition.
      r.event_created_at,
    ];
    for (let i = 0; i < values.length; i++) columns[i]!.push(values[i]);
  }
  const inserted =
    columns[0]!.length === 0
      ? []
      : await sql.rows<{ id: string }>(insertRedeliveries, [
          now,
          initial.status,
          initial.snapshot,
          context.attempts,
          context.dueAt,
          ...columns,
        ]);
  const created = new Set(inserted.map((r) => r.id));
  const jobs = await sql.rows<{
    id: string;
    redelivery_of: string;
    tenant_id: string;
    event_id: string;
    event_type: string;
    payout_id: string | null;
    target_url: string;
    status: string;
    created_at: string | Date;
  }>(selectRedeliveries, [rows.map((r) => r.event_id)]);
  const byEvent = new Map(jobs.map((j) => [j.event_id, j]));
  return rows.flatMap((r) => {
    const job = byEvent.get(r.event_id);
    if (!job) return [];
    return [
      {
        deliveryId: job.id,
        redeliveryOf: job.redelivery_of,
        tenantId: job.tenant_id,
        eventId: job.event_id,
        eventType: job.event_type,
        payoutId: job.payout_id,
        targetUrl: job.target_url,
        status: job.status,
        createdAt: toDate(job.created_at),
        created: created.has(job.id),
      },
    ];
  });
}
