import type { MachineAction } from '#src/engine/engine.ts';
import { accountName } from '#src/ledger/chart.ts';
import { type Flow, type FlowFacts, transitionLedger } from '#src/ledger/flows.ts';
import type { LedgerTransaction } from '#src/ledger/ledger.ts';
import type { Decimal } from '#src/lib/money.ts';

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

/** What the ledger needs to know of an inflow. */
export interface InflowMoney {
  id: string;
  tenantId: string;
  rail: 'CRYPTO' | 'BANK_TRANSFER';
  /** TRON or BSC on the crypto rail. */
  network: string | null;
  toAccount: string;
  amount: Decimal;
  currency: string;
  /** The payout the money is (being) attributed to. */
  payoutId: string | null;
}

/** The accounts and amounts of an inflow's flows. */
export function inflowFacts(inflow: InflowMoney): FlowFacts {
  const tenant = inflow.tenantId;
  return {
    accounts: {
      ...(inflow.rail === 'CRYPTO'
        ? {
            depositAddress: accountName('depositAddress', {
              network: inflow.network ?? 'UNKNOWN',
              address: inflow.toAccount,
            }),
          }
        : { virtualAccount: accountName('virtualAccount', { account_number: inflow.toAccount }) }),
      suspense: accountName('suspense', { tenant }),
      ...(inflow.payoutId ? { payout: accountName('payout', { tenant, payout: inflow.payoutId }) } : {}),
      merchant: accountName('merchant', { tenant }),
    },
    amounts: { amount: inflow.amount },
    currencies: { currency: inflow.currency },
  };
}

/** The ledger transactions of one inflow transition (none when it moves no money). */
export function inflowLedger(
  inflow: InflowMoney,
  step: { actions: readonly MachineAction[]; from: string; to: string },
  event: string,
  at: Date,
  approvalId: string | null = null,
): LedgerTransaction[] {
  return transitionLedger({
    flows: INFLOW_FLOWS,
    cause: 'inflow',
    causeId: inflow.id,
    actions: step.actions,
    event,
    from: step.from,
    to: step.to,
    facts: () => inflowFacts(inflow),
    tenantId: inflow.tenantId,
    payoutId: inflow.payoutId,
    at,
    approvalId,
  });
}
