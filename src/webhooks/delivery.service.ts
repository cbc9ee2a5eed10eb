import {
  type RecordParams,
  type WebhookDeliveryContext,
  type WebhookDeliveryEvent,
  webhookDeliveryMachine,
} from '#machines/webhook-delivery.machine.ts';
import { type Sql, statement, toDate } from '#src/db/sql.ts';
import type { Secrets } from '#src/deps.ts';
import { initialState, type Step, step } from '#src/engine/engine.ts';
import { newId } from '#src/lib/ids.ts';
import { openSigningSecret } from './secret.ts';

/**
 * The database side of webhook delivery: outbox events become delivery jobs, due jobs are
 * claimed and started, outcomes are recorded. Every status change of a job goes through
 * `webhookDeliveryMachine` (the engine's pure `step()`, a batch at a time), and every attempt it
 * settles leaves one delivery record in the same statement. Nothing here makes a network call;
 * `job.ts` sends between the claim and the record, outside any transaction.
 *
 * Each batch is a few set-based statements whatever its size: publishing is a probe and two
 * statements in one transaction; a claim round is three in one transaction, the first of which
 * also records the outcomes that finished before it; recording on its own (at the end of a pass)
 * is one, in a transaction of its own.
 */

/** Restricts work to some tenants: an operator's targeted pass, or a test among other tests' rows. */
export interface TenantScope {
  tenantIds?: readonly string[];
}

/** The scope as a statement parameter: null means every tenant. */
const scopeParam = (scope: TenantScope) => (scope.tenantIds ? [...scope.tenantIds] : null);

// How the claim rounds' transactions plan, and those that record outcomes at the end of a pass
// (with a statement of the rounds': a plan made in either is kept for both), set as each begins.
// Their statements find rows by key, in weekly partitions of which some are empty at times (the
// weeks ahead; any week after a TRUNCATE and VACUUM). A plan made while a partition was empty
// scans it sequentially, which costs nothing then; kept as a generic plan, it scanned the whole
// week once per row or batch after the week filled, until the next ANALYZE of it (with
// autovacuum off, never). Without sequential scans, the key lookups (the batch update's, each
// delivery record's foreign-key check) probe the key whatever the statistics say (the claim
// reads each partitioned table for a list of ids, see `selectDue`). Generic plans from the first
// execution: the foreign-key check queries the partitioned deliveries, and a custom plan for it
// was made afresh for every row. Local to the transaction: the connection, pooled or not, is left
// as it was. (Publishing keeps the default plans: its batch of a thousand events read more under
// these.)
const PLANS = { enable_seqscan: 'off', plan_cache_mode: 'force_generic_plan' } as const;

// The target is the payout's notification_url when set, else the tenant's webhook URL. The event's
// time is read as text: a JavaScript Date would drop its microseconds, and the deliveries' copy of
// it must equal the outbox's to find the event by its whole key.
const selectUnpublished = statement(
  'webhook_outbox_claim',
  `select o.id, o.tenant_id, o.payout_id, o.event_type, o.created_at::text as event_created_at,
          coalesce(p.notification_url, c.url) as target_url
     from outbox_events o
     left join payouts p on p.id = o.payout_id
     left join webhook_configs c on c.tenant_id = o.tenant_id
    where o.published_at is null and ($2::uuid[] is null or o.tenant_id = any($2::uuid[]))
    order by o.created_at, o.id
    limit $1
    for update of o skip locked`,
);

// Most looks at the outbox find nothing: one statement says so without a transaction around it.
// Asked as "the first waiting event" rather than "exists": in the order of the partial index of
// waiting events, no plan has to look at published ones (an `exists` over statistics taken while
// a burst was waiting scanned the whole table).
const anyUnpublished = statement(
  'webhook_outbox_any',
  `select true as found from outbox_events
    where published_at is null and ($1::uuid[] is null or tenant_id = any($1::uuid[]))
    order by created_at, id
    limit 1`,
);

