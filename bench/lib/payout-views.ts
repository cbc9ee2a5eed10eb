import { randomUUID } from 'node:crypto';
import type { PayoutStatus } from '#src/payouts/entities.ts';
import type { InstructionView, PayoutView } from '#src/payouts/resource.ts';

/**
 * A payout as the page query reads it (`readPayoutPage`), built in memory, for measuring and
 * checking what a page of them costs and renders (bench/list-layers.ts,
 * test/payouts/exact-output.test.ts). It is a KES mobile-money payout like the bench's list
 * seed; past CREATED it has its USDT price and an instruction on `rail` (CRYPTO by default: USDT
 * on TRON), UNPAID while the payout waits for its money, EXPIRED with it, PAID after. Its
 * timeline is its creation and, past CREATED, one step into `status`. Every time is `at`.
 */
export function payoutView(
  status: PayoutStatus,
  at: string,
  options: { rail?: InstructionView['rail'] } = {},
): PayoutView {
  const rail = options.rail ?? 'CRYPTO';
  const crypto = rail === 'CRYPTO';
  const priced = status !== 'CREATED';
  const waiting = status === 'PENDING_PAYMENT' || status === 'EXPIRED';
  return {
    id: randomUUID(),
    tenant_id: randomUUID(),
    status,
    merchant_reference: null,
    metadata: {},
    notification_url: null,
    destination_type: 'MOBILE_MONEY',
    destination_country: 'KE',
    destination_currency: 'KES',
    destination_amount: '1500',
    destination_account_unique: '254712345678',
    destination_provider_name: 'M-Pesa',
    destination_provider_code: 'MPESA',
    destination_account_name: 'Jane Doe',
    payee_check: 'MATCH',
    payee_institution_name: 'JANE DOE',
    payee_checked_at: at,
    settlement_currency: 'USDT',
    settlement_amount: priced ? '11.734521' : '0',
    exchange_rate: priced ? '129.45' : '0',
    platform_fee_amount: priced ? '0.15' : '0',
    network_fee_amount: priced ? '1' : '0',
    total_fee_amount: priced ? '1.15' : '0',
    is_refunded: false,
    refund_reference: null,
    created_at: at,
    updated_at: at,
    instruction: priced
      ? {
          id: randomUUID(),
          rail,
          account_unique: crypto ? 'TXYZabc123456789012345678901234567' : '9912345678',
          provider_name: crypto ? 'tron' : 'Wema Bank',
          network: crypto ? 'TRON' : null,
          expected_amount: '11.734521',
          expected_currency: 'USDT',
          status: status === 'EXPIRED' ? 'EXPIRED' : waiting ? 'UNPAID' : 'PAID',
          expires_at: at,
          paid_at: waiting ? null : at,
          created_at: at,
        }
      : null,
    timeline: [
      {
        from_status: null,
        to_status: 'CREATED',
        triggered_by: 'API',
        reason_code: 'PAYOUT_CREATED',
        reason_detail: null,
        metadata: null,
        created_at: at,
      },
      ...(priced
        ? [
            {
              from_status: 'CREATED' as const,
              to_status: status,
              triggered_by: 'SYSTEM' as const,
              reason_code: status === 'PENDING_PAYMENT' ? 'INSTRUCTION_GENERATED' : 'STEP',
              reason_detail: { rail },
              metadata: null,
              created_at: at,
            },
          ]
        : []),
    ],
  };
}
