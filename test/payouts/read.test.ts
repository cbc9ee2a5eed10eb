import { expect } from 'chai';
import { call, errorOf, type Merchant } from '../client.ts';
import { bankPayout, payoutReadyMerchant } from './fixtures.ts';

describe('reading payouts', () => {
  let merchant: Merchant;
  let other: Merchant;
  const ids: string[] = [];
  before(async () => {
    merchant = await payoutReadyMerchant();
    other = await payoutReadyMerchant();
    for (let i = 0; i < 5; i++) {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ merchant_reference: `read-${i}` }),
      });
      ids.push(res.body.id);
    }
  });

  it('gets one payout with its timeline', async () => {
    const res = await call('GET', `/v1/payouts/${ids[0]}`, { key: merchant.key });
    expect(res.status).to.equal(200);
    expect(res.body.id).to.equal(ids[0]);
    expect(res.body.status_timeline).to.have.length(1);
  });

  it('lists newest first with cursor pages, deciding on has_more', async () => {
    const first = await call('GET', '/v1/payouts?limit=2', { key: merchant.key });
    expect(first.body.meta).to.include({ has_more: true, limit: 2 });
    expect(first.body.data.map((p: { id: string }) => p.id)).to.deep.equal([ids[4], ids[3]]);
    const second = await call(
      'GET',
      `/v1/payouts?limit=2&cursor=${encodeURIComponent(first.body.meta.next_cursor)}`,
      { key: merchant.key },
    );
    expect(second.body.data.map((p: { id: string }) => p.id)).to.deep.equal([ids[2], ids[1]]);
    const third = await call(
      'GET',
      `/v1/payouts?limit=2&cursor=${encodeURIComponent(second.body.meta.next_cursor)}`,
      { key: merchant.key },
    );
    expect(third.body.data.map((p: { id: string }) => p.id)).to.deep.equal([ids[0]]);
    expect(third.body.meta).to.deep.equal({ next_cursor: null, has_more: false, limit: 2 });
  });

  it('refuses a tampered cursor and a limit out of range', async () => {
    const bad = await call('GET', '/v1/payouts?cursor=abc.def', { key: merchant.key });
    expect(errorOf(bad).code).to.equal('INVALID_CURSOR');
    for (const limit of ['0', '101', 'ten']) {
      const res = await call('GET', `/v1/payouts?limit=${limit}`, { key: merchant.key });
      expect(res.status).to.equal(400);
      expect(errorOf(res).details[0]?.field).to.equal('limit');
    }
  });

  it('never shows one tenant another tenant’s payouts', async () => {
    const res = await call('GET', `/v1/payouts/${ids[0]}`, { key: other.key });
    expect(res.status).to.equal(404);
    expect(errorOf(res).code).to.equal('PAYOUT_NOT_FOUND');
    const list = await call('GET', '/v1/payouts', { key: other.key });
    expect(list.body.data).to.deep.equal([]);
    for (const sub of ['payment-instruction', 'outflows', 'refunds']) {
      const r = await call('GET', `/v1/payouts/${ids[0]}/${sub}`, { key: other.key });
      expect(r.status, sub).to.equal(404);
    }
  });

  it('answers a malformed id with 404, not 400', async () => {
    const res = await call('GET', '/v1/payouts/not-a-uuid', { key: merchant.key });
    expect(res.status).to.equal(404);
  });

  it('answers PAYMENT_INSTRUCTION_NOT_FOUND until the instruction exists', async () => {
    const res = await call('GET', `/v1/payouts/${ids[1]}/payment-instruction`, { key: merchant.key });
    expect(res.status).to.equal(404);
    expect(errorOf(res).code).to.equal('PAYMENT_INSTRUCTION_NOT_FOUND');
  });

  it('lists no outflows or refunds for a new payout (bare arrays)', async () => {
    expect((await call('GET', `/v1/payouts/${ids[1]}/outflows`, { key: merchant.key })).body).to.deep.equal(
      [],
    );
    expect((await call('GET', `/v1/payouts/${ids[1]}/refunds`, { key: merchant.key })).body).to.deep.equal(
      [],
    );
  });
});
