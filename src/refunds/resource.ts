import { z } from 'zod';
import { iso, moneyJson, moneyOut, timestampOut } from '#src/http/schemas.ts';
import type { Refund } from './entities.ts';

export const REFUND_STATUSES = ['PENDING', 'PROCESSING', 'SUCCESSFUL', 'FAILED'] as const;

/** The Refund resource: the destination appears masked only. */
export const refundOut = z.object({
  id: z.string(),
  payout_id: z.string(),
  inflow_id: z.string().nullable(),
  status: z.enum(REFUND_STATUSES),
  received_amount: moneyOut,
  received_currency: z.string(),
  network_fee_amount: moneyOut,
  network_fee_currency: z.string(),
  refund_amount: moneyOut,
  refund_currency: z.string(),
  destination_type: z.enum(['BANK_ACCOUNT', 'CRYPTO_ADDRESS']),
  destination_provider_name: z.string(),
  destination_masked: z.string(),
  destination_network: z.enum(['TRON', 'BSC']).nullable(),
  processor_reference: z.string().nullable(),
  failure_reason: z.string().nullable(),
  attempt_number: z.number().int(),
  dispatched_at: timestampOut.nullable(),
  settled_at: timestampOut.nullable(),
  created_at: timestampOut,
});

export function toRefundResource(r: Refund): z.input<typeof refundOut> {
  return {
    id: r.id,
    payout_id: r.payout.id,
    inflow_id: r.inflow?.id ?? null,
    status: r.status,
    received_amount: moneyJson(r.receivedAmount),
    received_currency: r.receivedCurrency,
    network_fee_amount: moneyJson(r.networkFeeAmount),
    network_fee_currency: r.receivedCurrency,
    refund_amount: moneyJson(r.refundAmount),
    refund_currency: r.receivedCurrency,
    destination_type: r.destinationType,
    destination_provider_name: r.destinationProviderName,
    destination_masked: r.destinationMasked,
    destination_network: r.destinationNetwork ?? null,
    processor_reference: r.processorReference ?? null,
    failure_reason: r.failureReason ?? null,
    attempt_number: r.attemptNumber,
    dispatched_at: iso(r.dispatchedAt ?? null),
    settled_at: iso(r.settledAt ?? null),
    created_at: iso(r.createdAt),
  };
}
