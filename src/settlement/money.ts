import type { Flow } from '#src/ledger/flows.ts';

/**
 * The money an inflow's transitions move (`post` actions of `machines/inflow.machine.ts`): it
 * enters the books when it counts (confirmed on its chain, or credited by the bank), in suspense
 * until matching or an operator attributes it to a payout, or an operator records it returned.
 */
export const INFLOW_FLOWS = [
  {
    cause: 'inflow',
    name: 'RECEIVED',
    description:
      'Money arrives on a deposit address or a virtual account and counts: it is with us, attributed to nobody yet.',
    legs: [
      { from: ['depositAddress', 'virtualAccount'], to: 'suspense', amount: 'amount', currency: 'currency' },
    ],
  },
  {
    cause: 'inflow',
    name: 'ATTRIBUTED',
    description:
      'Matching (or an operator) attributes the money to a payout: it becomes that payout’s money.',
    legs: [
      {
        from: 'suspense',
        to: 'payout',
        amount: 'amount',
        currency: 'currency',
        movement: { type: 'money_received', on: 'to' },
      },
    ],
  },
  {
    cause: 'inflow',
    name: 'RETURNED',
    description: 'An operator records that money attributed to nobody went back to the merchant.',
    legs: [{ from: 'suspense', to: 'merchant', amount: 'amount', currency: 'currency' }],
  },
] as const satisfies readonly Flow[];