const insertDeliveries = statement(
  'webhook_deliveries_publish',
  `with published as (
     update outbox_events set published_at = $1 where id = any($2::uuid[]) and tenant_id = any($15::uuid[])
   )
   insert into webhook_deliveries (id, tenant_id, event_id, payout_id, event_type, target_url, target_origin,
       status, snapshot, attempts, due_at, created_at, updated_at, event_created_at)
   select d.id, d.tenant_id, d.event_id, d.payout_id, d.event_type, d.target_url, d.target_origin,
          $3, $4::jsonb, $5, $6, $1, $1, d.event_created_at
     from unnest($7::uuid[], $8::uuid[], $9::uuid[], $10::uuid[], $11::text[], $12::text[], $13::text[],
                 $14::timestamptz[])
          as d(id, tenant_id, event_id, payout_id, event_type, target_url, target_origin, event_created_at)`,
);

/** A machine context as persisted in a snapshot. */
const contextOf = (snapshot: Record<string, unknown>) => snapshot.context as WebhookDeliveryContext;

/**
 * Turns up to `limit` unpublished outbox events into delivery jobs, oldest first, and marks them
 * published in the same transaction (claimed with SKIP LOCKED, so instances share the work).
 * The target is the payout's `notification_url` when set, else the tenant's webhook URL; with
 * neither the event is published without a job. Every job starts in the machine's initial
 * state, which depends only on `now`: one snapshot serves the whole batch.
 */
export async function publishEvents(
  sql: Sql,
  args: { now: Date; limit: number } & TenantScope,
): Promise<{ published: number; jobs: number }> {
  const [probe] = await sql.rows<{ found: boolean }>(anyUnpublished, [scopeParam(args)]);
  if (!probe?.found) return { published: 0, jobs: 0 };
  return sql.transaction(async (tx) => {
    const events = await tx.rows<{
      id: string;
      tenant_id: string;
      payout_id: string | null;
      event_type: string;
      event_created_at: string;
      target_url: string | null;
    }>(selectUnpublished, [args.limit, scopeParam(args)]);
    if (events.length === 0) return { published: 0, jobs: 0 };

    // The event's time goes with each job: the partition key (see delivery.entities.ts).
    const jobs: unknown[][] = [[], [], [], [], [], [], [], []];
    for (const event of events) {
      if (!event.target_url) continue;
      const row = [
        newId(),
        event.tenant_id,
        event.id,
        event.payout_id,
        event.event_type,
        event.target_url,
        new URL(event.target_url).origin,
        event.event_created_at,
      ];
      for (let i = 0; i < row.length; i++) jobs[i]!.push(row[i]);
    }
    const initial = initialState(webhookDeliveryMachine, { now: args.now });
    const context = contextOf(initial.snapshot);
    await tx.rows(insertDeliveries, [
      args.now,
      events.map((e) => e.id),
      initial.status,
      initial.snapshot,
      context.attempts,
      context.dueAt,
      ...jobs,
      // The batch's tenants, each once: a list per event would multiply the key's index probes.
      [...new Set(events.map((e) => e.tenant_id))],
    ]);
    return { published: events.length, jobs: jobs[0]!.length };
  });
}

/** A job as a claim or a record reads and writes it: enough to step its machine and log an attempt. */
interface DeliveryRow {
  id: string;
  tenant_id: string;
  /** The partition key, as text (microseconds kept): with the id, it finds the row in its week. */
  event_created_at: string;
  status: string;
  snapshot: Record<string, unknown>;
}

/** An attempt that was just started (its job is ATTEMPTING and committed): what to send. */
export interface StartedAttempt {
  deliveryId: string;
  tenantId: string;
  attempt: number;
  url: string;
  origin: string;
  eventType: string;
  body: string;
  /** The tenant's signing secret at claim time, or null when the delivery goes unsigned. */
  signing: { secret: string; version: number } | null;
  /** The job as the claim left it: its outcome is recorded only if the job is still exactly so. */
  job: DeliveryRow;
}

export interface ClaimLimits {
  now: Date;
  /** Attempts to start at most (the free slots of the caller). */
  slots: number;
  /** Attempts in flight to one origin at most, counting every worker's. */
  perTarget: number;
  /** How long an attempt may stay unanswered before another worker abandons it. */
  leaseMs: number;
  backoffBaseMs: number;
}

/** What a claim round did. */
export interface ClaimRound {
  started: StartedAttempt[];
  abandoned: number;
  /** Abandoned attempts took places that another round may fill at once. */
  more: boolean;
  /** Per outcome handed to the round, what {@link recordAttemptResults} would have said. */
  settled: (string | null)[];
}

