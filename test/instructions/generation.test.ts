import { expect } from 'chai';
import type { Deps } from '#src/deps.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { MAX_GENERATION_ATTEMPTS, runInstructionsOnce } from '#src/instructions/job.ts';
import { Task } from '#src/jobs/entities.ts';
import { httpProviders } from '#src/providers/http-providers.ts';
import { call, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';

const deps = () => harness().service.deps;

async function create(merchant: Merchant, overrides: Record<string, unknown> = {}) {
  const res = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout(overrides) });
  expect(res.status, res.text).to.equal(201);
  return res.body as { id: string };
}

async function payout(merchant: Merchant, id: string) {
  return (await call('GET', `/v1/payouts/${id}`, { key: merchant.key })).body;
}

describe('instruction generation', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  it('locks the rate, prices the payout and gives a TRON address to pay before expires_at', async () => {
    const { id } = await create(merchant, { destination_amount: 155000 });
    await runInstructionsOnce(deps());
    const p = await payout(merchant, id);
    expect(p.status).to.equal('PENDING_PAYMENT');
    expect(p.exchange_rate).to.be.greaterThan(1000);
    expect(p.settlement_amount).to.be.greaterThan(100);
    const i = p.payment_instruction;
    expect(i).to.include({
      rail: 'CRYPTO',
      network: 'TRC20',
      expected_currency: 'USDT',
      payment_status: 'UNPAID',
      paid_at: null,
    });
    expect(i.account_unique).to.match(/^T[1-9A-HJ-NP-Za-km-z]{33}$/);
    expect(i.expected_amount).to.equal(p.settlement_amount);
    expect(Date.parse(i.expires_at) - Date.parse(p.status_timeline[1].created_at)).to.equal(
      deps().config.PAYMENT_INSTRUCTION_TTL_MS,
    );
    expect(p.status_timeline.map((t: { reason_code: string }) => t.reason_code)).to.deep.equal([
      'PAYOUT_CREATED',
      'INSTRUCTION_GENERATED',
    ]);
    // fees + converted amount = what the merchant sends
    expect(p.total_fee_amount).to.be.closeTo(p.platform_fee_amount + p.network_fee_amount, 1e-9);

    const standalone = await call('GET', `/v1/payouts/${id}/payment-instruction`, { key: merchant.key });
    expect(standalone.status).to.equal(200);
    expect(standalone.body).to.deep.equal({ ...i, payout_id: id, created_at: standalone.body.created_at });

    const events = await deps()
      .orm.em.fork()
      .find(OutboxEvent, { payoutId: id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    expect(events.map((e) => e.eventType)).to.deep.equal(['payout.created', 'payout.pending_payment']);
    const data = (JSON.parse(events[1]!.payload) as { data: { payment_instruction: { id: string } } }).data;
    expect(data.payment_instruction.id).to.equal(i.id);
  });

  it('shares one address per tenant and network, keeping expected amounts of open instructions distinct', async () => {
    const a = await create(merchant, { destination_amount: 77777 });
    const b = await create(merchant, { destination_amount: 77777 });
    await runInstructionsOnce(deps());
    const [pa, pb] = [await payout(merchant, a.id), await payout(merchant, b.id)];
    expect(pa.payment_instruction.account_unique).to.equal(pb.payment_instruction.account_unique);
    expect(pa.payment_instruction.expected_amount).to.not.equal(pb.payment_instruction.expected_amount);
    expect(
      Math.abs(pa.payment_instruction.expected_amount - pb.payment_instruction.expected_amount),
    ).to.be.lessThan(0.0001);
  });

  it('uses a BSC address for BSC settlement and a virtual account of its own for NGN settlement', async () => {
    const bsc = await create(merchant, { settlement_network: 'BSC' });
    const ngn1 = await create(merchant, { settlement_currency: 'NGN' });
    const ngn2 = await create(merchant, { settlement_currency: 'NGN' });
    await runInstructionsOnce(deps());
    const pb = await payout(merchant, bsc.id);
    expect(pb.payment_instruction).to.include({ rail: 'CRYPTO', network: 'BEP20' });
    expect(pb.payment_instruction.account_unique).to.match(/^0x[0-9a-f]{40}$/);
    const [n1, n2] = [await payout(merchant, ngn1.id), await payout(merchant, ngn2.id)];
    expect(n1.payment_instruction).to.include({
      rail: 'BANK_TRANSFER',
      network: null,
      expected_currency: 'NGN',
    });
    expect(n1.payment_instruction.account_unique).to.match(/^\d{10}$/);
    expect(n1.payment_instruction.account_unique).to.not.equal(n2.payment_instruction.account_unique);
    // NGN to NGN: no conversion, the fees are the only addition
    expect(n1.exchange_rate).to.equal(1);
    expect(n1.settlement_amount).to.equal(150000 + n1.total_fee_amount);
  });

  it('uses the frozen price of a quote given at creation', async () => {
    const quote = await call('POST', '/v1/rates/quotes', {
      key: merchant.key,
      body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 123456 },
    });
    const { id } = await create(merchant, { destination_amount: 123456, quote_id: quote.body.id });
    harness().clock.advance(deps().config.QUOTE_TTL_MS * 3);
    await runInstructionsOnce(deps());
    const p = await payout(merchant, id);
    expect(p.exchange_rate).to.equal(quote.body.exchange_rate);
    expect(p.platform_fee_amount).to.equal(quote.body.platform_fee_amount);
    expect(p.settlement_amount).to.be.within(
      quote.body.settlement_amount,
      quote.body.settlement_amount + 0.01,
    );
  });

  it('generates once, however often the job runs', async () => {
    const { id } = await create(merchant);
    await Promise.all([runInstructionsOnce(deps()), runInstructionsOnce(deps())]);
    await runInstructionsOnce(deps());
    const p = await payout(merchant, id);
    expect(
      p.status_timeline.filter((t: { reason_code: string }) => t.reason_code === 'INSTRUCTION_GENERATED'),
    ).to.have.length(1);
  });

  it('retries while the rate source is unreachable, then fails the payout for good (no refund)', async () => {
    const { id } = await create(merchant);
    const broken: Deps = {
      ...deps(),
      providers: {
        ...deps().providers,
        rates: httpProviders({ baseUrl: 'http://127.0.0.1:9', timeoutMs: 200, log: deps().log }).rates,
      },
    };
    for (let attempt = 1; attempt <= MAX_GENERATION_ATTEMPTS; attempt++) {
      await runInstructionsOnce(broken);
      harness().clock.advance(10 * 60_000);
    }
    const task = await deps()
      .orm.em.fork()
      .findOneOrFail(Task, { subjectId: id, kind: 'GENERATE_INSTRUCTION' });
    expect(task.lastError).to.match(/rates|unavailable|ECONNREFUSED/i);
    const p = await payout(merchant, id);
    expect(p.status).to.equal('FAILED');
    expect(p.status_timeline.at(-1)).to.include({
      reason_code: 'INSTRUCTION_GENERATION_FAILED',
      triggered_by: 'SYSTEM',
    });
    expect(p.is_refunded).to.equal(false);
  });
});
