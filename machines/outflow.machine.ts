import { assign, setup } from 'xstate';

/**
 * One dispatch attempt of a payout to the processor (one outflow row). A retry is a new row with
 * its own machine; a terminal row never changes again, so duplicate or out-of-order callbacks for
 * an attempt that is already over are absorbed here.
 *
 *   PENDING --ACCEPTED--> PROCESSING
 *   PENDING --SUCCEEDED--> SUCCESSFUL (final; the processor reported success at dispatch, or its
 *                                      callback overtook our record of the acceptance)
 *   PENDING --REJECTED | FAILED--> FAILED (final; refused at dispatch, or a failure callback that
 *                                          overtook the acceptance)
 *   PROCESSING --SUCCEEDED--> SUCCESSFUL (final)
 *   PROCESSING --FAILED--> FAILED (final)
 *
 * Any other event (a second ACCEPTED, REJECTED after acceptance, anything once terminal) is
 * ignored: the snapshot comes back as the very same object. The machine asks for no actions:
 * callers forward an outcome to the payout machine only when this machine took the transition,
 * which is what keeps a duplicate callback from retrying or failing the payout twice.
 */

export type OutflowStatus = 'PENDING' | 'PROCESSING' | 'SUCCESSFUL' | 'FAILED';

export interface OutflowContext {
  /** The processor's own reference for the transfer, once it has given one. */
  processorReference: string | null;
  failureCode: string | null;
  failureReason: string | null;
  /** Whether the processor said another attempt may succeed; null unless FAILED. */
  retryable: boolean | null;
}

/** The processor's verdict on an attempt that did not succeed. */
export interface OutflowFailure {
  failureCode: string;
  failureReason: string;
  retryable: boolean;
}

export type OutflowEvent =
  | { type: 'ACCEPTED'; processorReference?: string | null; now: Date }
  | { type: 'SUCCEEDED'; processorReference?: string | null; now: Date }
  | ({ type: 'REJECTED'; now: Date } & OutflowFailure)
  | ({ type: 'FAILED'; now: Date } & OutflowFailure);

export const outflowMachine = setup({
  types: {
    context: {} as OutflowContext,
    events: {} as OutflowEvent,
  },
  actions: {
    recordReference: assign({
      processorReference: ({ context, event }) =>
        ('processorReference' in event ? event.processorReference : null) ?? context.processorReference,
    }),
    recordFailure: assign(({ event }) =>
      'failureCode' in event
        ? { failureCode: event.failureCode, failureReason: event.failureReason, retryable: event.retryable }
        : {},
    ),
  },
}).createMachine({
  id: 'outflow',
  initial: 'PENDING',
  context: { processorReference: null, failureCode: null, failureReason: null, retryable: null },
  states: {
    PENDING: {
      on: {
        ACCEPTED: { target: 'PROCESSING', actions: 'recordReference' },
        SUCCEEDED: { target: 'SUCCESSFUL', actions: 'recordReference' },
        REJECTED: { target: 'FAILED', actions: 'recordFailure' },
        FAILED: { target: 'FAILED', actions: 'recordFailure' },
      },
    },
    PROCESSING: {
      on: {
        SUCCEEDED: { target: 'SUCCESSFUL', actions: 'recordReference' },
        FAILED: { target: 'FAILED', actions: 'recordFailure' },
      },
    },
    SUCCESSFUL: { type: 'final' },
    FAILED: { type: 'final' },
  },
});