// Claim rounds of all workers and instances take turns: the read of the attempts in flight per
// receiver (`webhook_origins_in_flight`) and the claim that raises it must not interleave with
// another round's, or two rounds could each see a receiver below its limit and together exceed it. A round is a few
// milliseconds; sending and recording never take this lock.
const TURN_LOCK = `pg_advisory_xact_lock(hashtext('webhook_deliveries_claim'))`;
const claimTurn = statement('webhook_claim_turn', `select ${TURN_LOCK}`);

// Due jobs that can start now, with what an attempt needs (the payload, the tenant's sealed
// secret). The first `$5` due jobs are read without locks and ranked per receiver; only those
// within the receiver's free places are locked (lapsed attempts whatever the load: abandoning one
// sends nothing), so a round locks what it starts and no more. A receiver's places taken are its
// count in `webhook_origins_in_flight` less its lapsed attempts in the window, which this round
// abandons. The window is taken in due time alone, which the index gives without a sort (a batch
// published together shares one due time, and sorting it by id too would sort the whole backlog
// every round); what it keeps is started in due time, then id (creation) order.
const selectDue = statement(
  'webhook_deliveries_due',
  `with candidates as (
     select w.id, w.event_id, w.status,
            (coalesce(f.attempting, 0)
              - count(*) filter (where w.status = 'ATTEMPTING') over (partition by w.target_origin))::int as busy,
            row_number() over (partition by w.target_origin, w.status = 'ATTEMPTING' order by w.due_at, w.id) as rank
       from (select id, event_id, status, target_origin, due_at from webhook_deliveries
              where due_at is not null and due_at <= $1
                and ($4::uuid[] is null or tenant_id = any($4::uuid[]))
              order by due_at limit $5) w
       left join webhook_origins_in_flight f on f.target_origin = w.target_origin
   ),
   kept as (
     select id, event_id, busy from candidates
      where status = 'ATTEMPTING' or rank <= $2 - busy
   ),
   -- The kept jobs' events, by the list of their ids (see below).
   events as materialized (
     select id, payload from outbox_events where id = any(array(select event_id from kept))
   )
   -- Every partitioned table is read for a list of ids and joined to nothing: a generic plan made
   -- while a week's partition was empty joined to it by reading the whole partition, or the whole
   -- list, for each row (in an empty partition a probe and a whole scan cost the same). What each
   -- row takes from the kept jobs and the events is looked up in those few rows in memory.
   select d.id, d.tenant_id, d.event_created_at::text as event_created_at, d.event_type, d.target_url,
          d.target_origin, d.status, d.snapshot, (select k.busy from kept k where k.id = d.id) as busy,
          (select v.payload from events v where v.id = d.event_id) as payload, c.secret_sealed, c.secret_version
     from webhook_deliveries d
     left join webhook_configs c on c.tenant_id = d.tenant_id
    where d.id = any(array(select id from kept))
    order by d.due_at, d.id
    limit $3
    for update of d skip locked`,
);

/**
 * Writes a batch of steps: each job's status, snapshot and the machine's due time and attempt
 * count, and the delivery records its `record` actions ask for. A job is written only while its
 * snapshot is still the one the step started from (`before`): a result that arrives after its
 * attempt was abandoned, or twice, writes nothing, and neither does its record. Returns the ids
 * of the jobs written. `withTurn` also takes the claim turn (see `claimTurn`), so that a claim
 * round that starts by recording outcomes spends no round trip on the lock.
 */
