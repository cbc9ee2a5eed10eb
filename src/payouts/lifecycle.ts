import type { EntityManager } from '@mikro-orm/postgresql';
import { type PayoutEvent, payoutMachine, type TriggeredBy } from '#machines/payout.machine.ts';
import { emSql, type Sql, statement, TextArray } from '#src/db/sql.ts';
import { applyEvent, initialState, type MachineAction, step, type Transition } from '#src/engine/engine.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { AppError } from '#src/http/errors.ts';
import { type IdempotentWrite, KeyTaken } from '#src/idempotency/idempotency.ts';
import type { TaskKind } from '#src/jobs/entities.ts';
import { scheduleTask, scheduleTasks } from '#src/jobs/tasks.ts';
import { type LedgerTransaction, post } from '#src/ledger/ledger.ts';
import { newId } from '#src/lib/ids.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { tellTransition } from '#src/observability/transitions.ts';
import type { PayeeCheckState } from '#src/payees/check.ts';
import { failsHoldingMoney, handHeldToRefund } from '#src/settlement/payout-failure.ts';
import { Payout, type PayoutStatus, StatusLog } from './entities.ts';
import type { PayoutMetadata } from './metadata.ts';
import { payoutLedger } from './money.ts';
import {
  type InstructionView,
  type LockedPayout,
  type PayoutResource,
  type PayoutView,
  readPayouts,
  toPayoutResource,
} from './resource.ts';

/**
 * Where a payout changes status: every change goes through `payoutMachine` via the engine, and
 * in the same transaction this module appends the timeline row, writes the outbox events and
 * makes the follow-up work due; a payout that fails while waiting for money hands the inflows
 * held against it to its refund (`src/settlement/payout-failure.ts`). Nothing else writes
 * `payouts.status`.
 */

export type { TriggeredBy } from '#machines/payout.machine.ts';

/** Extra facts a caller wants on the timeline row of the transition it causes. */
export interface TransitionNote {
  reasonDetail?: Record<string, unknown> | null;
  metadata?: Record<string, unknown> | null;
}

interface Effects {
  payout: Payout;
  /** The event's type, as the ledger names the transition. */
  event: string;
  from: PayoutStatus | null;
  to: PayoutStatus;
  triggeredBy: TriggeredBy;
  actions: MachineAction[];
  now: Date;
  note?: TransitionNote;
}

/** What the actions of one payout transition ask for, as data. */
export interface PayoutEffects {
  /** The reason code of the transition's timeline row; null when the transition writes none. */
  timeline: string | null;
  /** Webhook events, in order. */
  events: string[];
  tasks: TaskKind[];
  /** Whether the transition moves money (its `post` actions, turned into entries by `payoutLedger`). */
  posts: boolean;
}

/** Reads a payout transition's actions (the machine's `timeline`, `emit`, `schedule` and `post`). */
export function effectsOf(actions: readonly MachineAction[]): PayoutEffects {
  const effects: PayoutEffects = { timeline: null, events: [], tasks: [], posts: false };
  for (const action of actions) {
    const params = (action.params ?? {}) as Record<string, unknown>;
    switch (action.type) {
      case 'timeline':
        effects.timeline = String(params.reasonCode);
        break;
      case 'emit':
        effects.events.push(String(params.event));
        break;
      case 'schedule':
        effects.tasks.push(params.task as TaskKind);
        break;
      case 'post':
        effects.posts = true;
        break;
      default:
        throw new Error(`payout machine asked for unknown action ${action.type}`);
    }
  }
  return effects;
}

