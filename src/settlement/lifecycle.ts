import {
  type InflowEvent,
  type InflowInput,
  type InflowStatus,
  inflowMachine,
} from '#machines/inflow.machine.ts';
import { initialState, type MachineAction, restore, type Step, step } from '#src/engine/engine.ts';

/**
 * Where an inflow's state changes: every write of `inflows.state` comes from the inflow machine
 * (`machines/inflow.machine.ts`), stepped in memory here and written by the caller together with
 * the snapshot, in the transaction that decided it (matching's batches, the chain scan's
 * confirmations, an operator's action, a payout's failure: `./payout-failure.ts`), as the payout
 * batches do with `step()`.
 */

/** An inflow as its machine needs it: the `state` column is the machine's top-level state. */
export interface InflowMachineRow {
  id: string;
  state: InflowStatus;
  snapshot: Record<string, unknown>;
}

/** What one event does to an inflow. */
export type InflowStep = Step & { from: InflowStatus; to: InflowStatus };

/** How a new inflow starts: its state and snapshot, and what its first transition asks for. */
export interface InflowStart {
  state: InflowStatus;
  snapshot: Record<string, unknown>;
  /** A bank credit's `post` of the money it brings: it counts at once. */
  actions: MachineAction[];
}

// Every new inflow of a rail starts alike: one initial transition per requirement, not per row.
const starts = new Map<number, InflowStart>();

/**
 * The state and snapshot of a newly recorded inflow: PENDING_CONFIRMATION until the chain's
 * `confirmationsRequired`, CONFIRMED at once for a bank credit (0).
 */
export function newInflow(input: InflowInput): InflowStart {
  let start = starts.get(input.confirmationsRequired);
  if (!start) {
    const initial = initialState(inflowMachine, input);
    start = { state: initial.status as InflowStatus, snapshot: initial.snapshot, actions: initial.actions };
    starts.set(input.confirmationsRequired, start);
  }
  return start;
}

/** Applies `event` to an inflow in memory; an ignored event comes back with `taken` false. */
export function stepInflow(inflow: InflowMachineRow, event: InflowEvent): InflowStep {
  return step(
    inflowMachine,
    { id: inflow.id, status: inflow.state, snapshot: inflow.snapshot },
    event,
  ) as InflowStep;
}

/**
 * {@link stepInflow} for a verdict reached under the inflow's lock: the machine refusing it means
 * the facts were wrong (a bug, never a user error), so the caller's transaction is abandoned.
 */
export function stepInflowOrThrow(inflow: InflowMachineRow, event: InflowEvent): InflowStep {
  const done = stepInflow(inflow, event);
  if (!done.taken) throw new Error(`inflow ${inflow.id} (${inflow.state}) ignored ${event.type}`);
  return done;
}

/**
 * Whether operators may still decide where the money goes (attribute it to a payout, or record
 * it as returned): UNMATCHED, or HELD attributed to nobody. Money held against a payout is that
 * payout's.
 */
export function awaitsOperator(inflow: InflowMachineRow): boolean {
  return restore(inflowMachine, { id: inflow.id, status: inflow.state, snapshot: inflow.snapshot }).can({
    type: 'OPERATOR_RETURN',
    now: new Date(0),
  });
}
