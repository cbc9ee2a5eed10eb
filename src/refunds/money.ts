import type { MachineAction } from '#src/engine/engine.ts';
import { accountName } from '#src/ledger/chart.ts';
import { type Flow, transitionLedger } from '#src/ledger/flows.ts';
import type { LedgerTransaction } from '#src/ledger/ledger.ts';
import type { Decimal } from '#src/lib/money.ts';

/**
 * The money a refund's transitions move (`post` actions of `machines/refund.machine.ts`): sending
 * it keeps the refund's network fee and puts the rest on its way; confirmation delivers it to the
 * merchant; a refund that fails on its way brings both back to the payout, where it waits for an
 * operator's retry. A refund refused before it left moved nothing. The return of a successful
 * payout's overpayment first brings the excess back from the merchant's overpayments account to
 * the payout (OVERPAYMENT_TO_RETURN, as the refund is raised, naming the approval), and then
 * moves like any refund.
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
  {
    cause: 'refund',
    name: 'OVERPAYMENT_TO_RETURN',
    description:
      "A refund of kind OVERPAYMENT is raised by an operator's approved return: the excess a successful payout set aside for the merchant comes back to the payout, and the refund sends it (SENT, DELIVERED) to the merchant's refund destination.",
    legs: [
      {
        from: 'overpayments',
        to: 'payout',
        amount: 'overpayment',
        currency: 'currency',
        movement: { type: 'overpayment_set_aside', on: 'to' },
      },
    ],
  },
] as const satisfies readonly Flow[];

/** What the ledger needs to know of a refund. */
export interface RefundMoney {
  id: string;
  tenantId: string;
  payoutId: string;
  currency: string;
  /** TRON or BSC for a refund on a chain, BANK for one to a bank account. */
  rail: string;
  fee: Decimal;
  refund: Decimal;
}

/** The ledger transactions of one refund transition (none when it moves no money). */
export function refundLedger(
  refund: RefundMoney,
  step: { actions: readonly MachineAction[]; from: string; to: string },
  event: string,
  at: Date,
): LedgerTransaction[] {
  const tenant = refund.tenantId;
  return transitionLedger({
    flows: REFUND_FLOWS,
    cause: 'refund',
    causeId: refund.id,
    actions: step.actions,
    event,
    from: step.from,
    to: step.to,
    facts: () => ({
      accounts: {
        payout: accountName('payout', { tenant, payout: refund.payoutId }),
        refundFee: accountName('refundFee', {}),
        refundRail: accountName('refundRail', { rail: refund.rail }),
        merchant: accountName('merchant', { tenant }),
      },
      amounts: { fee: refund.fee, refund: refund.refund },
      currencies: { currency: refund.currency },
    }),
    tenantId: tenant,
    payoutId: refund.payoutId,
    at,
  });
}
