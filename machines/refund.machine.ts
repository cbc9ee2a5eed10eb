import { assign, setup } from 'xstate';
import type { MachineTexts, PostParams, StateMeta, TransitionMeta } from './texts.ts';

/**
 * The refund of a failed payout's settlement (the contract's refund status table). One refund per
 * payout; a failed refund is retried on the same row once an operator has corrected the
 * destination. Actions come back as data for the engine's hook: `emit` (one outbox event each, in
 * order; refund events carry the payout as `data`), `schedule` (a task due after commit) and
 * `post` (the money the transition moves: the ledger's flows in `src/refunds/money.ts`; SENT when
 * the rail takes the refund, DELIVERED when it arrives, BOUNCED when it fails on its way).
 *
 *   (raised) ---------------------------------------------------> PENDING
 *             emit payout.refunded, emit refund.created, schedule DISPATCH_REFUND
 *   PENDING --DISPATCHED--> PROCESSING (emit refund.processing)
 *   PENDING --FAILED--> FAILED (emit refund.failed; the rail refused it before accepting)
 *   PROCESSING --CONFIRMED--> SUCCESSFUL (final; emit refund.successful)
 *   PROCESSING --FAILED--> FAILED (emit refund.failed)
 *   FAILED --OPERATOR_RETRY [destinationCorrected]--> PENDING (schedule DISPATCH_REFUND)
 *
 * FAILED is not final: it waits for an operator. Anything else is ignored (a CONFIRMED before
 * the dispatch was recorded, a late FAILED after success, a retry without a corrected
 * destination): the snapshot comes back as the very same object and the engine writes nothing.
 *
 * Every state and transition carries its plain-language text (`description`, `meta`: see
 * `./texts.ts`); `refundTexts` at the end holds the rest.
 */

export type RefundStatus = 'PENDING' | 'PROCESSING' | 'SUCCESSFUL' | 'FAILED';

/** Webhook event types the refund machine emits (product decisions §4). */
export type RefundWebhook =
  | 'payout.refunded'
  | 'refund.created'
  | 'refund.processing'
  | 'refund.successful'
  | 'refund.failed';

/** Background work a refund transition makes due. */
export type RefundTask = 'DISPATCH_REFUND';

export interface RefundEmitParams {
  event: RefundWebhook;
}
export interface RefundScheduleParams {
  task: RefundTask;
}

export interface RefundContext {
  /** The settlement engine's reference for the current attempt, once dispatched. */
  processorReference: string | null;
  /** Why the current attempt failed; null unless FAILED. */
  failureReason: string | null;
}

export type RefundEvent =
  | { type: 'DISPATCHED'; processorReference?: string | null; now: Date }
  | { type: 'CONFIRMED'; now: Date }
  | { type: 'FAILED'; failureReason: string; now: Date }
  | { type: 'OPERATOR_RETRY'; destinationCorrected: boolean; now: Date };

// Carried out by the engine's onTransition hook from the returned action data, never here.
const byTheHook = () => {};