/** Writes what a payout transition's actions ask for: timeline row, outbox events, tasks. */
async function recordEffects(em: EntityManager, effects: Effects): Promise<void> {
  const { payout, now } = effects;
  const wanted = effectsOf(effects.actions);
  if (effects.from !== effects.to) {
    tellTransition(em, {
      payoutId: payout.id,
      tenantId: payout.tenant.id,
      from: effects.from,
      to: effects.to,
      reason: wanted.timeline,
      triggeredBy: effects.triggeredBy,
    });
  }
  if (wanted.timeline !== null) {
    em.create(StatusLog, {
      tenant: payout.tenant,
      payout,
      fromStatus: effects.from,
      toStatus: effects.to,
      triggeredBy: effects.triggeredBy,
      reasonCode: wanted.timeline,
      reasonDetail: effects.note?.reasonDetail ?? null,
      metadata: effects.note?.metadata ?? null,
      createdAt: now,
    });
  }
  for (const kind of wanted.tasks) {
    await scheduleTask(em, { kind, subjectId: payout.id, tenantId: payout.tenant.id, dueAt: now, now });
  }
  if (wanted.posts) {
    await post(
      emSql(em),
      payoutLedger(
        {
          id: payout.id,
          tenantId: payout.tenant.id,
          settlementCurrency: payout.settlementCurrency,
          settlementAmount: payout.settlementAmount,
          platformFee: payout.platformFeeAmount,
          networkFee: payout.networkFeeAmount,
          received: payout.receivedAmount,
        },
        { actions: effects.actions, from: effects.from ?? '(new)', to: effects.to },
        effects.event,
        now,
      ),
    );
  }
  if (failsHoldingMoney(effects.from, effects.to))
    await handHeldToRefund(emSql(em), [{ id: payout.id, tenantId: payout.tenant.id }], now);
  if (wanted.events.length > 0) await emitPayoutEvents(em, payout, wanted.events, now);
}

/**
 * The body of a payout event: `{ event_id, event_type, created_at, status, data }`, where `data`
 * is the payout resource (already rendered as `resourceJson`) with `object: "payout"`.
 */
export function payoutEventPayload(args: {
  eventId: string;
  eventType: string;
  createdAt: Date;
  status: string;
  resourceJson: string;
}): string {
  const head = JSON.stringify({
    event_id: args.eventId,
    event_type: args.eventType,
    created_at: args.createdAt.toISOString(),
    status: args.status,
  });
  return `${head.slice(0, -1)},"data":{"object":"payout",${args.resourceJson.slice(1)}}`;
}

/**
 * Writes one outbox row per event type, each carrying the payout as it is now (after this
 * transaction's changes), in the payload merchants receive.
 */
export async function emitPayoutEvents(
  em: EntityManager,
  payout: Payout,
  eventTypes: string[],
  now: Date,
): Promise<void> {
  await em.flush();
  const [view] = await readPayouts(emSql(em), [payout.id], [payout.tenant.id]);
  if (!view) throw new Error(`payout ${payout.id} vanished inside its own transaction`);
  const resourceJson = JSON.stringify(toPayoutResource(view));
  for (const eventType of eventTypes) {
    const eventId = newId();
    em.create(OutboxEvent, {
      id: eventId,
      tenant: payout.tenant,
      payoutId: payout.id,
      eventType,
      payload: payoutEventPayload({
        eventId,
        eventType,
        createdAt: now,
        status: payout.status,
        resourceJson,
      }),
      createdAt: now,
    });
  }
}

/** The start of every payout's life, from the machine (pure and input-free, so computed once). */
const START = initialState(payoutMachine, {});
const START_EFFECTS = effectsOf(START.actions);

/** A new payout's own columns; the machine decides its status, and the amounts are zero until instruction generation. */
export interface NewPayout {
  id: string;
  tenantId: string;
  merchantReference: string | null;
  /** The merchant's key-value pairs; `{}` when none. */
  metadata: PayoutMetadata;
  notificationUrl: string | null;
  destinationType: PayoutView['destination_type'];
  destinationCountry: string;
  destinationCurrency: string;
  destinationAmount: Decimal;
  destinationAccountUnique: string;
  destinationProviderName: string;
  destinationProviderCode: string | null;
  destinationAccountName: string | null;
  settlementCurrency: 'USDT' | 'NGN';
  settlementNetwork: 'TRON' | 'BSC' | null;
  quoteId: string | null;
  /** The payee name check as creation left it; null where none applies. */
  payee: PayeeCheckState | null;
}

/**
 * One statement writes a new payout: the refund-destination check, the payout row, its first
 * timeline row, its outbox events and its tasks, and (with a key) the idempotency record with the
 * response. Every insert hangs off the rows before it, so the statement writes all or nothing: no
 * destination, or a key that another request took, writes nothing. A single statement is one
 * round trip and its own transaction; inside a caller's transaction it runs without the key.
 */
