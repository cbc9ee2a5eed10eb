import { type EntityManager, type EntityName, LockMode } from '@mikro-orm/postgresql';
import {
  type AnyActorScope,
  type AnyMachineSnapshot,
  type AnyStateMachine,
  createActor,
  type EventFromLogic,
  type InputFrom,
  type SnapshotFrom,
  type StateValue,
} from 'xstate';

/**
 * The one place where a persisted object changes status. Machines (`machines/`) are pure; this
 * engine loads the row under a lock, restores the machine's snapshot, applies one event and
 * saves the result, all inside the caller's transaction. The machine's custom actions come back
 * as plain data for the caller (and the `onTransition` hook) to turn into rows: timeline
 * entries, outbox events. Nothing here performs I/O beyond the row itself.
 */

/** A row whose status a machine owns: `snapshot` is the persisted snapshot, `status` its top-level state. */
export interface MachineRow {
  id: string;
  status: string;
  snapshot: Record<string, unknown>;
}

/** An action as XState's transitions hand it back (with functions bound to their scope besides). */
type XStateAction = { type: string; params?: unknown };

/** A custom action the machine asked for, reduced to data (no functions, no actor refs). */
export interface MachineAction {
  type: string;
  params: unknown;
}

/** What happened to one row when one event was applied. */
export interface Transition<TRow, TEvent> {
  /** The row, already carrying the new status and snapshot (flushed with the transaction). */
  row: TRow;
  event: TEvent;
  from: string;
  to: string;
  /** The status changed. */
  changed: boolean;
  /**
   * A transition was taken. True whenever `changed` is, and also for a self-transition that
   * keeps the status but updates context or asks for actions (a held payout, a retried dispatch).
   */
  taken: boolean;
  actions: MachineAction[];
}

/**
 * Runs in the same transaction right after a transition was taken (never when the event was
 * ignored): the place to append the timeline row and the outbox rows of that transition.
 */
export type TransitionHook<TRow, TEvent> = (
  em: EntityManager,
  transition: Transition<TRow, TEvent>,
) => Promise<void>;

/** The status column's value for a state value: the top-level state, also when a state is nested. */
export function statusOf(value: StateValue): string {
  if (typeof value === 'string') return value;
  const keys = Object.keys(value);
  if (keys.length !== 1)
    throw new Error(`a status needs exactly one top-level state, got ${JSON.stringify(value)}`);
  return keys[0]!;
}

/**
 * The persisted snapshot as the jsonb column will hold it: plain JSON, so the row in memory equals
 * the row read back (undefined fields dropped, a Date in context becomes its ISO string).
 */
function persist(machine: AnyStateMachine, snapshot: unknown): Record<string, unknown> {
  return JSON.parse(JSON.stringify(machine.getPersistedSnapshot(snapshot as never))) as Record<
    string,
    unknown
  >;
}

function actionsOf(actions: readonly XStateAction[]): MachineAction[] {
  // Built-in actions (xstate.raise, xstate.spawnChild...) would mean delays or actors that this
  // engine cannot honour; machines that need them must model due times as rows instead.
  const builtIn = actions.find((a) => a.type.startsWith('xstate.'));
  if (builtIn) throw new Error(`machine asked for ${builtIn.type}, which the engine does not run`);
  return actions.map((a) => ({ type: a.type, params: a.params ?? null }));
}

/**
 * Each machine's never-started actor, the `self` of the scope its pure transitions run in, built
 * once. XState's own `transition()` and `initialTransition()` build a fresh one per call, and
 * building an actor computes the machine's initial snapshot (its entry into the initial state,
 * its context factory, without input): about half of what a step allocated in the workers'
 * batches, measured with V8's sampling heap profiler. The scope holds nothing between calls but
 * that actor and its system, where only spawned actors would register; the engine refuses the
 * actions that spawn them.
 */
const idleActors = new WeakMap<AnyStateMachine, AnyActorScope['self']>();

/** The scope of one pure transition of `machine`: actions collected into `actions`, none executed. */
function pureScope(machine: AnyStateMachine, actions: unknown[]): AnyActorScope {
  let self = idleActors.get(machine);
  // Stryker disable next-line ConditionalExpression: building the actor every time only costs time
  if (!self) {
    self = createActor(machine);
    idleActors.set(machine, self);
  }
  return {
    self,
    // Stryker disable next-line StringLiteral: no transition reads the scope's id
    id: '',
    // Stryker disable next-line StringLiteral: nor its session id
    sessionId: '',
    logger: () => undefined,
    defer: () => undefined,
    emit: () => undefined,
    system: self.system,
    stopChild: () => undefined,
    actionExecutor: (action) => {
      actions.push(action);
    },
  };
}

type PureResult<TMachine extends AnyStateMachine> = [SnapshotFrom<TMachine>, XStateAction[]];

