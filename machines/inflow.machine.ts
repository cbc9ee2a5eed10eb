import { assign, setup } from 'xstate';
import type { MachineTexts, PostParams, StateMeta, TransitionMeta } from './texts.ts';

/**
 * An inflow: money a merchant sent to one of the service's accounts (a chain transfer to a deposit
 * address, a bank credit to a virtual account), from the moment the rail reports it until it is
 * attributed to a payout, handed to operations, or handed to a failed payout's refund. Settlement
 * matching decides which instruction money belongs to (`src/settlement/rules.ts`); this machine
 * decides what that verdict does to the inflow, and what operators may still do with it.
 *
 *   PENDING_CONFIRMATION --(always) [needsNoConfirmations]--> CONFIRMED (a bank credit)
 *   PENDING_CONFIRMATION --CONFIRMATIONS [hasConfirmations]--> CONFIRMED
 *   CONFIRMED --ATTRIBUTED [coversPayout]--> MATCHED (final)
 *   CONFIRMED --ATTRIBUTED--> HELD.attributed (short of the payout's expected amount)
 *   CONFIRMED --BELOW_EVERY_OPEN_INSTRUCTION--> HELD.unattributed
 *   CONFIRMED --NO_OPEN_INSTRUCTION--> UNMATCHED (late, repeated, or nothing was open)
 *   HELD.attributed --PAYOUT_COVERED--> MATCHED (a later inflow completed the payout)
 *   HELD.attributed --PAYOUT_FAILED--> FOR_REFUND (final: the payout failed, its refund returns the money)
 *   HELD.unattributed | UNMATCHED --OPERATOR_ATTRIBUTE [coversPayout]--> MATCHED
 *   HELD.unattributed | UNMATCHED --OPERATOR_ATTRIBUTE--> HELD.attributed
 *   HELD.unattributed | UNMATCHED --OPERATOR_RETURN--> RETURNED (final)
 *
 * Money held against a payout (HELD.attributed) is that payout's: no operator may attribute it
 * elsewhere or return it by hand. It leaves HELD with its payout: MATCHED when the payout is
 * covered, FOR_REFUND when the payout fails (in the transaction that fails it,
 * `src/settlement/payout-failure.ts`), after which the payout's refund says where the money is. So
 * every HELD inflow either waits for an operator (attributed to nobody) or belongs to a payout still
 * waiting for money. Any other event is ignored: the snapshot comes back as the very same object,
 * and the caller treats that as a refusal. Besides recording its payout, it asks for one action,
 * `post`: the money a transition moves
 * (the ledger's flows in `src/settlement/money.ts`): RECEIVED when the money counts (into
 * suspense), ATTRIBUTED when it becomes a payout's, RETURNED when an operator records it returned.
 * The payout's machine records the settlement, and the payout's failure.
 *
 * Every state and transition carries its plain-language text (`description`, `meta`: see
 * `./texts.ts`); `inflowTexts` at the end holds the rest.
 */

export type InflowStatus =
  | 'PENDING_CONFIRMATION'
  | 'CONFIRMED'
  | 'MATCHED'
  | 'HELD'
  | 'UNMATCHED'
  | 'RETURNED'
  | 'FOR_REFUND';

export interface InflowContext {
  /** Confirmations the rail requires before the money counts (frozen when recorded; 0 for a bank credit). */
  confirmationsRequired: number;
  /** The payout the money is attributed to, once it is. */
  payoutId: string | null;
}

export interface InflowInput {
  confirmationsRequired: number;
}

/** What attributing money to a payout does: it covers the payout's expected amount, or falls short. */
export interface Attribution {
  payoutId: string;
  /** Everything attributed to the payout, this inflow included, reaches its expected amount. */
  covers: boolean;
}

export type InflowEvent =
  | { type: 'CONFIRMATIONS'; received: number; now: Date }
  | ({ type: 'ATTRIBUTED'; now: Date } & Attribution)
  | { type: 'BELOW_EVERY_OPEN_INSTRUCTION'; now: Date }
  | { type: 'NO_OPEN_INSTRUCTION'; now: Date }
  | { type: 'PAYOUT_COVERED'; now: Date }
  | { type: 'PAYOUT_FAILED'; now: Date }
  | ({ type: 'OPERATOR_ATTRIBUTE'; now: Date } & Attribution)
  | { type: 'OPERATOR_RETURN'; now: Date };

/** What an operator's attribution moves: the payout takes the money, and its instruction if covered. */
const operatorAttributes = {
  by: ['OPERATOR_FOUR_EYES'],
  causes: [{ machine: 'payout', event: 'SETTLEMENT_CONFIRMED', note: 'with triggered_by ADMIN' }],
} as const satisfies TransitionMeta;

/**
 * Which money an operator handles, in words, for the texts of the transitions below. Named
 * `...Texts` so that mutation testing leaves these words out (test/mutation/ignore-texts.js).
 */
const heldMoneyTexts = {
  unattributed: 'the held money, smaller than every open instruction,',
  unmatched: 'the late or unexpected money',
} as const;