function insertPayoutText(withKey: boolean): string {
  return `
  with destination as (
    select exists (select 1 from refund_destinations
                    where tenant_id = $2 and currency = $14 and is_active) as ok
  ),${
    withKey
      ? `
  stored as (
    insert into idempotency_keys (id, tenant_id, key, fingerprint, response_status, response_body, created_at, updated_at)
    select $32, $2, $33, $34, $35, $36, $18, $18 from destination where ok
    on conflict (tenant_id, key) do nothing
    returning id
  ),`
      : ''
  }
  payout as (
    insert into payouts (id, tenant_id, status, snapshot, merchant_reference, notification_url, destination_type,
        destination_country, destination_currency, destination_amount, destination_account_unique,
        destination_provider_name, destination_provider_code, destination_account_name, settlement_currency,
        settlement_network, settlement_amount, exchange_rate, mid_market_rate, platform_fee_amount,
        network_fee_amount, total_fee_amount, quote_id, received_amount, is_refunded, refund_reference,
        instruction_attempts, metadata, payee_check, payee_institution_name, payee_checked_at, created_at, updated_at)
    select $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $16, $14, $15, 0, 0, 0, 0, 0, 0, $17, 0, false, null,
           0, $28::jsonb, $29, $30, $31, $18, $18
      from ${withKey ? 'stored' : 'destination where ok'}
    returning id
  ),
  timeline as (
    insert into payout_status_timeline (id, tenant_id, payout_id, from_status, to_status, triggered_by, reason_code,
        reason_detail, metadata, created_at)
    select $19, $2, id, null, $3, 'SYSTEM', $20, $21, $22, $18 from payout
  ),
  events as (
    insert into outbox_events (id, tenant_id, payout_id, event_type, payload, published_at, created_at)
    select e.id, $2, payout.id, e.type, e.payload, null, $18
      from payout, unnest($23::uuid[], $24::text[], $25::text[]) as e(id, type, payload)
  ),
  tasks as (
    insert into tasks (id, kind, subject_id, tenant_id, due_at, attempts, generation, created_at, updated_at)
    select t.id, t.kind, payout.id, $2, $18, 0, 0, $18, $18
      from payout, unnest($26::uuid[], $27::text[]) as t(id, kind)
  )
  select (select ok from destination) as has_destination, exists (select 1 from payout) as created`;
}

const insertPayoutWithKey = statement('payout_insert_with_key', insertPayoutText(true));
const insertPayout = statement('payout_insert', insertPayoutText(false));

/**
 * Persists a new payout in the machine's first state (CREATED) with its timeline row,
 * payout.created and its instruction task, in one statement. With `idempotent`, the statement
 * also stores the response under the key and is its own transaction; without, it runs in the
 * caller's. Throws REFUND_DESTINATION_REQUIRED when the tenant has no active destination for the
 * settlement currency, and KeyTaken when another request stored the key first. Returns the
 * resource and its JSON, built from what was written rather than read back.
 */