/** XState's `transition(machine, snapshot, event)`, in a scope built once per machine. */
export function pureTransition<TMachine extends AnyStateMachine>(
  machine: TMachine,
  snapshot: SnapshotFrom<TMachine>,
  event: EventFromLogic<TMachine>,
): PureResult<TMachine> {
  const actions: XStateAction[] = [];
  const next = machine.transition(snapshot as never, event as never, pureScope(machine, actions));
  return [next as SnapshotFrom<TMachine>, actions];
}

/** XState's `initialTransition(machine, input)`, in a scope built once per machine. */
export function pureInitialTransition<TMachine extends AnyStateMachine>(
  machine: TMachine,
  input: InputFrom<TMachine>,
): PureResult<TMachine> {
  const actions: XStateAction[] = [];
  const snapshot = machine.getInitialSnapshot(pureScope(machine, actions), input);
  return [snapshot as SnapshotFrom<TMachine>, actions];
}

/** Snapshot, status and actions of a new machine-backed row, from the machine's initial transition. */
export function initialState<TMachine extends AnyStateMachine>(
  machine: TMachine,
  input: InputFrom<TMachine>,
): { status: string; snapshot: Record<string, unknown>; actions: MachineAction[] } {
  const [snapshot, actions] = pureInitialTransition(machine, input);
  return {
    status: statusOf((snapshot as AnyMachineSnapshot).value),
    snapshot: persist(machine, snapshot),
    actions: actionsOf(actions),
  };
}

/** The row's restored machine snapshot (no lock, no writes): for pure questions such as "what would EXPIRE do now?". */
export function restore<TMachine extends AnyStateMachine>(
  machine: TMachine,
  row: MachineRow,
): SnapshotFrom<TMachine> {
  const snapshot = machine.resolveState(row.snapshot as never) as SnapshotFrom<TMachine>;
  const status = statusOf((snapshot as AnyMachineSnapshot).value);
  if (status !== row.status) {
    // Only the engine writes both columns; a disagreement means something else wrote one of them.
    throw new Error(`row ${row.id}: status ${row.status} disagrees with its machine snapshot (${status})`);
  }
  return snapshot;
}

/** What one event does to a row's machine, computed without touching the row. */
export interface Step {
  from: string;
  to: string;
  changed: boolean;
  taken: boolean;
  /** The snapshot to persist (the row's own when the event was ignored). */
  snapshot: Record<string, unknown>;
  actions: MachineAction[];
}

/**
 * Applies `event` to a row's persisted snapshot in memory: the pure core of {@link applyEvent},
 * for callers that read and write many rows at once (they lock and save the rows themselves).
 */
export function step<TMachine extends AnyStateMachine>(
  machine: TMachine,
  row: MachineRow,
  event: EventFromLogic<TMachine>,
): Step {
  const snapshot = restore(machine, row);
  const [next, actions] = pureTransition(machine, snapshot, event);
  const to = statusOf((next as AnyMachineSnapshot).value);
  // XState hands back the very same snapshot when no transition was enabled, but also for one
  // without a target that only asks for actions: that one is taken, and its actions must run.
  const taken = next !== snapshot || actions.length > 0;
  return {
    from: row.status,
    to,
    changed: row.status !== to,
    taken,
    snapshot: taken ? persist(machine, next) : row.snapshot,
    actions: actionsOf(actions),
  };
}

/**
 * Applies `event` to the row `id` of `entity` inside the caller's transaction: locks the row
 * (SELECT ... FOR UPDATE), restores the snapshot, transitions, and when a transition is taken
 * saves the new snapshot and status and runs `onTransition`. An ignored event writes nothing.
 * With `tenantId`, the row is looked up by its tenant too (an entity whose `tenant` is the
 * tenant's): by its primary key `(id, tenant_id)`, on one node once tenants are sharded.
 */
export async function applyEvent<TMachine extends AnyStateMachine, TRow extends MachineRow>(
  em: EntityManager,
  args: {
    machine: TMachine;
    entity: EntityName<TRow>;
    id: string;
    /** The row's tenant, when the caller knows it and the entity has one. */
    tenantId?: string | null;
    event: EventFromLogic<TMachine>;
    onTransition?: TransitionHook<NoInfer<TRow>, EventFromLogic<TMachine>>;
  },
): Promise<Transition<TRow, EventFromLogic<TMachine>>> {
  const { machine, event } = args;
  const where = args.tenantId ? { id: args.id, tenant: args.tenantId } : args.id;
  const row = (await em.findOne(args.entity, where as never, {
    lockMode: LockMode.PESSIMISTIC_WRITE,
  })) as TRow | null;
  if (!row) throw new Error(`${String(args.entity)} ${args.id} does not exist`);

  const done = step(machine, row, event);
  const result: Transition<TRow, EventFromLogic<TMachine>> = {
    row,
    event,
    from: done.from,
    to: done.to,
    changed: done.changed,
    taken: done.taken,
    actions: done.actions,
  };
  if (!done.taken) return result;

  row.snapshot = done.snapshot;
  row.status = done.to;
  if (args.onTransition) await args.onTransition(em, result);
  return result;
}