/**
 * An operator attributes money that matching could not (`what`: which money, in words) to a payout
 * still waiting for money.
 */
const operatorAttribution = (what: string) =>
  [
    {
      guard: 'coversPayout',
      target: '#inflow.MATCHED',
      actions: ['recordPayout', { type: 'post', params: { flow: 'ATTRIBUTED' } }],
      description: `An operator, having found whose it is, assigns ${what} to a payout still waiting for money, and with it the payout has everything it asked for: the money is matched and the payout moves on to be paid out.`,
      meta: {
        ...operatorAttributes,
        causes: [
          ...operatorAttributes.causes,
          { machine: 'payment-instruction', event: 'PAYMENT_MATCHED', note: 'unless it already expired' },
        ],
      },
    },
    {
      target: '#inflow.HELD.attributed',
      actions: ['recordPayout', { type: 'post', params: { flow: 'ATTRIBUTED' } }],
      description: `An operator, having found whose it is, assigns ${what} to a payout still waiting for money, but the payout is still short: the money is held against that payout, which stays held for review.`,
      meta: operatorAttributes,
    },
  ] as const;

/** An operator records that money attributed to nobody went back to the merchant outside the service. */
const operatorReturn = (what: string) =>
  ({
    target: '#inflow.RETURNED',
    actions: { type: 'post', params: { flow: 'RETURNED' } },
    description: `An operator records that ${what} was sent back to the merchant outside the service, giving the return’s bank reference or transaction hash as evidence, and a second operator approves it. The reference is kept with the money’s record and the books record it as back with the merchant; the service itself sends nothing.`,
    meta: { by: ['OPERATOR_FOUR_EYES'] },
  }) as const;