export async function insertNewPayout(
  sql: Sql,
  payout: NewPayout,
  args: { now: Date; note?: TransitionNote; idempotent?: IdempotentWrite | null },
): Promise<{ resource: PayoutResource; json: string }> {
  const { now } = args;
  const status = START.status as PayoutStatus;
  const reasonCode = START_EFFECTS.timeline;
  if (reasonCode === null) throw new Error('the payout machine starts without a timeline row');
  const view: PayoutView = {
    id: payout.id,
    tenant_id: payout.tenantId,
    status,
    merchant_reference: payout.merchantReference,
    metadata: payout.metadata,
    notification_url: payout.notificationUrl,
    destination_type: payout.destinationType,
    destination_country: payout.destinationCountry,
    destination_currency: payout.destinationCurrency,
    destination_amount: payout.destinationAmount,
    destination_account_unique: payout.destinationAccountUnique,
    destination_provider_name: payout.destinationProviderName,
    destination_provider_code: payout.destinationProviderCode,
    destination_account_name: payout.destinationAccountName,
    payee_check: payout.payee?.check ?? null,
    payee_institution_name: payout.payee?.institutionName ?? null,
    payee_checked_at: payout.payee?.checkedAt ?? null,
    settlement_currency: payout.settlementCurrency,
    settlement_amount: 0,
    exchange_rate: 0,
    platform_fee_amount: 0,
    network_fee_amount: 0,
    total_fee_amount: 0,
    is_refunded: false,
    refund_reference: null,
    created_at: now,
    updated_at: now,
    instruction: null,
    timeline: [
      {
        from_status: null,
        to_status: status,
        triggered_by: 'SYSTEM',
        reason_code: reasonCode,
        reason_detail: args.note?.reasonDetail ?? null,
        metadata: args.note?.metadata ?? null,
        created_at: now,
      },
    ],
  };
  const resource = toPayoutResource(view);
  const json = JSON.stringify(resource);
  const eventIds = START_EFFECTS.events.map(() => newId());
  const values: unknown[] = [
    payout.id,
    payout.tenantId,
    status,
    START.snapshot,
    payout.merchantReference,
    payout.notificationUrl,
    payout.destinationType,
    payout.destinationCountry,
    payout.destinationCurrency,
    payout.destinationAmount.toFixed(),
    payout.destinationAccountUnique,
    payout.destinationProviderName,
    payout.destinationProviderCode,
    payout.settlementCurrency,
    payout.settlementNetwork,
    payout.destinationAccountName,
    payout.quoteId,
    now,
    newId(),
    reasonCode,
    args.note?.reasonDetail ?? null,
    args.note?.metadata ?? null,
    eventIds,
    START_EFFECTS.events,
    new TextArray(
      START_EFFECTS.events.map((eventType, i) =>
        payoutEventPayload({ eventId: eventIds[i]!, eventType, createdAt: now, status, resourceJson: json }),
      ),
    ),
    START_EFFECTS.tasks.map(() => newId()),
    START_EFFECTS.tasks,
    JSON.stringify(payout.metadata),
    payout.payee?.check ?? null,
    payout.payee?.institutionName ?? null,
    payout.payee?.checkedAt ?? null,
  ];
  const write = args.idempotent;
  if (write) values.push(newId(), write.key, write.fingerprint, write.status, write.seal(json));
  const [row] = await sql.rows<{ has_destination: boolean; created: boolean }>(
    write ? insertPayoutWithKey : insertPayout,
    values,
  );
  if (!row?.has_destination) {
    throw new AppError('REFUND_DESTINATION_REQUIRED', {
      details: [
        {
          field: 'settlement_currency',
          issue: `no refund destination is registered for ${payout.settlementCurrency}`,
        },
      ],
    });
  }
  if (!row.created) throw new KeyTaken();
  tellTransition(sql, {
    payoutId: payout.id,
    tenantId: payout.tenantId,
    from: null,
    to: status,
    reason: reasonCode,
    triggeredBy: 'SYSTEM',
  });
  return { resource, json };
}

/**
 * Applies one event to a payout inside the caller's transaction (row locked), the payout looked
 * up with its tenant when the caller knows it. Returns the engine's transition; an event the
 * machine ignores writes nothing.
 */
export async function applyPayoutEvent(
  em: EntityManager,
  payoutId: string,
  event: PayoutEvent,
  note?: TransitionNote,
  tenantId?: string | null,
): Promise<Transition<Payout, PayoutEvent>> {
  return applyEvent(em, {
    machine: payoutMachine,
    entity: Payout,
    id: payoutId,
    tenantId,
    event,
    onTransition: (tx, t: Transition<Payout, PayoutEvent>) =>
      recordEffects(tx, {
        payout: t.row,
        event: event.type,
        from: t.from as PayoutStatus,
        to: t.to as PayoutStatus,
        triggeredBy: event.triggeredBy,
        actions: t.actions,
        now: event.now,
        note,
      }),
  }) as Promise<Transition<Payout, PayoutEvent>>;
}

/** Amounts a transition sets together with the status (the locked price, the received total). */
export interface PayoutChanges {
  settlementAmount?: Decimal;
  exchangeRate?: Decimal;
  midMarketRate?: Decimal;
  platformFeeAmount?: Decimal;
  networkFeeAmount?: Decimal;
  totalFeeAmount?: Decimal;
  receivedAmount?: Decimal;
}

/** One event for one payout of a batch. */
export interface PayoutStep {
  /** The payout as {@link lockPayouts} read it in the caller's transaction. */
  payout: LockedPayout;
  event: PayoutEvent;
  note?: TransitionNote;
  /** Columns written with the transition (only when the machine takes the event). */
  set?: PayoutChanges;
  /** The payout's instruction as this transaction leaves it, when it writes one: payloads show it. */
  instruction?: InstructionView;
}

/** What one step did. */
export interface StepOutcome {
  payoutId: string;
  from: PayoutStatus;
  to: PayoutStatus;
  changed: boolean;
  /** The machine took the event; an ignored event wrote nothing. */
  taken: boolean;
}

