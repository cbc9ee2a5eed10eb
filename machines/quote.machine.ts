import { assign, setup } from 'xstate';
import type { MachineTexts, StateMeta, TransitionMeta } from './texts.ts';

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
 *
 * Every state and transition carries its plain-language text (`description`, `meta`: see
 * `./texts.ts`); `quoteTexts` at the end holds the rest.
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

/**
 * Using the quote, from either state that allows it. The text comes as `{ description }`, like
 * every other text, so that mutation testing leaves it out (test/mutation/ignore-texts.js).
 */
const use = ({ description }: { description: string }) =>
  ({
    guard: 'isUnexpired',
    target: 'USED',
    actions: 'recordPayout',
    description,
    meta: { by: ['MERCHANT'] },
  }) as const;

/** The price's time runs out: noticed when the quote is next read or used. */
const expire = ({ description }: { description: string }) =>
  ({
    guard: 'hasLapsed',
    target: 'EXPIRED',
    description,
    meta: { by: ['SYSTEM'] },
  }) as const;

export const quoteMachine = setup({
  types: {
    context: {} as QuoteContext,
    events: {} as QuoteEvent,
    input: {} as QuoteInput,
    meta: {} as StateMeta,
    transitionMeta: {} as TransitionMeta,
  },
  guards: {
    isUnexpired: ({ context, event }) => !lapsed(context, event.now),
    hasLapsed: ({ context, event }) => lapsed(context, event.now),
  },
  actions: {
    recordPayout: assign({
      // Stryker disable next-line ConditionalExpression: narrows the event's type; only USE runs it
      payoutId: ({ event }) => (event.type === 'USE' ? event.payoutId : null),
    }),
  },
}).createMachine({
  id: 'quote',
  description: 'A price frozen for a short time: the merchant may accept it, and one payout may use it.',
  initial: 'PENDING',
  context: ({ input }) => ({ expiresAt: input.expiresAt, payoutId: null }),
  states: {
    PENDING: {
      description: 'The price is offered to the merchant and holds until it expires.',
      on: {
        ACCEPT: {
          guard: 'isUnexpired',
          target: 'ACCEPTED',
          description: 'The merchant accepts the price (optional: a payout can use the quote without it).',
          meta: { by: ['MERCHANT'] },
        },
        USE: use({
          description:
            'The merchant creates a payout with the quote without accepting it first; the payout takes its price.',
        }),
        EXPIRE: expire({
          description:
            "The price's time runs out before the merchant accepted it; the service records it when the quote is next read or used.",
        }),
      },
    },
    ACCEPTED: {
      description: 'The merchant accepted the price; a payout may use it until it expires.',
      on: {
        USE: use({
          description:
            'The merchant creates a payout with the quote it accepted; the payout takes its price.',
        }),
        EXPIRE: expire({
          description:
            "The price's time runs out after the merchant accepted it, with no payout using it; the service records it when the quote is next read or used.",
        }),
      },
    },
    USED: {
      type: 'final',
      description: 'A payout uses the price; no other payout can.',
    },
    EXPIRED: {
      type: 'final',
      description: 'The price lapsed without being used.',
    },
  },
});

/** How a quote begins, and its guards in plain words. */
export const quoteTexts = {
  holdsMoney: false,
  created: {
    description: 'The merchant asks for a quote through the API; its price holds for {QUOTE_TTL_MS}.',
    by: ['MERCHANT'],
  },
  guards: {
    isUnexpired: {
      holds: "the quote's lifetime, {QUOTE_TTL_MS} from its issue, has not run out",
      fails: "the quote's lifetime, {QUOTE_TTL_MS} from its issue, has run out",
    },
    hasLapsed: {
      holds: "the quote's lifetime, {QUOTE_TTL_MS} from its issue, has run out",
      fails: "the quote's lifetime, {QUOTE_TTL_MS} from its issue, has not run out",
    },
  },
} as const satisfies MachineTexts<typeof quoteMachine>;
