import { assign, setup } from 'xstate';

/**
 * The `payment_status` of a payment instruction: what the merchant was asked to pay, and whether
 * that was paid in full before `expiresAt`. Time enters only through the `now` of each event.
 *
 *   UNPAID --PAYMENT_MATCHED--> PAID (final; records paidAt)
 *   UNPAID --EXPIRE [hasLapsed]--> EXPIRED (final)
 *
 * PAYMENT_MATCHED is sent once settlement matching has attributed enough money to cover the
 * instruction; an underpaid (held) instruction stays UNPAID. Whether late money still counts is
 * matching's decision (a crypto transfer seen before expiry may confirm after it), so the match is
 * not guarded by time here. An early EXPIRE, and anything in a final state, is ignored: the
 * snapshot comes back as the very same object and the engine writes nothing.
 */

export type PaymentStatus = 'UNPAID' | 'PAID' | 'EXPIRED';

export interface PaymentInstructionContext {
  /** ISO-8601 instant from which the instruction no longer takes payments. */
  expiresAt: string;
  /** ISO-8601 instant at which the instruction was matched as paid. */
  paidAt: string | null;
}

export interface PaymentInstructionInput {
  expiresAt: string;
}

export type PaymentInstructionEvent = { type: 'PAYMENT_MATCHED'; now: Date } | { type: 'EXPIRE'; now: Date };

export const paymentInstructionMachine = setup({
  types: {
    context: {} as PaymentInstructionContext,
    events: {} as PaymentInstructionEvent,
    input: {} as PaymentInstructionInput,
  },
  guards: {
    hasLapsed: ({ context, event }) => event.now.getTime() >= Date.parse(context.expiresAt),
  },
  actions: {
    recordPaid: assign({ paidAt: ({ event }) => event.now.toISOString() }),
  },
}).createMachine({
  id: 'paymentInstruction',
  initial: 'UNPAID',
  context: ({ input }) => ({ expiresAt: input.expiresAt, paidAt: null }),
  states: {
    UNPAID: {
      on: {
        PAYMENT_MATCHED: { target: 'PAID', actions: 'recordPaid' },
        EXPIRE: { guard: 'hasLapsed', target: 'EXPIRED' },
      },
    },
    PAID: { type: 'final' },
    EXPIRED: { type: 'final' },
  },
});
