import { z } from 'zod';
import { iso, moneyJson, moneyOut, timestampOut } from '#src/http/schemas.ts';
import type { Inflow } from './entities.ts';

/** The Inflow resource. Payer identity (name, account, address) is deliberately absent. */
export const inflowOut = z.object({
  id: z.string(),
  rail: z.enum(['CRYPTO', 'BANK_TRANSFER']),
  provider_name: z.string(),
  network: z.string().nullable(),
  amount: moneyOut,
  currency: z.string(),
  confirmations_received: z.number().int(),
  is_matched: z.boolean(),
  matched_at: timestampOut.nullable(),
  payout_id: z.string().nullable(),
  is_underpaid: z.boolean(),
  overpayment_amount: moneyOut,
  overpayment_currency: z.string(),
  created_at: timestampOut,
});

export function toInflowResource(i: Inflow): z.input<typeof inflowOut> {
  return {
    id: i.id,
    rail: i.rail,
    provider_name: i.providerName,
    network: i.network ?? null,
    amount: moneyJson(i.amount),
    currency: i.currency,
    confirmations_received: i.confirmationsReceived,
    is_matched: i.isMatched,
    matched_at: iso(i.matchedAt ?? null),
    payout_id: i.payout?.id ?? null,
    is_underpaid: i.isUnderpaid,
    overpayment_amount: moneyJson(i.overpaymentAmount),
    overpayment_currency: i.currency,
    created_at: iso(i.createdAt),
  };
}