// One JSON array of rows, each `[id, status, snapshot, settlement_amount, exchange_rate,
// mid_market_rate, platform_fee_amount, network_fee_amount, total_fee_amount, received_amount,
// updated_at, tenant_id]`, amounts as decimal strings or null (kept), like the events below. The
// tenant makes each row's lookup the primary key's, and a sharded cluster's a single node's.
const updatePayouts = statement(
  'payouts_apply_steps',
  `update payouts p
      set status = u->>1, snapshot = u->2,
          settlement_amount = coalesce((u->>3)::numeric, p.settlement_amount),
          exchange_rate = coalesce((u->>4)::numeric, p.exchange_rate),
          mid_market_rate = coalesce((u->>5)::numeric, p.mid_market_rate),
          platform_fee_amount = coalesce((u->>6)::numeric, p.platform_fee_amount),
          network_fee_amount = coalesce((u->>7)::numeric, p.network_fee_amount),
          total_fee_amount = coalesce((u->>8)::numeric, p.total_fee_amount),
          received_amount = coalesce((u->>9)::numeric, p.received_amount),
          updated_at = (u->>10)::timestamptz
     from jsonb_array_elements($1::jsonb) as u
    where p.id = (u->>0)::uuid and p.tenant_id = (u->>11)::uuid`,
);

// One JSON array of rows, each `[id, payout_id, tenant_id, from_status, to_status, triggered_by,
// reason_code, reason_detail, metadata, created_at]`, as the payouts above: no element escaped into an array
// literal. JSON null is SQL NULL in the two jsonb columns (a note's absent detail or metadata).
const insertTimeline = statement(
  'payout_timeline_insert_many',
  `insert into payout_status_timeline (id, payout_id, tenant_id, from_status, to_status, triggered_by,
       reason_code, reason_detail, metadata, created_at)
   select (t->>0)::uuid, (t->>1)::uuid, (t->>2)::uuid, t->>3, t->>4, t->>5, t->>6, nullif(t->7, 'null'::jsonb),
          nullif(t->8, 'null'::jsonb), (t->>9)::timestamptz
     from jsonb_array_elements($1::jsonb) as t`,
);

// The events arrive as arrays, one per column, the payloads in binary (`TextArray`): PostgreSQL
// stores each as it comes. Inside one JSON array of rows, like the statements above, it would
// parse every payload (2-3 KB) as JSON only to take it apart again, the largest part of writing an
// event; as an array literal, the driver would spend as long escaping it.
const insertEvents = statement(
  'outbox_insert_many',
  `insert into outbox_events (id, tenant_id, payout_id, event_type, payload, published_at, created_at)
   select e.id, e.tenant_id, e.payout_id, e.event_type, e.payload, null, e.created_at
     from unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::timestamptz[])
          as e(id, tenant_id, payout_id, event_type, payload, created_at)`,
);

const decimalOrNull = (d: Decimal | undefined) => (d === undefined ? null : d.toFixed());

/**
 * Applies one event to each payout of a batch inside the caller's transaction, where the caller
 * read them with {@link lockPayouts}: the batch form of {@link applyPayoutEvent}, with the same
 * machine and the same effects (status and snapshot, timeline row, outbox events carrying the
 * payout as the transaction leaves it, tasks, the held money of a payout failed while waiting for
 * money), written in four statements whatever the batch size (two more for that held money).
 * A payout appears at most once per batch. Returns what each step did, in order.
 */
