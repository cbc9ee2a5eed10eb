import type { Flow } from '#src/ledger/flows.ts';

/**
 * The money a payout's own transitions move (`post` actions of `machines/payout.machine.ts`):
 * when it succeeds, the fees are kept and what the merchant paid beyond the amount asked for is
 * set aside for it. Conversion and the processor are the outflow's (`src/dispatch/money.ts`).
 */
export const PAYOUT_FLOWS = [
  {
    cause: 'payout',
    name: 'SETTLED',
    description:
      "The payout succeeded: its platform and network fees are the service's, and any overpayment is set aside as the merchant's, to be returned.",
    legs: [
      {
        from: 'payout',
        to: 'platformFee',
        amount: 'platformFee',
        currency: 'settlement',
        movement: { type: 'platform_fee', on: 'from' },
      },
      {
        from: 'payout',
        to: 'networkFee',
        amount: 'networkFee',
        currency: 'settlement',
        movement: { type: 'network_fee', on: 'from' },
      },
      {
        from: 'payout',
        to: 'overpayments',
        amount: 'overpayment',
        currency: 'settlement',
        movement: { type: 'overpayment_set_aside', on: 'from' },
      },
    ],
  },
] as const satisfies readonly Flow[];