function applyStepsText(withTurn: boolean): string {
  return `with changed as (
     update webhook_deliveries d
        set status = u.status, snapshot = u.snapshot, attempts = u.attempts, due_at = u.due_at, updated_at = $1
       from unnest($2::uuid[], $3::uuid[], $4::timestamptz[], $5::jsonb[], $6::text[], $7::jsonb[], $8::int[],
                   $9::timestamptz[], $10::text[])
            as u(id, tenant_id, event_created_at, before, status, snapshot, attempts, due_at, was)
      -- The batch's ids are looked up in each partition's key, never scanned (a join on the id
      -- alone hashed every partition, batch after batch); the rows found join on the whole key.
      -- One list only: a second on another column of the key would probe every pair of values.
      where d.id = any($2::uuid[])
        and d.id = u.id and d.tenant_id = u.tenant_id and d.event_created_at = u.event_created_at
        and d.snapshot = u.before
     returning d.id, d.tenant_id, d.event_id, d.payout_id, d.event_type, d.target_url, d.event_created_at,
               d.target_origin, d.status, u.was
   ),
   -- Each receiver's deliveries in flight, moved by the ATTEMPTING ones this statement started or
   -- settled; rows in receiver order, so that two statements lock them in the same order.
   counted as (
     insert into webhook_origins_in_flight as f (target_origin, attempting)
     select target_origin, sum((status = 'ATTEMPTING')::int - (was = 'ATTEMPTING')::int)::int
       from changed group by target_origin
     having sum((status = 'ATTEMPTING')::int - (was = 'ATTEMPTING')::int) <> 0
      order by target_origin
     on conflict (target_origin) do update set attempting = f.attempting + excluded.attempting
   ),
   recorded as (
     insert into webhook_delivery_attempts (id, tenant_id, delivery_id, event_id, payout_id, event_type,
         attempt_number, target_url, status, response_status, failure_reason, secret_version, duration_ms, created_at,
         event_created_at)
     select r.id, c.tenant_id, c.id, c.event_id, c.payout_id, c.event_type, r.attempt_number, c.target_url,
            r.status, r.response_status, r.failure_reason, r.secret_version, r.duration_ms, $1, c.event_created_at
       from unnest($11::uuid[], $12::uuid[], $13::int[], $14::text[], $15::int[], $16::text[], $17::int[], $18::int[])
            as r(id, delivery_id, attempt_number, status, response_status, failure_reason, secret_version, duration_ms)
       join changed c on c.id = r.delivery_id
   )
   ${
     withTurn
       ? // One row whatever was written: the lock is taken even when nothing changed.
         `select (select coalesce(array_agg(id), '{}') from changed) as ids, ${TURN_LOCK} is null as turn`
       : 'select array_agg(id) as ids from changed'
   }`;
}

const applySteps = statement('webhook_deliveries_apply', applyStepsText(false));
const applyStepsWithTurn = statement('webhook_deliveries_apply_turn', applyStepsText(true));

/** One event for one job of a batch, with what its delivery record carries besides the machine's. */
interface DeliveryStep {
  job: DeliveryRow;
  event: WebhookDeliveryEvent;
  secretVersion?: number | null;
  durationMs?: number | null;
}

/** A step that was taken, with the job as it leaves it. */
interface TakenStep {
  item: DeliveryStep;
  done: Step;
}

/** A uuid[] as the pool returns it (an array) or as the embedded database's path does (`{a,b}`). */
function idsOf(ids: string[] | string | null): string[] {
  if (ids === null) return [];
  if (Array.isArray(ids)) return ids;
  return ids === '{}' ? [] : ids.slice(1, -1).split(',');
}

/**
 * Applies each event in memory and writes the taken ones in one statement (see `applySteps`),
 * all at the same `now`. Rows are sent in id order, so that two batches that share rows lock
 * them in the same order. Returns the taken steps that were written.
 */
async function writeSteps(
  sql: Sql,
  items: readonly DeliveryStep[],
  now: Date,
  options: { withTurn?: boolean } = {},
): Promise<TakenStep[]> {
  const taken: TakenStep[] = [];
  for (const item of items) {
    const done = step(webhookDeliveryMachine, item.job, item.event);
    if (done.taken) taken.push({ item, done });
  }
  if (taken.length === 0) {
    if (options.withTurn) await sql.rows(claimTurn);
    return [];
  }
  taken.sort((a, b) => (a.item.job.id < b.item.job.id ? -1 : a.item.job.id > b.item.job.id ? 1 : 0));

  const jobs: unknown[][] = [[], [], [], [], [], [], [], [], []];
  const records: unknown[][] = [[], [], [], [], [], [], [], []];
  for (const { item, done } of taken) {
    const context = contextOf(done.snapshot);
    const job = [
      item.job.id,
      item.job.tenant_id,
      item.job.event_created_at,
      item.job.snapshot,
      done.to,
      done.snapshot,
      context.attempts,
      context.dueAt,
      // The status the job is written from: the update applies only to this very snapshot.
      item.job.status,
    ];
    for (let i = 0; i < job.length; i++) jobs[i]!.push(job[i]);
    for (const action of done.actions) {
      if (action.type !== 'record') throw new Error(`webhook delivery machine asked for ${action.type}`);
      const params = action.params as RecordParams;
      const record = [
        newId(),
        item.job.id,
        params.attemptNumber,
        params.status,
        params.responseStatus,
        params.failureReason?.slice(0, 500) ?? null,
        item.secretVersion ?? null,
        item.durationMs ?? null,
      ];
      for (let i = 0; i < record.length; i++) records[i]!.push(record[i]);
    }
  }
  const [row] = await sql.rows<{ ids: string[] | string | null }>(
    options.withTurn ? applyStepsWithTurn : applySteps,
    [now, ...jobs, ...records],
  );
  const written = new Set(idsOf(row?.ids ?? null));
  return taken.filter((t) => written.has(t.item.job.id));
}

