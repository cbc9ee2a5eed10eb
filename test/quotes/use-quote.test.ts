import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { AppError } from '#src/http/errors.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { Quote } from '#src/quotes/entities.ts';
import { useQuote } from '#src/quotes/service.ts';
import { call, createMerchant, type Merchant, rejection } from '../client.ts';
import { harness } from '../harness.ts';

describe('useQuote (payout creation uses a quote)', () => {
  const em = () => harness().service.deps.orm.em.fork();
  const ttl = () => harness().service.deps.config.QUOTE_TTL_MS;
  let merchant: Merchant;

  before(async () => {
    merchant = await createMerchant({ scopes: ['rates:read'] });
  });

  async function quote(): Promise<{ id: string; body: Record<string, unknown> }> {
    const res = await call('POST', '/v1/rates/quotes', {
      key: merchant.key,
      body: { settlement_currency: 'USDT', destination_currency: 'KES', destination_amount: 12500.5 },
    });
    expect(res.status, res.text).to.equal(201);
    return { id: res.body.id, body: res.body };
  }

  /** The payout the quote was priced for, with any field overridden. */
  function payout(
    quoteId: string,
    overrides: Partial<{
      tenantId: string;
      payoutId: string;
      settlementCurrency: string;
      destinationCurrency: string;
      destinationAmount: Decimal;
    }> = {},
  ) {
    return {
      tenantId: merchant.tenantId,
      quoteId,
      payoutId: randomUUID(),
      now: harness().clock.now(),
      settlementCurrency: 'USDT',
      destinationCurrency: 'KES',
      destinationAmount: toDecimal('12500.50'),
      ...overrides,
    };
  }

  const use = (args: ReturnType<typeof payout>) => em().transactional((tx) => useQuote(tx, args));
  const row = (id: string) => em().findOneOrFail(Quote, id);

  it('moves a PENDING quote to USED by the payout and returns its frozen price', async () => {
    const q = await quote();
    const args = payout(q.id);
    const frozen = await use(args);
    expect(frozen.quoteId).to.equal(q.id);
    expect(frozen.rail).to.equal('CRYPTO');
    expect(frozen.provider).to.equal('sandbox-feed');
    expect(frozen.exchangeRate.toFixed()).to.equal(String(q.body.exchange_rate));
    expect(frozen.spreadPercent.toFixed()).to.equal(String(q.body.spread));
    expect(frozen.platformFee.toFixed()).to.equal(String(q.body.platform_fee_amount));
    expect(frozen.networkFee.toFixed()).to.equal(String(q.body.network_fee_amount));
    expect(frozen.totalFee.toFixed()).to.equal(String(q.body.total_fee_amount));
    expect(frozen.settlementAmount.toFixed()).to.equal(String(q.body.settlement_amount));
    expect(frozen.midMarketRate.isGreaterThan(frozen.exchangeRate)).to.equal(true);

    const stored = await row(q.id);
    expect(stored.status).to.equal('USED');
    expect(stored.usedByPayoutId).to.equal(args.payoutId);
    expect(stored.snapshot).to.deep.include({ value: 'USED', status: 'done' });
    expect((stored.snapshot as { context: unknown }).context).to.deep.include({ payoutId: args.payoutId });
  });

  it('uses an ACCEPTED quote, up to the last millisecond before expiry', async () => {
    const q = await quote();
    await call('POST', `/v1/rates/quotes/${q.id}/accept`, { key: merchant.key });
    harness().clock.advance(ttl() - 1);
    await use(payout(q.id));
    expect((await row(q.id)).status).to.equal('USED');
  });

  it('accepts the quoted amount however it is written', async () => {
    const q = await quote();
    await use(payout(q.id, { destinationAmount: toDecimal('12500.500') }));
    expect((await row(q.id)).status).to.equal('USED');
  });

  it("answers QUOTE_NOT_FOUND naming quote_id for another tenant's quote, an unknown and a malformed id", async () => {
    const q = await quote();
    const stranger = await createMerchant();
    for (const args of [
      payout(q.id, { tenantId: stranger.tenantId }),
      payout(randomUUID()),
      payout('quote-123'),
    ]) {
      const error = await rejection(use(args));
      expect(error.code).to.equal('QUOTE_NOT_FOUND');
      expect(error.details.map((d) => d.field)).to.deep.equal(['quote_id']);
    }
    expect((await row(q.id)).status).to.equal('PENDING');
  });

  it('answers QUOTE_EXPIRED naming quote_id once the quote has lapsed', async () => {
    const q = await quote();
    harness().clock.advance(ttl());
    const error = await rejection(use(payout(q.id)));
    expect(error.code).to.equal('QUOTE_EXPIRED');
    expect(error.status).to.equal(409);
    expect(error.details.map((d) => d.field)).to.deep.equal(['quote_id']);
  });

  it('lets a quote be used once only', async () => {
    const q = await quote();
    const first = payout(q.id);
    await use(first);
    const error = await rejection(use(payout(q.id)));
    expect(error.code).to.equal('QUOTE_NOT_ACCEPTABLE');
    expect(error.details.map((d) => d.field)).to.deep.equal(['quote_id']);
    expect((await row(q.id)).usedByPayoutId).to.equal(first.payoutId);
  });

  it('lets only one of two concurrent payouts use the same quote', async () => {
    const q = await quote();
    const results = await Promise.allSettled([use(payout(q.id)), use(payout(q.id))]);
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
    const failed = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((failed.reason as AppError).code).to.equal('QUOTE_NOT_ACCEPTABLE');
  });

  it('answers QUOTE_MISMATCH naming quote_id and every field that differs, leaving the quote alone', async () => {
    const q = await quote();
    const error = await rejection(
      use(
        payout(q.id, {
          settlementCurrency: 'NGN',
          destinationCurrency: 'NGN',
          destinationAmount: toDecimal('12500.51'),
        }),
      ),
    );
    expect(error.code).to.equal('QUOTE_MISMATCH');
    expect(error.status).to.equal(422);
    expect(error.details.map((d) => d.field)).to.deep.equal([
      'quote_id',
      'settlement_currency',
      'destination_currency',
      'destination_amount',
    ]);
    expect(error.details[3]!.issue).to.equal('must be 12500.5, as quoted');
    expect((await row(q.id)).status).to.equal('PENDING');
  });

  it("rolls back with the payout's transaction", async () => {
    const q = await quote();
    const error = await rejection(
      em().transactional(async (tx) => {
        await useQuote(tx, payout(q.id));
        throw new AppError('REFUND_DESTINATION_REQUIRED');
      }),
    );
    expect(error.code).to.equal('REFUND_DESTINATION_REQUIRED');
    const stored = await row(q.id);
    expect(stored.status).to.equal('PENDING');
    expect(stored.usedByPayoutId).to.equal(null);
  });
});