export const inflowMachine = setup({
  types: {
    context: {} as InflowContext,
    events: {} as InflowEvent,
    input: {} as InflowInput,
    meta: {} as StateMeta,
    transitionMeta: {} as TransitionMeta,
  },
  guards: {
    needsNoConfirmations: ({ context }) => context.confirmationsRequired <= 0,
    hasConfirmations: ({ context, event }) =>
      // Stryker disable next-line ConditionalExpression: narrows the event's type; no other event carries a count
      event.type === 'CONFIRMATIONS' && event.received >= context.confirmationsRequired,
    coversPayout: ({ event }) => 'covers' in event && event.covers,
  },
  actions: {
    // Carried out by the code that applies the transition, from the returned action data.
    post: (() => {}) as (_: unknown, params: PostParams) => void,
    recordPayout: assign({
      payoutId: ({ context, event }) => ('payoutId' in event ? event.payoutId : context.payoutId),
    }),
  },
}).createMachine({
  id: 'inflow',
  description:
    "Money a merchant sent to one of our accounts: confirmed, matched to a payout, held, left to operators, or handed to a failed payout's refund.",
  initial: 'PENDING_CONFIRMATION',
  context: ({ input }) => ({ confirmationsRequired: input.confirmationsRequired, payoutId: null }),
  states: {
    PENDING_CONFIRMATION: {
      description:
        'A USDT transfer to one of our addresses is in a block but the network has not confirmed it enough times yet. It is on the chain, not yet ours: it is not in our books and does not count until it has its confirmations.',
      meta: { money: 'ON_THE_CHAIN' },
      always: {
        guard: 'needsNoConfirmations',
        target: 'CONFIRMED',
        actions: { type: 'post', params: { flow: 'RECEIVED' } },
        description: 'A bank credit is final when the bank makes it: it counts at once.',
        meta: { by: ['BANK_OR_CHAIN'] },
      },
      on: {
        CONFIRMATIONS: {
          guard: 'hasConfirmations',
          target: 'CONFIRMED',
          actions: { type: 'post', params: { flow: 'RECEIVED' } },
          description: 'Enough blocks have been added after the transfer: it counts.',
          meta: { by: ['BANK_OR_CHAIN'] },
        },
      },
    },
    CONFIRMED: {
      description:
        'The money is final on its rail and with us; settlement matching is about to decide which payout, if any, it pays.',
      meta: { money: 'WITH_US' },
      on: {
        ATTRIBUTED: [
          {
            guard: 'coversPayout',
            target: 'MATCHED',
            actions: ['recordPayout', { type: 'post', params: { flow: 'ATTRIBUTED' } }],
            description:
              'Matching assigns the money to the payout whose instruction it pays (exact amount, top-up, overpayment, or the virtual account), and the payout has everything it asked for.',
            meta: {
              by: ['SYSTEM'],
              causes: [
                { machine: 'payout', event: 'SETTLEMENT_CONFIRMED' },
                { machine: 'payment-instruction', event: 'PAYMENT_MATCHED' },
              ],
            },
          },
          {
            target: 'HELD.attributed',
            actions: ['recordPayout', { type: 'post', params: { flow: 'ATTRIBUTED' } }],
            description:
              'Matching assigns the money to a payout (its virtual account received it), but it is less than the payout asked for: the money is held against that payout, and the payout is held for review.',
            meta: { by: ['SYSTEM'], causes: [{ machine: 'payout', event: 'SETTLEMENT_CONFIRMED' }] },
          },
        ],
        BELOW_EVERY_OPEN_INSTRUCTION: {
          target: 'HELD.unattributed',
          description:
            "A USDT transfer is smaller than every amount the merchant's open instructions on that address ask for: it names no payout, so it is held for an operator.",
          meta: { by: ['SYSTEM'] },
        },
        NO_OPEN_INSTRUCTION: {
          target: 'UNMATCHED',
          description:
            'No instruction was open for the money when it arrived: it came after the deadline, repeats a payment already made, or nothing was asked for. It is kept for an operator, never lost.',
          meta: { by: ['SYSTEM'] },
        },
      },
    },
    HELD: {
      description: 'The money cannot be settled on its own: it waits for more money or for an operator.',
      initial: 'unattributed',
      states: {
        attributed: {
          description:
            'Held against one payout that is still short. It is that payout’s money: no operator can assign it elsewhere or return it by hand; a top-up completes the payout, or an operator fails the payout and its refund returns the money.',
          meta: { money: 'HELD_FOR_PERSON' },
          on: {
            PAYOUT_COVERED: {
              target: '#inflow.MATCHED',
              description:
                'Later money (a top-up, or money an operator assigns) brings the payout’s total to what it asked for: this money is matched with it.',
              meta: { by: ['SYSTEM', 'OPERATOR_FOUR_EYES'] },
            },
            PAYOUT_FAILED: {
              target: '#inflow.FOR_REFUND',
              description:
                'The payout fails (an operator decided the shortfall will not be made up), in the same transaction: the money is handed to the payout’s refund, which returns it to the merchant with everything else the payout received. The settlement job hands over the same way any money it finds still held against a payout that already failed.',
              meta: { by: ['OPERATOR_FOUR_EYES', 'SYSTEM'] },
            },
          },
        },
        unattributed: {
          description:
            'Held for an operator and tied to no payout: a USDT transfer smaller than every open instruction on its address.',
          meta: { money: 'HELD_FOR_PERSON' },
          on: {
            OPERATOR_ATTRIBUTE: operatorAttribution(heldMoneyTexts.unattributed),
            OPERATOR_RETURN: operatorReturn(heldMoneyTexts.unattributed),
          },
        },
      },
    },
    UNMATCHED: {
      description:
        'Late, repeated or unexpected money, tied to no payout: it waits for an operator to assign it to a payout still waiting for money, or to record that it went back to the merchant.',
      meta: { money: 'HELD_FOR_PERSON' },
      on: {
        OPERATOR_ATTRIBUTE: operatorAttribution(heldMoneyTexts.unmatched),
        OPERATOR_RETURN: operatorReturn(heldMoneyTexts.unmatched),
      },
    },
    MATCHED: {
      type: 'final',
      description:
        'The money is assigned to its payout and covers it. From here on, the payout says where it is.',
      meta: { money: 'WITH_US' },
    },
    RETURNED: {
      type: 'final',
      description:
        'An operator recorded that the money went back to the merchant outside the service; the return’s bank reference or transaction hash, which a second operator approved, is its evidence.',
      meta: { money: 'BACK_WITH_MERCHANT' },
    },
    // WITH_US, as MATCHED: where the money is when the inflow's part ends. The refund owns it from
    // there and its states say when the money leaves us; this final state never changes again.
    FOR_REFUND: {
      type: 'final',
      description:
        'The payout the money was held against failed: the money goes back to the merchant with that payout’s refund, and nobody decides anything more about this inflow. It is with us when it comes here; from here on, the refund says where it is (on its way, back with the merchant, or failed and waiting for an operator), and until the merchant has a refund destination the failed payout holds it for an operator.',
      meta: { money: 'WITH_US' },
    },
  },
});

/** How an inflow begins, and its guards in plain words. */
export const inflowTexts = {
  holdsMoney: true,
  created: {
    description:
      'Recorded once when the rail reports money to one of our accounts: the chain scan finds a transfer to a deposit address, or the bank notifies (or its statement lists) a credit to a virtual account.',
    by: ['BANK_OR_CHAIN'],
  },
  guards: {
    needsNoConfirmations: {
      holds: 'the money needs no confirmations (a bank credit)',
      fails: 'the money needs confirmations from its network (a USDT transfer)',
    },
    hasConfirmations: {
      holds:
        'the transfer has the confirmations its network requires ({CONFIRMATIONS_TRON} on TRON, {CONFIRMATIONS_BSC} on BSC, as when it was recorded)',
      fails: 'the transfer does not have the confirmations its network requires yet',
    },
    coversPayout: {
      holds: 'everything assigned to the payout, this money included, reaches the amount it asked for',
      fails:
        'everything assigned to the payout, this money included, is still short of the amount it asked for',
    },
  },
} as const satisfies MachineTexts<typeof inflowMachine>;
