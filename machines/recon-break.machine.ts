import { assign, setup } from 'xstate';
import type { MachineTexts, StateMeta, TransitionMeta } from './texts.ts';

/**
 * A reconciliation break: one difference between the service's books and a rail's own record
 * (the bank's statement, a chain, the processor's settlement report) that a reconciliation run
 * found. It waits OPEN in the operators' queue until an operator resolves it with a note. A
 * resolution that moves money (booking what the rail shows, sending money a processor returned
 * back to the merchant) runs only once a second operator approves its proposal; the approval's
 * action sends RESOLVE with the proposal's id.
 *
 *   (found by a run) --> OPEN
 *   OPEN --RESOLVE--> RESOLVED (final)
 *
 * A run that finds the same difference again leaves the break as it is. The machine asks for no
 * actions: the caller writes the audit row and any ledger entries in the same transaction.
 */

export type ReconBreakStatus = 'OPEN' | 'RESOLVED';

/** How a break was resolved: explained with nothing to move, or money moved under four eyes. */
export type BreakResolution = 'EXPLAINED' | 'BOOKED_RAIL' | 'REFUNDED_RETURN';

export interface ReconBreakContext {
  resolution: BreakResolution | null;
  note: string | null;
  resolvedBy: string | null;
  /** The four-eyes proposal whose approval resolved it, for a resolution that moved money. */
  approvalId: string | null;
}

export type ReconBreakEvent = {
  type: 'RESOLVE';
  resolution: BreakResolution;
  note: string;
  operatorId: string;
  approvalId: string | null;
};

export const reconBreakMachine = setup({
  types: {
    context: {} as ReconBreakContext,
    events: {} as ReconBreakEvent,
    meta: {} as StateMeta,
    transitionMeta: {} as TransitionMeta,
  },
  guards: {
    // Money moves only with a proposal a second operator approved.
    approvedIfMoneyMoves: ({ event }) => event.resolution === 'EXPLAINED' || event.approvalId !== null,
  },
  actions: {
    recordResolution: assign({
      resolution: ({ event }) => event.resolution,
      note: ({ event }) => event.note,
      resolvedBy: ({ event }) => event.operatorId,
      approvalId: ({ event }) => event.approvalId,
    }),
  },
}).createMachine({
  id: 'reconBreak',
  description:
    'A difference between the service’s books and what a rail (bank, chain, processor) reports, waiting for an operator.',
  initial: 'OPEN',
  context: { resolution: null, note: null, resolvedBy: null, approvalId: null },
  states: {
    OPEN: {
      description:
        'The difference is in the Reconciliation queue. Nobody has explained it yet, and nothing has been moved because of it.',
      on: {
        RESOLVE: {
          guard: 'approvedIfMoneyMoves',
          target: 'RESOLVED',
          actions: 'recordResolution',
          description:
            'An operator resolves the difference with a note: explained (nothing to move), or, once a second operator approves, the books take what the rail shows or the money a processor returned goes back to the merchant as a refund.',
          meta: { by: ['OPERATOR', 'OPERATOR_FOUR_EYES'] },
        },
      },
    },
    RESOLVED: {
      type: 'final',
      description:
        'Resolved: the note says why, and any money it moved was approved by a second operator. A later run that finds the same difference does not open it again.',
    },
  },
});

/** How a break begins, and its guard in plain words. */
export const reconBreakTexts = {
  holdsMoney: false,
  created: {
    description:
      'A reconciliation run (daily, or started by an operator) compares a day of the service’s books with the rail’s own record and opens one break per difference: money on the rail the books do not have, money in the books the rail does not show, an amount or currency that differs, or a state that differs (the processor says returned or failed where the books say paid).',
    by: ['SYSTEM', 'OPERATOR'],
  },
  guards: {
    approvedIfMoneyMoves: {
      holds: 'the resolution moves no money, or a second operator approved its proposal',
      fails: 'the resolution moves money and no second operator has approved it',
    },
  },
} as const satisfies MachineTexts<typeof reconBreakMachine>;
