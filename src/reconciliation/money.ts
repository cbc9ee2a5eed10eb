import type { Flow } from '#src/ledger/flows.ts';

/**
 * The money an approved reconciliation resolution moves in the books (`BOOKED_RAIL`): the
 * difference between what a collection account's rail shows and what the books counted goes to
 * or comes from the rail's differences account, so that the collection account's balance is
 * again what the rail shows. Caused by the approval (its id is the cause). A credit the bank
 * reversed after it was attributed to a payout shows in that payout's statement (CREDIT_REVERSED);
 * any other difference is no merchant's.
 */
export const RECON_FLOWS = [
  {
    cause: 'approval',
    name: 'RAIL_SHOWED_MORE',
    description:
      'The rail shows more arriving on a collection account than the books counted (a credit the books never recorded, a larger amount): the difference is booked as received, owned by nobody yet.',
    legs: [
      {
        from: ['depositAddress', 'virtualAccount'],
        to: 'railDifferences',
        amount: 'difference',
        currency: 'currency',
      },
    ],
  },
  {
    cause: 'approval',
    name: 'RAIL_SHOWED_LESS',
    description:
      'The rail shows less on a collection account than the books counted (a credit the bank reversed, a smaller amount on the statement, a credit it never booked): the difference is booked as missing, for the service to recover or write off.',
    legs: [
      {
        from: 'railDifferences',
        to: ['depositAddress', 'virtualAccount'],
        amount: 'difference',
        currency: 'currency',
      },
    ],
  },
  {
    cause: 'approval',
    name: 'CREDIT_REVERSED',
    description:
      "The bank reversed a credit that was attributed to a payout: the money leaves the payout back to the collection account, as the rail shows (`reversed` in the merchant's statement), and the service advances it from the rail's differences account, so that the payout keeps what its state says it received (`reversal_covered`), for the service to recover or write off.",
    legs: [
      {
        from: 'payout',
        to: ['depositAddress', 'virtualAccount'],
        amount: 'difference',
        currency: 'currency',
        movement: { type: 'reversed', on: 'from' },
      },
      {
        from: 'railDifferences',
        to: 'payout',
        amount: 'difference',
        currency: 'currency',
        movement: { type: 'reversal_covered', on: 'to' },
      },
    ],
  },
  {
    cause: 'approval',
    name: 'PROCESSOR_RETURNED',
    description:
      "A payout the processor returned after success (REFUNDED_RETURN): the destination amount comes back from the beneficiaries to the payout and is converted back into what the payout received less any overpayment it set aside at its success; that overpayment comes back from the merchant's overpayments account, owed no more there, so that the refund returns everything received, once. The conversion account carries the difference (the fees the service had kept).",
    legs: [
      {
        from: 'beneficiaries',
        to: 'payout',
        amount: 'returned',
        currency: 'destination',
        movement: { type: 'returned', on: 'to' },
      },
      {
        from: 'payout',
        to: 'conversion',
        amount: 'returned',
        currency: 'destination',
        movement: { type: 'conversion', on: 'from' },
      },
      {
        from: 'conversion',
        to: 'payout',
        amount: 'refundable',
        currency: 'settlement',
        movement: { type: 'conversion', on: 'to' },
      },
      {
        from: 'overpayments',
        to: 'payout',
        amount: 'setAside',
        currency: 'settlement',
        movement: { type: 'overpayment_set_aside', on: 'to' },
      },
    ],
  },
] as const satisfies readonly Flow[];
