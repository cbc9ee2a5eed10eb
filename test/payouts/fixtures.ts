import { expect } from 'chai';
import { call, createMerchant, type Merchant } from '../client.ts';

/** A merchant with refund destinations for both settlement currencies, ready to create payouts. */
export async function payoutReadyMerchant(options: { approved?: boolean } = {}): Promise<Merchant> {
  const merchant = await createMerchant({ approved: options.approved ?? true });
  const usdt = await call('PUT', '/v1/refund-destinations', {
    key: merchant.key,
    body: {
      currency: 'USDT',
      type: 'CRYPTO_ADDRESS',
      network: 'TRON',
      address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
    },
  });
  expect(usdt.status, usdt.text).to.equal(200);
  const ngn = await call('PUT', '/v1/refund-destinations', {
    key: merchant.key,
    body: { currency: 'NGN', type: 'BANK_ACCOUNT', bank_code: '058', account_number: '0123456789' },
  });
  expect(ngn.status, ngn.text).to.equal(200);
  return merchant;
}

/** A valid payout request to a Nigerian bank account; override any field. */
export function bankPayout(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    destination_type: 'BANK_ACCOUNT',
    destination_country: 'NG',
    destination_currency: 'NGN',
    destination_amount: 150000,
    destination_account_unique: '0123456203',
    destination_provider_name: 'Guaranty Trust Bank',
    destination_provider_code: '058',
    destination_account_name: 'ADAEZE OKONKWO',
    merchant_reference: 'INV-1001',
    ...overrides,
  };
}

/** A valid payout to a Kenyan M-Pesa wallet. */
export function mobilePayout(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    destination_type: 'MOBILE_MONEY',
    destination_country: 'KE',
    destination_currency: 'KES',
    destination_amount: 2500,
    destination_account_unique: '+254712345678',
    destination_provider_name: 'M-Pesa',
    destination_provider_code: 'MPESA',
    destination_account_name: 'WANJIKU KAMAU',
    ...overrides,
  };
}
