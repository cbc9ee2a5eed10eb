import { expect } from 'chai';
import { toDecimal } from '#src/lib/money.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { type ApiResponse, call, errorOf, type Merchant } from '../client.ts';
import { merchantWith, paidPayout, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { type Movement, paidOut, perCurrency, statementOf } from '../ledger/fixtures.ts';
import { deps } from '../settlement/fixtures.ts';

/** Asserts an error answer: its status, and the envelope's code. */
function expectError(res: ApiResponse, status: number, code: string) {
  expect(res.status, res.text).to.equal(status);
  const error = errorOf(res);
  expect(error.code).to.equal(code);
  return error;
}

describe('money movements: where each payout’s money went', () => {
  let merchant: Merchant;
  let other: Merchant;
  let succeeded: string;
  let refunded: string;
  let holding: string;
  before(async () => {
    merchant = await merchantWith();
    other = await merchantWith();
    succeeded = await paidPayout(merchant, payoutTo('5690', 'USDT'), { overpay: '1.25' });
    expect((await paidOut(merchant, succeeded)).status).to.equal('SUCCESSFUL');
    refunded = await paidPayout(merchant, payoutTo('1001', 'NGN'));
    expect((await paidOut(merchant, refunded)).status).to.equal('FAILED');
    await runRefundsOnce(deps());
    holding = await paidPayout(merchant, payoutTo('5691', 'NGN'));
  });

  it("lists a payout's movements oldest first, summing to zero once it is final", async () => {
    const movements = await statementOf(merchant, succeeded);
    expect(movements.map((m) => m.type)).to.include.members([
      'money_received',
      'conversion',
      'paid_out',
      'platform_fee',
      'overpayment_set_aside',
    ]);
    expect(movements[0]).to.include({ type: 'money_received', payout_id: succeeded, currency: 'USDT' });
    expect(movements[0]!.source.object).to.equal('inflow');
    expect(movements.find((m) => m.type === 'paid_out')!.source.object).to.equal('outflow');
    expect(movements.find((m) => m.type === 'platform_fee')!.source).to.deep.equal({
      object: 'payout',
      id: succeeded,
    });
    expect(movements.find((m) => m.type === 'overpayment_set_aside')!.amount).to.equal('-1.25');
    const times = movements.map((m) => Date.parse(m.created_at));
    expect(times).to.deep.equal([...times].sort((a, b) => a - b));
    expect(perCurrency(movements)).to.deep.equal({});
    expect(perCurrency(await statementOf(merchant, refunded))).to.deep.equal({});
    expect((await statementOf(merchant, refunded)).map((m) => m.type)).to.include('refunded');
  });

  it('sums to what a payout still holds', async () => {
    const movements = await statementOf(merchant, holding);
    const payout = (await call('GET', `/v1/payouts/${holding}`, { key: merchant.key })).body;
    expect(perCurrency(movements)).to.deep.equal({ NGN: toDecimal(payout.settlement_amount).toFixed() });
  });

  it("answers 404 for another tenant's payout, and lists none of its movements", async () => {
    const res = await call('GET', `/v1/payouts/${succeeded}/money-movements`, { key: other.key });
    expectError(res, 404, 'PAYOUT_NOT_FOUND');
    const list = await call('GET', `/v1/money-movements?payout_id=${succeeded}`, { key: other.key });
    expect(list.status, list.text).to.equal(200);
    expect(list.body.data).to.deep.equal([]);
  });

  it('pages every movement of the tenant newest first, with its filters', async () => {
    const all: Movement[] = [];
    let cursor: string | null = null;
    do {
      const res: ApiResponse = await call(
        'GET',
        `/v1/money-movements?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
        { key: merchant.key },
      );
      expect(res.status, res.text).to.equal(200);
      all.push(...res.body.data);
      cursor = res.body.meta.next_cursor;
    } while (cursor);
    const mine = [succeeded, refunded, holding];
    expect(new Set(all.map((m) => m.payout_id))).to.deep.equal(new Set(mine));
    const expected = (await Promise.all(mine.map((id) => statementOf(merchant, id)))).flat();
    expect(all.map((m) => m.id).sort()).to.deep.equal(expected.map((m) => m.id).sort());
    const keys = all.map((m) => `${m.created_at} ${m.id}`);
    expect(keys).to.deep.equal([...keys].sort().reverse());

    const fees = await call('GET', `/v1/money-movements?type=platform_fee&payout_id=${succeeded}`, {
      key: merchant.key,
    });
    expect(fees.body.data.map((m: Movement) => [m.type, m.payout_id])).to.deep.equal([
      ['platform_fee', succeeded],
    ]);
    const at = Date.parse(all[0]!.created_at);
    const none = await call('GET', `/v1/money-movements?created_after=${new Date(at + 1).toISOString()}`, {
      key: merchant.key,
    });
    expect(none.body.data).to.deep.equal([]);
  });

  it('exports every page of a period of up to 31 days as one CSV file, and refuses a longer one', async () => {
    const now = harness().clock.now();
    const from = new Date(now.getTime() - 30 * 86_400_000).toISOString();
    const to = new Date(now.getTime() + 86_400_000).toISOString();
    const csv = await call('GET', `/v1/money-movements?created_after=${from}&created_before=${to}&limit=1`, {
      key: merchant.key,
      headers: { accept: 'text/csv' },
    });
    expect(csv.status, csv.text).to.equal(200);
    expect(csv.headers.get('content-type')).to.match(/^text\/csv/);
    const [header, ...rows] = csv.text.trim().split('\r\n');
    expect(header).to.equal('id,payout_id,type,amount,currency,created_at,source_object,source_id');
    const json = await call(
      'GET',
      `/v1/money-movements?created_after=${from}&created_before=${to}&limit=100`,
      {
        key: merchant.key,
      },
    );
    expect(rows).to.deep.equal(
      json.body.data.map((m: Movement) =>
        [m.id, m.payout_id, m.type, m.amount, m.currency, m.created_at, m.source.object, m.source.id].join(
          ',',
        ),
      ),
    );

    const long = await call(
      'GET',
      `/v1/money-movements?created_after=${new Date(now.getTime() - 32 * 86_400_000).toISOString()}&created_before=${to}`,
      { key: merchant.key, headers: { accept: 'text/csv' } },
    );
    expect(expectError(long, 400, 'VALIDATION_FAILED').details[0]!.field).to.equal('created_before');
    const open = await call('GET', '/v1/money-movements', {
      key: merchant.key,
      headers: { accept: 'text/csv' },
    });
    expectError(open, 400, 'VALIDATION_FAILED');
  });
});
