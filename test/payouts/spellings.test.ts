import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { call, errorOf, type Merchant } from '../client.ts';
import { mobilePayout, payoutReadyMerchant } from './fixtures.ts';

/** One value written two ways is one request: the Idempotency-Key compares what the write keeps. */
describe('the Idempotency-Key across spellings of one value', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  const sendTwice = async (path: string, method: 'POST' | 'PUT', first: unknown, second: unknown) => {
    const idempotencyKey = randomUUID();
    const a = await call(method, path, { key: merchant.key, body: first, idempotencyKey });
    expect(a.status, a.text).to.be.oneOf([200, 201]);
    const b = await call(method, path, { key: merchant.key, body: second, idempotencyKey });
    return { a, b };
  };

  it('replays a payout sent again with its mobile number spelled another way', async () => {
    const { a, b } = await sendTwice(
      '/v1/payouts',
      'POST',
      mobilePayout({ destination_account_unique: '+254712345678' }),
      mobilePayout({ destination_account_unique: '0712 345 678' }),
    );
    expect(b.status, b.text).to.equal(201);
    expect(b.headers.get('idempotent-replayed')).to.equal('true');
    expect(b.text).to.equal(a.text);
  });

  it('replays a payout sent again naming its networks by the other name', async () => {
    const wallet = (provider: string, network: string) => ({
      destination_type: 'CRYPTO_WALLET',
      destination_country: 'GB',
      destination_currency: 'USDT',
      destination_amount: 10,
      destination_account_unique: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
      destination_provider_name: provider,
      settlement_network: network,
    });
    const { a, b } = await sendTwice('/v1/payouts', 'POST', wallet('TRON', 'BSC'), wallet('trc20', 'BEP20'));
    expect(b.status, b.text).to.equal(201);
    expect(b.text).to.equal(a.text);
  });

  it('replays a refund destination sent again with TRC20 for TRON', async () => {
    const destination = (network: string) => ({
      currency: 'USDT',
      type: 'CRYPTO_ADDRESS',
      network,
      address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
    });
    const { a, b } = await sendTwice(
      '/v1/refund-destinations',
      'PUT',
      destination('TRON'),
      destination('TRC20'),
    );
    expect(b.status, b.text).to.equal(200);
    expect(b.headers.get('idempotent-replayed')).to.equal('true');
    expect(b.text).to.equal(a.text);
  });

  it('still refuses the key for another number, or another network', async () => {
    const number = await sendTwice(
      '/v1/payouts',
      'POST',
      mobilePayout({ destination_account_unique: '0712345678' }),
      mobilePayout({ destination_account_unique: '0712345679' }),
    );
    expect(number.b.status, number.b.text).to.equal(422);
    expect(errorOf(number.b).code).to.equal('IDEMPOTENCY_KEY_REUSED');
    const network = await sendTwice(
      '/v1/payouts',
      'POST',
      mobilePayout({ settlement_network: 'TRC20' }),
      mobilePayout({ settlement_network: 'BEP20' }),
    );
    expect(network.b.status, network.b.text).to.equal(422);
    // A malformed resend is compared as sent, and refused like any other different request.
    const malformed = await sendTwice(
      '/v1/payouts',
      'POST',
      mobilePayout(),
      mobilePayout({ destination_country: 42, destination_account_unique: null }),
    );
    expect(malformed.b.status, malformed.b.text).to.equal(422);
  });
});
