import type { Flow } from '#src/ledger/flows.ts';

/**
 * The money a refund's transitions move (`post` actions of `machines/refund.machine.ts`): sending
 * it keeps the refund's network fee and puts the rest on its way; confirmation delivers it to the
 * merchant; a refund that fails on its way brings both back to the payout, where it waits for an
 * operator's retry. A refund refused before it left moved nothing.
 */
export const REFUND_FLOWS = [
  {
    cause: 'refund',
    name: 'SENT',
    description:
      "The rail accepts the refund: its network fee is the service's and the rest is on its way to the merchant.",
    legs: [
      {
        from: 'payout',
        to: 'refundFee',
        amount: 'fee',
        currency: 'currency',
        movement: { type: 'refund_fee', on: 'from' },
      },
      { from: 'payout', to: 'refundRail', amount: 'refund', currency: 'currency' },
    ],
  },
  {
    cause: 'refund',
    name: 'DELIVERED',
    description:
      "The rail confirms the refund reached the merchant's destination: the money has left the service.",
    legs: [
      {
        from: 'refundRail',
        to: 'merchant',
        amount: 'refund',
        currency: 'currency',
        movement: { type: 'refunded', on: 'from' },
      },
    ],
  },
  {
    cause: 'refund',
    name: 'BOUNCED',
    description: 'The refund failed on its way: the money and its fee are back with the payout.',
    legs: [
      { from: 'refundRail', to: 'payout', amount: 'refund', currency: 'currency' },
      {
        from: 'refundFee',
        to: 'payout',
        amount: 'fee',
        currency: 'currency',
        movement: { type: 'refund_fee', on: 'to' },
      },
    ],
  },
] as const satisfies readonly Flow[];