/**
 * One claim round, in one transaction: locks due jobs (SKIP LOCKED) of receivers below their
 * concurrency limit, starts an attempt on up to `slots` of them, and abandons attempts whose
 * lease ran out. No job of a receiver at its limit is locked or returned, so a slow receiver's
 * backlog never takes the places of other tenants' deliveries. `more` says abandoned
 * attempts took places that another round may fill at once; otherwise the next recorded batch
 * (or poll) brings the next round (another at once would, with every receiver that has due jobs
 * at its limit, walk their whole backlog to find nothing). The signing secret is the one in force
 * at the claim, so a rotation applies to every later attempt, retries of older events included.
 */
export async function claimDueDeliveries(
  sql: Sql,
  deps: { secrets: Pick<Secrets, 'encryptionKey'> },
  limits: ClaimLimits & TenantScope & { finished?: readonly FinishedAttempt[] },
): Promise<ClaimRound> {
  const { now } = limits;
  const finished = limits.finished ?? [];
  if (limits.tenantIds?.length === 0 && finished.length === 0) {
    return { started: [], abandoned: 0, more: false, settled: [] };
  }
  // Enough rows to look past a receiver at its limit without reading the whole backlog.
  const window = Math.max(limits.slots, 1) * 4;
  return sql.transaction(async (tx) => {
    // The outcomes first, in the statement that takes the turn: the places they free count.
    const settled = await recordIn(tx, finished, { backoffBaseMs: limits.backoffBaseMs, now }, true);
    if (limits.slots <= 0) return { started: [], abandoned: 0, more: false, settled };
    const due = await tx.rows<{
      id: string;
      tenant_id: string;
      event_created_at: string;
      event_type: string;
      target_url: string;
      target_origin: string;
      status: string;
      snapshot: Record<string, unknown>;
      busy: number;
      payload: string;
      secret_sealed: string | null;
      secret_version: number | null;
    }>(selectDue, [now, limits.perTarget, limits.slots, scopeParam(limits), window]);
    if (due.length === 0) return { started: [], abandoned: 0, more: false, settled };

    const inFlight = new Map<string, number>();
    const steps: DeliveryStep[] = [];
    const chosen = new Map<string, (typeof due)[number]>();
    let starting = 0;
    for (const row of due) {
      if (row.status === 'ATTEMPTING') {
        steps.push({ job: row, event: { type: 'ABANDON', backoffBaseMs: limits.backoffBaseMs, now } });
        continue;
      }
      const busy = inFlight.get(row.target_origin) ?? row.busy;
      // The statement already kept to both limits; a receiver counted twice would show here.
      if (starting >= limits.slots || busy >= limits.perTarget) continue;
      inFlight.set(row.target_origin, busy + 1);
      starting++;
      chosen.set(row.id, row);
      steps.push({ job: row, event: { type: 'ATTEMPT', leaseMs: limits.leaseMs, now } });
    }
    const written = await writeSteps(tx, steps, now);

    const started: StartedAttempt[] = [];
    let abandoned = 0;
    for (const { item, done } of written) {
      const row = chosen.get(item.job.id);
      if (!row) {
        abandoned++;
        continue;
      }
      let signing: StartedAttempt['signing'] = null;
      if (row.secret_sealed !== null) {
        signing = {
          secret: openedSecret(deps.secrets.encryptionKey, row.secret_sealed),
          version: row.secret_version ?? 0,
        };
      }
      started.push({
        deliveryId: row.id,
        tenantId: row.tenant_id,
        attempt: contextOf(done.snapshot).attempts,
        url: row.target_url,
        origin: row.target_origin,
        eventType: row.event_type,
        body: row.payload,
        signing,
        job: {
          id: row.id,
          tenant_id: row.tenant_id,
          event_created_at: row.event_created_at,
          status: done.to,
          snapshot: done.snapshot,
        },
      });
    }
    // Started in due order, as claimed.
    const order = new Map(due.map((d, i) => [d.id, i]));
    started.sort((a, b) => order.get(a.deliveryId)! - order.get(b.deliveryId)!);
    return {
      started,
      abandoned,
      more: due.length === limits.slots && started.length < limits.slots,
      settled,
    };
  }, PLANS);
}

