import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { iso, moneyJson, moneyOut, timestampOut } from '#src/http/schemas.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { PAYOUT_STATUSES, type Payout, StatusLog } from './entities.ts';

/** The Payout resource of the contract, the same in responses and in webhook payloads. */

export const instructionSummaryOut = z.object({
  id: z.string(),
  rail: z.enum(['CRYPTO', 'BANK_TRANSFER']),
  account_unique: z.string(),
  provider_name: z.string(),
  network: z.string().nullable(),
  expected_amount: moneyOut,
  expected_currency: z.string(),
  payment_status: z.enum(['UNPAID', 'PAID', 'EXPIRED']),
  expires_at: timestampOut,
  paid_at: timestampOut.nullable(),
});

export const instructionOut = instructionSummaryOut.extend({
  payout_id: z.string(),
  created_at: timestampOut,
});

export const statusLogOut = z.object({
  from_status: z.enum(PAYOUT_STATUSES).nullable(),
  to_status: z.enum(PAYOUT_STATUSES),
  triggered_by: z.enum(['SYSTEM', 'API', 'PROCESSOR_WEBHOOK', 'ADMIN']),
  reason_code: z.string(),
  reason_detail: z.record(z.string(), z.unknown()).nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  created_at: timestampOut,
});

export const payoutOut = z.object({
  id: z.string(),
  tenant_id: z.string(),
  status: z.enum(PAYOUT_STATUSES),
  merchant_reference: z.string().nullable(),
  notification_url: z.string().nullable(),
  destination_type: z.enum(['MOBILE_MONEY', 'BANK_ACCOUNT', 'CRYPTO_WALLET']),
  destination_country: z.string(),
  destination_currency: z.string(),
  destination_amount: moneyOut,
  destination_account_unique: z.string(),
  destination_provider_name: z.string(),
  destination_provider_code: z.string().nullable(),
  destination_account_name: z.string().nullable(),
  settlement_currency: z.string(),
  settlement_amount: moneyOut,
  exchange_rate: moneyOut,
  platform_fee_amount: moneyOut,
  platform_fee_currency: z.string(),
  network_fee_amount: moneyOut,
  network_fee_currency: z.string(),
  total_fee_amount: moneyOut,
  total_fee_currency: z.string(),
  is_refunded: z.boolean(),
  refund_reference: z.string().nullable(),
  payment_instruction: instructionSummaryOut.nullable(),
  status_timeline: z.array(statusLogOut),
  created_at: timestampOut,
  updated_at: timestampOut,
});
export type PayoutResource = z.input<typeof payoutOut>;

export function toInstructionSummary(i: PaymentInstruction): z.input<typeof instructionSummaryOut> {
  return {
    id: i.id,
    rail: i.rail,
    account_unique: i.accountUnique,
    provider_name: i.providerName,
    network: i.network ?? null,
    expected_amount: moneyJson(i.expectedAmount),
    expected_currency: i.expectedCurrency,
    payment_status: i.status,
    expires_at: iso(i.expiresAt),
    paid_at: iso(i.paidAt ?? null),
  };
}

export function toInstruction(i: PaymentInstruction, payoutId: string): z.input<typeof instructionOut> {
  return { ...toInstructionSummary(i), payout_id: payoutId, created_at: iso(i.createdAt) };
}

function toStatusLog(log: StatusLog): z.input<typeof statusLogOut> {
  return {
    from_status: log.fromStatus ?? null,
    to_status: log.toStatus,
    triggered_by: log.triggeredBy,
    reason_code: log.reasonCode,
    reason_detail: log.reasonDetail ?? null,
    metadata: log.metadata ?? null,
    created_at: iso(log.createdAt),
  };
}

export function toPayoutResource(
  payout: Payout,
  instruction: PaymentInstruction | null,
  timeline: StatusLog[],
): PayoutResource {
  const settlement = payout.settlementCurrency;
  return {
    id: payout.id,
    tenant_id: payout.tenant.id,
    status: payout.status,
    merchant_reference: payout.merchantReference ?? null,
    notification_url: payout.notificationUrl ?? null,
    destination_type: payout.destinationType,
    destination_country: payout.destinationCountry,
    destination_currency: payout.destinationCurrency,
    destination_amount: moneyJson(payout.destinationAmount),
    destination_account_unique: payout.destinationAccountUnique,
    destination_provider_name: payout.destinationProviderName,
    destination_provider_code: payout.destinationProviderCode ?? null,
    destination_account_name: payout.destinationAccountName ?? null,
    settlement_currency: settlement,
    settlement_amount: moneyJson(payout.settlementAmount),
    exchange_rate: moneyJson(payout.exchangeRate),
    platform_fee_amount: moneyJson(payout.platformFeeAmount),
    platform_fee_currency: settlement,
    network_fee_amount: moneyJson(payout.networkFeeAmount),
    network_fee_currency: settlement,
    total_fee_amount: moneyJson(payout.totalFeeAmount),
    total_fee_currency: settlement,
    is_refunded: payout.isRefunded,
    refund_reference: payout.refundReference ?? null,
    payment_instruction: instruction ? toInstructionSummary(instruction) : null,
    status_timeline: timeline.map(toStatusLog),
    created_at: iso(payout.createdAt),
    updated_at: iso(payout.updatedAt),
  };
}

/**
 * Resources for many payouts with two extra queries in all (instructions, timelines), never one
 * per payout.
 */
export async function payoutResources(em: EntityManager, payouts: Payout[]): Promise<PayoutResource[]> {
  if (payouts.length === 0) return [];
  const ids = payouts.map((p) => p.id);
  const instructions = await em.find(PaymentInstruction, { payout: { $in: ids } });
  const logs = await em.find(
    StatusLog,
    { payout: { $in: ids } },
    { orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  const instructionOf = new Map(instructions.map((i) => [i.payout.id, i]));
  const logsOf = new Map<string, StatusLog[]>();
  for (const log of logs) {
    const list = logsOf.get(log.payout.id) ?? [];
    list.push(log);
    logsOf.set(log.payout.id, list);
  }
  return payouts.map((p) => toPayoutResource(p, instructionOf.get(p.id) ?? null, logsOf.get(p.id) ?? []));
}
