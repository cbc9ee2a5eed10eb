import type { MachineAction } from '#src/engine/engine.ts';
import { accountName } from '#src/ledger/chart.ts';
import { type Flow, transitionLedger } from '#src/ledger/flows.ts';
import type { LedgerTransaction } from '#src/ledger/ledger.ts';
import { Decimal } from '#src/lib/money.ts';

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

/** What the ledger needs to know of a payout for its own flows. */
export interface PayoutMoney {
  id: string;
  tenantId: string;
  settlementCurrency: string;
  settlementAmount: Decimal;
  platformFee: Decimal;
  networkFee: Decimal;
  /** Everything attributed to it so far. */
  received: Decimal;
}

/** The ledger transactions of one payout transition (none when it moves no money). */
export function payoutLedger(
  payout: PayoutMoney,
  step: { actions: readonly MachineAction[]; from: string; to: string },
  event: string,
  at: Date,
): LedgerTransaction[] {
  const tenant = payout.tenantId;
  return transitionLedger({
    flows: PAYOUT_FLOWS,
    cause: 'payout',
    causeId: payout.id,
    actions: step.actions,
    event,
    from: step.from,
    to: step.to,
    facts: () => ({
      accounts: {
        payout: accountName('payout', { tenant, payout: payout.id }),
        platformFee: accountName('platformFee', {}),
        networkFee: accountName('networkFee', {}),
        overpayments: accountName('overpayments', { tenant }),
      },
      amounts: {
        platformFee: payout.platformFee,
        networkFee: payout.networkFee,
        overpayment: Decimal.max(0, payout.received.minus(payout.settlementAmount)),
      },
      currencies: { settlement: payout.settlementCurrency },
    }),
    tenantId: tenant,
    payoutId: payout.id,
    at,
  });
}