/**
 * Signing secrets opened, per encryption key and sealed value: a tenant's secret is decrypted once
 * rather than once per claim round. A rotated secret is a new sealed value (a fresh IV), so it is
 * never mistaken for the old one; bounded by starting over, like the DNS cache.
 */
const openedSecrets = new WeakMap<Buffer, Map<string, string>>();

function openedSecret(key: Buffer, sealed: string): string {
  let opened = openedSecrets.get(key);
  if (!opened) {
    opened = new Map();
    openedSecrets.set(key, opened);
  }
  let secret = opened.get(sealed);
  if (secret === undefined) {
    secret = openSigningSecret(key, sealed);
    if (opened.size >= 10_000) opened.clear();
    opened.set(sealed, secret);
  }
  return secret;
}

const selectNextDue = statement(
  'webhook_deliveries_next_due',
  `select min(due_at) as next from webhook_deliveries
    where due_at > $1 and ($2::uuid[] is null or tenant_id = any($2::uuid[]))`,
);

/** When the next job that is not due yet becomes due (a retry, or a lease running out), or null. */
export async function nextDueAt(sql: Sql, args: { now: Date } & TenantScope): Promise<Date | null> {
  const [row] = await sql.rows<{ next: string | Date | null }>(selectNextDue, [args.now, scopeParam(args)]);
  return row?.next ? toDate(row.next) : null;
}

/** What one attempt came to, as the sender reports it. */
export interface AttemptResult {
  ok: boolean;
  responseStatus: number | null;
  failureReason: string | null;
  durationMs: number | null;
}

/** A finished attempt waiting to be recorded. */
export interface FinishedAttempt {
  attempt: StartedAttempt;
  result: AttemptResult;
}

/**
 * Records the outcomes of a batch of attempts in one statement, in a transaction of its own that
 * plans as the claim rounds do (see `PLANS`): the machine settles each (SUCCEEDED,
 * RETRY_SCHEDULED with the next due time, or DEAD) and its `record` action becomes the delivery
 * record. A result for an attempt that is no longer the current one (it was abandoned meanwhile)
 * is ignored and writes nothing. Returns, per attempt in the order given, the status its job was
 * left in, or null when nothing was written.
 */
export async function recordAttemptResults(
  sql: Sql,
  finished: readonly FinishedAttempt[],
  args: { backoffBaseMs: number; now: Date },
): Promise<(string | null)[]> {
  return sql.transaction((tx) => recordIn(tx, finished, args, false), PLANS);
}

/** {@link recordAttemptResults}, optionally taking the claim turn in the same statement. */
async function recordIn(
  sql: Sql,
  finished: readonly FinishedAttempt[],
  args: { backoffBaseMs: number; now: Date },
  withTurn: boolean,
): Promise<(string | null)[]> {
  const { now } = args;
  const written = await writeSteps(
    sql,
    finished.map(({ attempt, result }) => ({
      job: attempt.job,
      event: result.ok
        ? { type: 'SUCCEEDED', attempt: attempt.attempt, responseStatus: result.responseStatus ?? 0, now }
        : {
            type: 'FAILED',
            attempt: attempt.attempt,
            responseStatus: result.responseStatus,
            failureReason: result.failureReason ?? 'failed',
            backoffBaseMs: args.backoffBaseMs,
            now,
          },
      secretVersion: attempt.signing?.version ?? null,
      durationMs: result.durationMs,
    })),
    now,
    { withTurn },
  );
  const settled = new Map(written.map((t) => [t.item.job.id, t.done.to]));
  return finished.map((f) => settled.get(f.attempt.deliveryId) ?? null);
}
