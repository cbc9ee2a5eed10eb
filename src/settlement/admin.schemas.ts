import { z } from 'zod';
import { iso } from '#src/http/schemas.ts';
import type { Payout } from '#src/payouts/entities.ts';
import { INFLOW_STATES, type Inflow } from './entities.ts';

/** What operators see of inflows and payouts in `admin.settlement.*` and in proposals' results. */

export const adminInflowOut = z.object({
  id: z.string(),
  tenant_id: z.string(),
  state: z.enum(INFLOW_STATES),
  rail: z.enum(['CRYPTO', 'BANK_TRANSFER']),
  provider_name: z.string(),
  network: z.string().nullable(),
  amount: z.string(),
  currency: z.string(),
  /** Transaction hash or bank session id. */
  external_ref: z.string(),
  to_account: z.string(),
  payer_name: z.string().nullable(),
  payer_account: z.string().nullable(),
  confirmations_received: z.number().int(),
  is_matched: z.boolean(),
  is_underpaid: z.boolean(),
  payout_id: z.string().nullable(),
  /** Bank rail: the payout whose virtual account received the money, attributed or not. */
  account_payout_id: z.string().nullable(),
  overpayment_amount: z.string(),
  /** RETURNED: the return's bank reference or transaction hash the operator gave as evidence. */
  returned_reference: z.string().nullable(),
  matched_at: z.string().nullable(),
  /** When the rail says the money arrived (block time, bank credit time): what lateness is judged by. */
  arrived_at: z.string(),
  /** When the service recorded it. */
  created_at: z.string(),
});

export const payoutSummaryOut = z.object({
  id: z.string(),
  status: z.string(),
  received_amount: z.string(),
  settlement_amount: z.string(),
  settlement_currency: z.string(),
});

export function toAdminInflow(
  inflow: Inflow,
  accountPayoutId: string | null = null,
): z.output<typeof adminInflowOut> {
  return {
    id: inflow.id,
    tenant_id: inflow.tenant.id,
    state: inflow.state,
    rail: inflow.rail,
    provider_name: inflow.providerName,
    network: inflow.network ?? null,
    amount: inflow.amount.toFixed(),
    currency: inflow.currency,
    external_ref: inflow.externalRef,
    to_account: inflow.toAccount,
    payer_name: inflow.payerName ?? null,
    payer_account: inflow.payerAccount ?? null,
    confirmations_received: inflow.confirmationsReceived,
    is_matched: inflow.isMatched,
    is_underpaid: inflow.isUnderpaid,
    payout_id: inflow.payout?.id ?? null,
    account_payout_id: accountPayoutId,
    overpayment_amount: inflow.overpaymentAmount.toFixed(),
    returned_reference: inflow.returnedReference ?? null,
    matched_at: iso(inflow.matchedAt ?? null),
    arrived_at: iso(inflow.arrivedAt),
    created_at: iso(inflow.createdAt),
  };
}

export function toPayoutSummary(payout: Payout): z.output<typeof payoutSummaryOut> {
  return {
    id: payout.id,
    status: payout.status,
    received_amount: payout.receivedAmount.toFixed(),
    settlement_amount: payout.settlementAmount.toFixed(),
    settlement_currency: payout.settlementCurrency,
  };
}
