import type { MachineAction } from '#src/engine/engine.ts';
import { accountName } from '#src/ledger/chart.ts';
import { type Flow, transitionLedger } from '#src/ledger/flows.ts';
import type { LedgerTransaction } from '#src/ledger/ledger.ts';
import type { Decimal } from '#src/lib/money.ts';

/**
 * The money an outflow's transitions move (`post` actions of `machines/outflow.machine.ts`): an
 * accepted attempt converts the payout's money at its locked rate and hands the destination amount
 * to the processor; success pays it to the beneficiary; a failed accepted attempt brings it back
 * and undoes the conversion. An attempt refused before acceptance moved nothing.
 */
export const OUTFLOW_FLOWS = [
  {
    cause: 'outflow',
    name: 'SENT',
    description:
      'The processor accepts the attempt: the payout’s money is converted at the locked rate and the destination amount is with the processor.',
    legs: [
      {
        from: 'payout',
        to: 'conversion',
        amount: 'converted',
        currency: 'settlement',
        movement: { type: 'conversion', on: 'from' },
      },
      {
        from: 'conversion',
        to: 'payout',
        amount: 'destination',
        currency: 'destination',
        movement: { type: 'conversion', on: 'to' },
      },
      { from: 'payout', to: 'processor', amount: 'destination', currency: 'destination' },
    ],
  },
  {
    cause: 'outflow',
    name: 'PAID',
    description: 'The processor paid the beneficiary: the money has left the service.',
    legs: [
      {
        from: 'processor',
        to: 'beneficiaries',
        amount: 'destination',
        currency: 'destination',
        movement: { type: 'paid_out', on: 'from' },
      },
    ],
  },
  {
    cause: 'outflow',
    name: 'CAME_BACK',
    description:
      'The processor failed an attempt it had accepted: the money is back with the payout and the conversion is undone.',
    legs: [
      { from: 'processor', to: 'payout', amount: 'destination', currency: 'destination' },
      {
        from: 'payout',
        to: 'conversion',
        amount: 'destination',
        currency: 'destination',
        movement: { type: 'conversion', on: 'from' },
      },
      {
        from: 'conversion',
        to: 'payout',
        amount: 'converted',
        currency: 'settlement',
        movement: { type: 'conversion', on: 'to' },
      },
    ],
  },
] as const satisfies readonly Flow[];

/** What the ledger needs to know of an attempt and its payout. */
export interface OutflowMoney {
  id: string;
  tenantId: string;
  payoutId: string;
  processor: string;
  settlementCurrency: string;
  /** The settlement amount without its fees: what the locked rate converts. */
  converted: Decimal;
  destinationAmount: Decimal;
  destinationCurrency: string;
}

/** The ledger transactions of one outflow transition (none when it moves no money). */
export function outflowLedger(
  outflow: OutflowMoney,
  step: { actions: readonly MachineAction[]; from: string; to: string },
  event: string,
  at: Date,
): LedgerTransaction[] {
  const tenant = outflow.tenantId;
  return transitionLedger({
    flows: OUTFLOW_FLOWS,
    cause: 'outflow',
    causeId: outflow.id,
    actions: step.actions,
    event,
    from: step.from,
    to: step.to,
    facts: () => ({
      accounts: {
        payout: accountName('payout', { tenant, payout: outflow.payoutId }),
        conversion: accountName('conversion', {}),
        processor: accountName('processor', { processor: outflow.processor }),
        beneficiaries: accountName('beneficiaries', {}),
      },
      amounts: { converted: outflow.converted, destination: outflow.destinationAmount },
      currencies: { settlement: outflow.settlementCurrency, destination: outflow.destinationCurrency },
    }),
    tenantId: tenant,
    payoutId: outflow.payoutId,
    at,
  });
}
