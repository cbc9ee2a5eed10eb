import { assign, setup } from 'xstate';
import type { MachineTexts, PostParams, StateMeta, TransitionMeta } from './texts.ts';

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
 * ignored: the snapshot comes back as the very same object. Callers forward an outcome to the
 * payout machine only when this machine took the transition, which is what keeps a duplicate
 * callback from retrying or failing the payout twice. Its one action, `post`, is the money a
 * transition moves (the ledger's flows in `src/dispatch/money.ts`): SENT when the processor takes
 * the attempt (converted at the locked rate), PAID when it pays the beneficiary, CAME_BACK when it
 * fails an attempt it had taken. An attempt refused before it was taken moved no money.
 *
 * Every state and transition carries its plain-language text (`description`, `meta`: see
 * `./texts.ts`); `outflowTexts` at the end says how an attempt begins.
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
    meta: {} as StateMeta,
    transitionMeta: {} as TransitionMeta,
  },
  actions: {
    // Carried out by the code that applies the transition, from the returned action data.
    post: (() => {}) as (_: unknown, params: PostParams) => void,
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
  description: 'One attempt at paying the beneficiary through the processor; a retry is a new attempt.',
  initial: 'PENDING',
  context: { processorReference: null, failureCode: null, failureReason: null, retryable: null },
  states: {
    PENDING: {
      description:
        'The attempt is recorded and being sent to the processor, which has not accepted it yet. Sending it again after a time-out reuses the same reference, so the beneficiary is never paid twice.',
      meta: { money: 'WITH_US' },
      on: {
        ACCEPTED: {
          target: 'PROCESSING',
          actions: ['recordReference', { type: 'post', params: { flow: 'SENT' } }],
          description: 'The processor accepts the attempt.',
          meta: { by: ['PROCESSOR'], causes: [{ machine: 'payout', event: 'DISPATCH_ACCEPTED' }] },
        },
        SUCCEEDED: {
          target: 'SUCCESSFUL',
          actions: [
            'recordReference',
            { type: 'post', params: { flow: 'SENT' } },
            { type: 'post', params: { flow: 'PAID' } },
          ],
          description:
            'The processor reports the beneficiary paid at once, or before its acceptance was recorded.',
          meta: {
            by: ['PROCESSOR'],
            causes: [
              { machine: 'payout', event: 'DISPATCH_ACCEPTED' },
              { machine: 'payout', event: 'PROCESSOR_SUCCEEDED' },
            ],
          },
        },
        REJECTED: {
          target: 'FAILED',
          actions: 'recordFailure',
          description: 'The processor refuses the attempt when it is sent.',
          meta: { by: ['PROCESSOR'], causes: [{ machine: 'payout', event: 'DISPATCH_FAILED' }] },
        },
        FAILED: {
          target: 'FAILED',
          actions: 'recordFailure',
          description: 'The processor reports the attempt failed before its acceptance was recorded.',
          meta: { by: ['PROCESSOR'], causes: [{ machine: 'payout', event: 'DISPATCH_FAILED' }] },
        },
      },
    },
    PROCESSING: {
      description: 'The processor accepted the attempt and is paying the beneficiary.',
      meta: { money: 'WITH_PROCESSOR' },
      on: {
        SUCCEEDED: {
          target: 'SUCCESSFUL',
          actions: ['recordReference', { type: 'post', params: { flow: 'PAID' } }],
          description: 'The processor reports that the beneficiary was paid.',
          meta: { by: ['PROCESSOR'], causes: [{ machine: 'payout', event: 'PROCESSOR_SUCCEEDED' }] },
        },
        FAILED: {
          target: 'FAILED',
          actions: ['recordFailure', { type: 'post', params: { flow: 'CAME_BACK' } }],
          description: 'The processor reports that the attempt failed.',
          meta: { by: ['PROCESSOR'], causes: [{ machine: 'payout', event: 'PROCESSOR_FAILED' }] },
        },
      },
    },
    SUCCESSFUL: {
      type: 'final',
      description: 'The processor paid the beneficiary.',
      meta: { money: 'WITH_BENEFICIARY' },
    },
    FAILED: {
      type: 'final',
      description:
        'The processor failed this attempt and the money did not leave. The payout decides what follows: another attempt, or a refund.',
      meta: { money: 'WITH_US' },
    },
  },
});

/** How an attempt begins. */
export const outflowTexts = {
  holdsMoney: true,
  created: {
    description:
      'The dispatch job records the attempt before sending it, under a reference of ours that the processor uses to refuse a second payment.',
    by: ['SYSTEM'],
  },
  guards: {},
} as const satisfies MachineTexts<typeof outflowMachine>;
