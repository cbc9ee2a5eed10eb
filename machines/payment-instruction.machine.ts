import { assign, setup } from 'xstate';
import type { MachineTexts, StateMeta, TransitionMeta } from './texts.ts';

/**
 * The `payment_status` of a payment instruction: what the merchant was asked to pay, and whether
 * that was paid in full before `expiresAt`. Time enters only through the `now` of each event.
 *
 *   UNPAID --PAYMENT_MATCHED--> PAID (final; records paidAt)
 *   UNPAID --EXPIRE [hasLapsed]--> EXPIRED (final)
 *
 * PAYMENT_MATCHED is sent once settlement matching has attributed enough money to cover the
 * instruction; an underpaid (held) instruction stays UNPAID. Whether late money still counts is
 * matching's decision (money that arrived before expiry may be confirmed or found after it), so the
 * match is not guarded by time here; and the expiry sweep sends EXPIRE only once the instruction's
 * rail has been read past `expiresAt` (`src/instructions/service.ts`). An early EXPIRE, and anything in a final state, is ignored: the
 * snapshot comes back as the very same object and the engine writes nothing.
 *
 * Every state and transition carries its plain-language text (`description`, `meta`: see
 * `./texts.ts`); `paymentInstructionTexts` at the end holds the rest.
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
    meta: {} as StateMeta,
    transitionMeta: {} as TransitionMeta,
  },
  guards: {
    hasLapsed: ({ context, event }) => event.now.getTime() >= Date.parse(context.expiresAt),
  },
  actions: {
    recordPaid: assign({ paidAt: ({ event }) => event.now.toISOString() }),
  },
}).createMachine({
  id: 'paymentInstruction',
  description:
    'What the merchant was asked to pay, where and by when, and whether it was paid in full in time.',
  initial: 'UNPAID',
  context: ({ input }) => ({ expiresAt: input.expiresAt, paidAt: null }),
  states: {
    UNPAID: {
      description:
        'The merchant has been asked to pay and the full amount has not arrived. Money short of it leaves the instruction unpaid, and its payout held.',
      meta: { money: 'NOT_YET_RECEIVED' },
      on: {
        PAYMENT_MATCHED: {
          target: 'PAID',
          actions: 'recordPaid',
          description:
            'Settlement matching assigns the full amount to the instruction. Money that arrived before the deadline counts, however late its confirmations complete or the service finds it.',
          meta: { by: ['BANK_OR_CHAIN', 'OPERATOR_FOUR_EYES'] },
        },
        EXPIRE: {
          guard: 'hasLapsed',
          target: 'EXPIRED',
          description:
            "The deadline passes without the full amount. The sweep ends the instruction only once the service has read its rail past the deadline (the chain's blocks, the bank's statement) and no money that arrived in time is still being confirmed or matched.",
          meta: {
            by: ['SYSTEM'],
            causes: [
              {
                machine: 'payout',
                event: 'INSTRUCTION_EXPIRED',
                note: 'a held payout ignores it and stays held',
              },
            ],
          },
        },
      },
    },
    PAID: {
      type: 'final',
      description: 'The full amount arrived in time. From here on, the payout says where the money is.',
      meta: { money: 'WITH_US' },
    },
    EXPIRED: {
      type: 'final',
      description:
        'The deadline passed without the full amount. Money arriving later is not taken by this instruction: it is kept as an unmatched inflow for operators.',
      meta: { money: 'NOT_YET_RECEIVED' },
    },
  },
});

/** How an instruction begins, and its guard in plain words. */
export const paymentInstructionTexts = {
  holdsMoney: true,
  created: {
    description:
      'Issued for a payout once its price is locked: the amount, a USDT address or an NGN bank account, and the deadline.',
    by: ['SYSTEM'],
  },
  guards: {
    hasLapsed: {
      holds: "the instruction's lifetime, {PAYMENT_INSTRUCTION_TTL_MS} from its issue, has run out",
      fails: "the instruction's lifetime, {PAYMENT_INSTRUCTION_TTL_MS} from its issue, has not run out yet",
    },
  },
} as const satisfies MachineTexts<typeof paymentInstructionMachine>;
