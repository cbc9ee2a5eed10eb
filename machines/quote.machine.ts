import { assign, setup } from 'xstate';

/**
 * The life of a quote. A quote freezes a price until `expiresAt`; the merchant may accept it
 * (optional) and a payout may use it once. Time enters only through the `now` of each event, so
 * the machine stays pure: the same snapshot and event always give the same result.
 *
 *   PENDING --ACCEPT [isUnexpired]--> ACCEPTED
 *   PENDING | ACCEPTED --USE [isUnexpired]--> USED (final)
 *   PENDING | ACCEPTED --EXPIRE [hasLapsed]--> EXPIRED (final)
 *
 * Anything else (a late ACCEPT or USE, an early EXPIRE, any event in a final state) is ignored:
 * the snapshot comes back unchanged and the caller decides what to answer.
 */

export type QuoteStatus = 'PENDING' | 'ACCEPTED' | 'USED' | 'EXPIRED';

export interface QuoteContext {
  /** ISO-8601 instant from which the quote no longer holds. */
  expiresAt: string;
  /** The payout that used the quote, once USED. */
  payoutId: string | null;
}

export interface QuoteInput {
  expiresAt: string;
}

export type QuoteEvent =
  | { type: 'ACCEPT'; now: Date }
  | { type: 'USE'; payoutId: string; now: Date }
  | { type: 'EXPIRE'; now: Date };

const lapsed = (context: QuoteContext, now: Date): boolean => now.getTime() >= Date.parse(context.expiresAt);

export const quoteMachine = setup({
  types: {
    context: {} as QuoteContext,
    events: {} as QuoteEvent,
    input: {} as QuoteInput,
  },
  guards: {
    isUnexpired: ({ context, event }) => !lapsed(context, event.now),
    hasLapsed: ({ context, event }) => lapsed(context, event.now),
  },
  actions: {
    recordPayout: assign({
      payoutId: ({ event }) => (event.type === 'USE' ? event.payoutId : null),
    }),
  },
}).createMachine({
  id: 'quote',
  initial: 'PENDING',
  context: ({ input }) => ({ expiresAt: input.expiresAt, payoutId: null }),
  states: {
    PENDING: {
      on: {
        ACCEPT: { guard: 'isUnexpired', target: 'ACCEPTED' },
        USE: { guard: 'isUnexpired', target: 'USED', actions: 'recordPayout' },
        EXPIRE: { guard: 'hasLapsed', target: 'EXPIRED' },
      },
    },
    ACCEPTED: {
      on: {
        USE: { guard: 'isUnexpired', target: 'USED', actions: 'recordPayout' },
        EXPIRE: { guard: 'hasLapsed', target: 'EXPIRED' },
      },
    },
    USED: { type: 'final' },
    EXPIRED: { type: 'final' },
  },
});