export const refundMachine = setup({
  types: {
    context: {} as RefundContext,
    events: {} as RefundEvent,
    meta: {} as StateMeta,
    transitionMeta: {} as TransitionMeta,
  },
  guards: {
    // The contract: a failed refund needs a corrected destination before a retry.
    destinationCorrected: ({ event }) => {
      // Stryker disable next-line ConditionalExpression: narrows the event's type; only OPERATOR_RETRY is guarded by it
      if (event.type !== 'OPERATOR_RETRY') return false;
      return event.destinationCorrected;
    },
  },
  actions: {
    emit: byTheHook as (_: unknown, params: RefundEmitParams) => void,
    schedule: byTheHook as (_: unknown, params: RefundScheduleParams) => void,
    post: byTheHook as (_: unknown, params: PostParams) => void,
    recordDispatch: assign({
      processorReference: ({ event }) =>
        // Stryker disable next-line ConditionalExpression: narrows the event's type; only DISPATCHED runs it
        event.type === 'DISPATCHED' ? (event.processorReference ?? null) : null,
    }),
    recordFailure: assign({
      // Stryker disable next-line ConditionalExpression: narrows the event's type; only FAILED runs it
      failureReason: ({ event }) => (event.type === 'FAILED' ? event.failureReason : null),
    }),
    // A new attempt starts clean; the attempt number and destination snapshot live on the row.
    startAttempt: assign({ processorReference: null, failureReason: null }),
  },
}).createMachine({
  id: 'refund',
  description: "Returning a failed payout's money to the refund destination the merchant registered.",
  initial: 'PENDING',
  context: { processorReference: null, failureReason: null },
  // Root entry runs once, when the refund is raised; a retry re-enters PENDING without it.
  // The contract lists payout.refunded before refund.created, so the merchant sees them in that order.
  entry: [
    { type: 'emit', params: { event: 'payout.refunded' } },
    { type: 'emit', params: { event: 'refund.created' } },
    { type: 'schedule', params: { task: 'DISPATCH_REFUND' } },
  ],
  states: {
    PENDING: {
      description:
        "The refund is recorded and being sent to the merchant's destination, on its bank or chain, under a reference of ours that is never paid twice. The money is still in the payout's account; no fee has been kept yet.",
      meta: { money: 'WITH_US' },
      on: {
        DISPATCHED: {
          target: 'PROCESSING',
          description:
            'The bank or chain accepts the refund transfer: the service keeps the refund fee ({REFUND_FEE}) and the rest is on its way.',
          meta: { by: ['BANK_OR_CHAIN'] },
          actions: [
            'recordDispatch',
            { type: 'emit', params: { event: 'refund.processing' } },
            { type: 'post', params: { flow: 'SENT' } },
          ],
        },
        FAILED: {
          target: 'FAILED',
          description:
            'The bank or chain refuses the refund, or stays unreachable for {REFUND_MAX_ATTEMPTS} tries.',
          meta: { by: ['BANK_OR_CHAIN', 'SYSTEM'] },
          actions: ['recordFailure', { type: 'emit', params: { event: 'refund.failed' } }],
        },
      },
    },
    PROCESSING: {
      description:
        "The refund, less the refund fee the service kept, is on its way over the bank or chain to the merchant's destination and not yet confirmed.",
      meta: { money: 'ON_ITS_WAY_BACK' },
      on: {
        CONFIRMED: {
          target: 'SUCCESSFUL',
          description: "The bank or chain confirms that the money reached the merchant's destination.",
          meta: { by: ['BANK_OR_CHAIN'] },
          actions: [
            { type: 'emit', params: { event: 'refund.successful' } },
            { type: 'post', params: { flow: 'DELIVERED' } },
          ],
        },
        FAILED: {
          target: 'FAILED',
          description:
            'The bank or chain reports that the refund failed on its way: the money and the refund fee are back in the payout’s account.',
          meta: { by: ['BANK_OR_CHAIN'] },
          actions: [
            'recordFailure',
            { type: 'emit', params: { event: 'refund.failed' } },
            { type: 'post', params: { flow: 'BOUNCED' } },
          ],
        },
      },
    },
    FAILED: {
      description:
        'The refund did not reach the merchant. The money, refund fee included, is in the payout’s account (back, or it never left) and waits for the merchant to correct its refund destination and for an operator to retry.',
      meta: { money: 'HELD_FOR_PERSON' },
      on: {
        OPERATOR_RETRY: {
          guard: 'destinationCorrected',
          target: 'PENDING',
          description:
            "An operator retries the refund to the merchant's corrected destination: the same refund, a new attempt.",
          meta: { by: ['OPERATOR_FOUR_EYES'] },
          actions: ['startAttempt', { type: 'schedule', params: { task: 'DISPATCH_REFUND' } }],
        },
      },
    },
    SUCCESSFUL: {
      type: 'final',
      description:
        'The money is back with the merchant: what the payout received less the refund fee, which the service kept ({REFUND_FEE}, never more than was received).',
      meta: { money: 'BACK_WITH_MERCHANT' },
    },
  },
});

/** How a refund begins, and its guard in plain words. */
export const refundTexts = {
  holdsMoney: true,
  created: {
    description:
      "Raised within a minute of a payout failing after the merchant's money arrived. Without a refund destination the money is held instead, until the merchant registers one and an operator raises the refund. An operator also raises one, under four eyes, to return what a merchant overpaid for a payout that succeeded.",
    by: ['SYSTEM', 'OPERATOR_FOUR_EYES'],
  },
  guards: {
    destinationCorrected: {
      holds: 'the merchant has registered a different refund destination since the refund failed',
      fails: "the merchant's refund destination is still the one that failed",
    },
  },
} as const satisfies MachineTexts<typeof refundMachine>;
