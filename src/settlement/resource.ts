import { z } from 'zod';
import { documentedAs, iso, moneyJson, moneyOut, railSchema, timestampOut } from '#src/http/schemas.ts';
import type { Inflow } from './entities.ts';

/** The Inflow resource. Payer identity (name, account, address) is deliberately absent. */
export const inflowOut = z
  .object({
    id: z.string(),
    rail: railSchema,
    provider_name: z.string(),
    network: z.string().nullable(),
    amount: moneyOut,
    currency: documentedAs('SettlementCurrency'),
    confirmations_received: z.number().int().describe('Network confirmations so far (crypto).'),
    is_matched: z.boolean().describe('Attributed to a payout whose instruction it covers.'),
    matched_at: timestampOut.nullable(),
    payout_id: z.string().nullable(),
    is_underpaid: z.boolean().describe('Held: does not cover any open instruction.'),
    overpayment_amount: moneyOut.describe(
      'What arrived beyond the expected amount; returned with any later refund.',
    ),
    overpayment_currency: documentedAs('SettlementCurrency'),
    created_at: timestampOut,
  })
  .meta({
    id: 'Inflow',
    description: 'A settlement received from the merchant. Payer identity is never shown.',
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