export async function applyPayoutSteps(tx: Sql, steps: readonly PayoutStep[]): Promise<StepOutcome[]> {
  const outcomes: StepOutcome[] = [];
  const seen = new Set<string>();
  const updates: { step: PayoutStep; status: string; snapshot: Record<string, unknown> }[] = [];
  const timeline: unknown[][] = [];
  const events: {
    id: string;
    tenantId: string;
    payoutId: string;
    type: string;
    payload: string;
    at: Date;
  }[] = [];
  const tasks: { kind: TaskKind; subjectId: string; tenantId: string }[] = [];
  const ledger: LedgerTransaction[] = [];
  const failedHolding: { id: string; tenantId: string }[] = [];
  for (const item of steps) {
    const { payout, event } = item;
    if (seen.has(payout.id)) throw new Error(`payout ${payout.id} appears twice in one batch`);
    seen.add(payout.id);
    const done = step(payoutMachine, payout, event);
    outcomes.push({
      payoutId: payout.id,
      from: done.from as PayoutStatus,
      to: done.to as PayoutStatus,
      changed: done.changed,
      taken: done.taken,
    });
    if (!done.taken) continue;

    const now = event.now;
    const effects = effectsOf(done.actions);
    if (done.changed) {
      tellTransition(tx, {
        payoutId: payout.id,
        tenantId: payout.tenant_id,
        from: done.from,
        to: done.to,
        reason: effects.timeline,
        triggeredBy: event.triggeredBy,
      });
    }
    const set = item.set ?? {};
    const view: PayoutView = {
      ...payout,
      status: done.to as PayoutStatus,
      settlement_amount: set.settlementAmount ?? payout.settlement_amount,
      exchange_rate: set.exchangeRate ?? payout.exchange_rate,
      platform_fee_amount: set.platformFeeAmount ?? payout.platform_fee_amount,
      network_fee_amount: set.networkFeeAmount ?? payout.network_fee_amount,
      total_fee_amount: set.totalFeeAmount ?? payout.total_fee_amount,
      instruction: item.instruction ?? payout.instruction,
      updated_at: now,
      timeline: [...payout.timeline],
    };
    if (effects.timeline !== null) {
      const row = {
        from_status: done.from as PayoutStatus,
        to_status: done.to as PayoutStatus,
        triggered_by: event.triggeredBy,
        reason_code: effects.timeline,
        reason_detail: item.note?.reasonDetail ?? null,
        metadata: item.note?.metadata ?? null,
        created_at: now,
      };
      view.timeline.push(row);
      timeline.push([
        newId(),
        payout.id,
        payout.tenant_id,
        row.from_status,
        row.to_status,
        row.triggered_by,
        row.reason_code,
        row.reason_detail,
        row.metadata,
        now,
      ]);
    }
    if (effects.events.length > 0) {
      const resourceJson = JSON.stringify(toPayoutResource(view));
      for (const eventType of effects.events) {
        const eventId = newId();
        events.push({
          id: eventId,
          tenantId: payout.tenant_id,
          payoutId: payout.id,
          type: eventType,
          payload: payoutEventPayload({
            eventId,
            eventType,
            createdAt: now,
            status: view.status,
            resourceJson,
          }),
          at: now,
        });
      }
    }
    for (const kind of effects.tasks) tasks.push({ kind, subjectId: payout.id, tenantId: payout.tenant_id });
    if (effects.posts) {
      ledger.push(
        ...payoutLedger(
          {
            id: payout.id,
            tenantId: payout.tenant_id,
            settlementCurrency: payout.settlement_currency,
            settlementAmount: toDecimal(set.settlementAmount ?? payout.settlement_amount),
            platformFee: toDecimal(set.platformFeeAmount ?? payout.platform_fee_amount),
            networkFee: toDecimal(set.networkFeeAmount ?? payout.network_fee_amount),
            received: toDecimal(set.receivedAmount ?? payout.received_amount),
          },
          done,
          event.type,
          now,
        ),
      );
    }
    if (failsHoldingMoney(done.from as PayoutStatus, done.to as PayoutStatus))
      failedHolding.push({ id: payout.id, tenantId: payout.tenant_id });
    updates.push({ step: item, status: done.to, snapshot: done.snapshot });
  }
  if (updates.length === 0) return outcomes;

  const rows = updates.map(({ step: { payout, set = {}, event }, status, snapshot }) => [
    payout.id,
    status,
    snapshot,
    decimalOrNull(set.settlementAmount),
    decimalOrNull(set.exchangeRate),
    decimalOrNull(set.midMarketRate),
    decimalOrNull(set.platformFeeAmount),
    decimalOrNull(set.networkFeeAmount),
    decimalOrNull(set.totalFeeAmount),
    decimalOrNull(set.receivedAmount),
    event.now,
    payout.tenant_id,
  ]);
  await tx.rows(updatePayouts, [JSON.stringify(rows)]);
  if (timeline.length > 0) await tx.rows(insertTimeline, [JSON.stringify(timeline)]);
  if (events.length > 0) {
    await tx.rows(insertEvents, [
      events.map((e) => e.id),
      events.map((e) => e.tenantId),
      events.map((e) => e.payoutId),
      events.map((e) => e.type),
      new TextArray(events.map((e) => e.payload)),
      events.map((e) => e.at),
    ]);
  }
  if (tasks.length > 0) {
    const now = updates[0]!.step.event.now;
    await scheduleTasks(tx, tasks, { dueAt: now, now });
  }
  await post(tx, ledger);
  if (failedHolding.length > 0) await handHeldToRefund(tx, failedHolding, updates[0]!.step.event.now);
  return outcomes;
}
