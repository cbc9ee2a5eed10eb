import type { EntityManager } from '@mikro-orm/postgresql';
import { type PayoutEvent, payoutMachine, type TriggeredBy } from '#machines/payout.machine.ts';
import { applyEvent, initialState, type MachineAction, type Transition } from '#src/engine/engine.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import type { TaskKind } from '#src/jobs/entities.ts';
import { scheduleTask } from '#src/jobs/tasks.ts';
import { Payout, type PayoutStatus, StatusLog } from './entities.ts';
import { payoutResources } from './resource.ts';

/**
 * Where a payout changes status: every change goes through `payoutMachine` via the engine, and
 * in the same transaction this module appends the timeline row, writes the outbox events and
 * makes the follow-up work due. Nothing else writes `payouts.status`.
 */

export type { TriggeredBy } from '#machines/payout.machine.ts';

/** The columns of a payout row as `em.create` takes them. */
export type PayoutData = { [K in keyof Payout]?: unknown };

/** Extra facts a caller wants on the timeline row of the transition it causes. */
export interface TransitionNote {
  reasonDetail?: Record<string, unknown> | null;
  metadata?: Record<string, unknown> | null;
}

interface Effects {
  payout: Payout;
  from: PayoutStatus | null;
  to: PayoutStatus;
  triggeredBy: TriggeredBy;
  actions: MachineAction[];
  now: Date;
  note?: TransitionNote;
}

/** Writes what a payout transition's actions ask for: timeline row, outbox events, tasks. */
async function recordEffects(em: EntityManager, effects: Effects): Promise<void> {
  const { payout, now } = effects;
  const emitted: string[] = [];
  for (const action of effects.actions) {
    const params = (action.params ?? {}) as Record<string, unknown>;
    switch (action.type) {
      case 'timeline':
        em.create(StatusLog, {
          payout,
          fromStatus: effects.from,
          toStatus: effects.to,
          triggeredBy: effects.triggeredBy,
          reasonCode: String(params.reasonCode),
          reasonDetail:
            effects.note?.reasonDetail ??
            (params.reasonDetail as Record<string, unknown> | undefined) ??
            null,
          metadata: effects.note?.metadata ?? null,
          createdAt: now,
        });
        break;
      case 'emit':
        emitted.push(String(params.event));
        break;
      case 'schedule':
        await scheduleTask(em, { kind: params.task as TaskKind, subjectId: payout.id, dueAt: now, now });
        break;
      default:
        throw new Error(`payout machine asked for unknown action ${action.type}`);
    }
  }
  if (emitted.length > 0) await emitPayoutEvents(em, payout, emitted, now);
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
  const [resource] = await payoutResources(em, [payout]);
  for (const eventType of eventTypes) {
    const event = em.create(OutboxEvent, {
      tenant: payout.tenant,
      payoutId: payout.id,
      eventType,
      payload: {},
      createdAt: now,
    });
    event.payload = {
      event_id: event.id,
      event_type: eventType,
      created_at: now.toISOString(),
      status: payout.status,
      data: JSON.parse(JSON.stringify({ object: 'payout', ...resource })),
    };
  }
}

/** Persists a new payout in CREATED with its first timeline row, payout.created, and the instruction task. */
export async function createPayoutRow(
  em: EntityManager,
  data: Omit<PayoutData, 'status' | 'snapshot'>,
  now: Date,
  note?: TransitionNote,
): Promise<Payout> {
  const initial = initialState(payoutMachine, {});
  const payout = em.create(Payout, {
    ...data,
    status: initial.status as PayoutStatus,
    snapshot: initial.snapshot,
  } as never) as Payout;
  await recordEffects(em, {
    payout,
    from: null,
    to: payout.status,
    triggeredBy: 'SYSTEM',
    actions: initial.actions,
    now,
    note,
  });
  return payout;
}

/**
 * Applies one event to a payout inside the caller's transaction (row locked). Returns the
 * engine's transition; an event the machine ignores writes nothing.
 */
export async function applyPayoutEvent(
  em: EntityManager,
  payoutId: string,
  event: PayoutEvent,
  note?: TransitionNote,
): Promise<Transition<Payout, PayoutEvent>> {
  return applyEvent(em, {
    machine: payoutMachine,
    entity: Payout,
    id: payoutId,
    event,
    onTransition: (tx, t: Transition<Payout, PayoutEvent>) =>
      recordEffects(tx, {
        payout: t.row,
        from: t.from as PayoutStatus,
        to: t.to as PayoutStatus,
        triggeredBy: event.triggeredBy,
        actions: t.actions,
        now: event.now,
        note,
      }),
  }) as Promise<Transition<Payout, PayoutEvent>>;
}
