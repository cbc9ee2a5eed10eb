import { z } from 'zod';
import { documentedAs, iso, moneyJson, moneyOut, networkSchema, timestampOut } from '#src/http/schemas.ts';
import { refundDestinationTypeSchema } from '#src/refund-destinations/schemas.ts';
import type { Refund } from './entities.ts';

export const REFUND_STATUSES = ['PENDING', 'PROCESSING', 'SUCCESSFUL', 'FAILED'] as const;

/** The Refund resource: the destination appears masked only. */
export const refundStatusSchema = z.enum(REFUND_STATUSES).meta({
  id: 'RefundStatus',
  description:
    'PENDING → PROCESSING → SUCCESSFUL, or FAILED (waits for an operator and a corrected destination).',
});

export const refundOut = z
  .object({
    id: z.string(),
    payout_id: z
      .string()
      .describe(
        'The payout whose money this refund returns: a failed one, or a successful one that was overpaid.',
      ),
    kind: z
      .enum(['SETTLEMENT', 'OVERPAYMENT'])
      .describe(
        'SETTLEMENT: all a failed payout received, less the fee. OVERPAYMENT: what a successful payout received beyond the amount asked for, which it set aside, less the fee.',
      ),
    inflow_id: z.string().nullable().describe('The settlement whose money is sent back.'),
    status: refundStatusSchema,
    received_amount: moneyOut.describe(
      'What it returns before the fee: all that arrived, overpayment included (SETTLEMENT), or the overpayment alone (OVERPAYMENT).',
    ),
    received_currency: documentedAs('SettlementCurrency'),
    network_fee_amount: moneyOut.describe('Cost of the return transfer.'),
    network_fee_currency: documentedAs('SettlementCurrency'),
    refund_amount: moneyOut.describe('received_amount minus network_fee_amount.'),
    refund_currency: documentedAs('SettlementCurrency'),
    destination_type: refundDestinationTypeSchema,
    destination_provider_name: z.string(),
    destination_masked: z.string().describe('Masked account number or address.'),
    destination_network: networkSchema.nullable(),
    processor_reference: z.string().nullable(),
    failure_reason: z.string().nullable(),
    attempt_number: z.number().int(),
    dispatched_at: timestampOut.nullable(),
    settled_at: timestampOut.nullable(),
    created_at: timestampOut,
  })
  .meta({
    id: 'Refund',
    description:
      'The return to the merchant of a failed payout’s settlement, or of a successful payout’s overpayment.',
  });

export function toRefundResource(r: Refund): z.input<typeof refundOut> {
  return {
    id: r.id,
    payout_id: r.payout.id,
    kind: r.kind,
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
