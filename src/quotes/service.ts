import { type EntityManager, LockMode } from '@mikro-orm/postgresql';
import { type QuoteStatus, quoteMachine } from '#machines/quote.machine.ts';
import type { Rail } from '#src/corridors/corridors.ts';
import { type Price, price } from '#src/corridors/pricing.ts';
import { findForTenant } from '#src/db/lookup.ts';
import type { Deps } from '#src/deps.ts';
import { applyEvent, initialState, pureTransition, restore } from '#src/engine/engine.ts';
import { AppError, type ErrorDetail } from '#src/http/errors.ts';
import type { Commit } from '#src/http/procedures.ts';
import { decimalsIssue, iso, moneyJson } from '#src/http/schemas.ts';
import { currencyDecimals, type Decimal, toDecimal } from '#src/lib/money.ts';
import { midMarketRate, pairPricing } from '#src/rates/service.ts';
import { Quote } from './entities.ts';
import type { QuoteResource } from './schemas.ts';

/**
 * Quotes: a price frozen for QUOTE_TTL_MS. Every status change goes through
 * `machines/quote.machine.ts` via the engine; expiry is evaluated on read, so a lapsed quote
 * reads as EXPIRED whether or not EXPIRE has been persisted yet.
 */

/** The status a quote reads as at `now`: the machine decides whether it has lapsed. */
export function quoteStatusAt(quote: Quote, now: Date): QuoteStatus {
  const [next] = pureTransition(quoteMachine, restore(quoteMachine, quote), { type: 'EXPIRE', now });
  return next.value as QuoteStatus;
}

/** The contract's Quote resource, as every quote endpoint answers it. */
export function toQuoteResource(quote: Quote, now: Date): QuoteResource {
  const fees = quote.settlementCurrency;
  return {
    id: quote.id,
    rail: quote.rail,
    exchange_rate: moneyJson(quote.exchangeRate),
    spread: moneyJson(quote.spread),
    destination_amount: moneyJson(quote.destinationAmount),
    destination_currency: quote.destinationCurrency,
    settlement_amount: moneyJson(quote.settlementAmount),
    settlement_currency: quote.settlementCurrency,
    platform_fee_amount: moneyJson(quote.platformFeeAmount),
    platform_fee_currency: fees,
    network_fee_amount: moneyJson(quote.networkFeeAmount),
    network_fee_currency: fees,
    total_fee_amount: moneyJson(quote.totalFeeAmount),
    total_fee_currency: fees,
    provider: quote.provider,
    status: quoteStatusAt(quote, now),
    expires_at: iso(quote.expiresAt),
    created_at: iso(quote.createdAt),
  };
}

/**
 * Prices and stores a new PENDING quote. The rate provider is asked first, outside any
 * transaction; only the insert runs inside `commit`.
 */
export async function createQuote(
  deps: Pick<Deps, 'providers' | 'clock' | 'corridors' | 'config'>,
  request: { commit: Commit; tenantId: string },
  input: { settlementCurrency: string; destinationCurrency: string; destinationAmount: Decimal },
): Promise<QuoteResource> {
  const pair = pairPricing(deps.corridors, {
    settlement: input.settlementCurrency,
    destination: input.destinationCurrency,
    fields: { settlement: 'settlement_currency', destination: 'destination_currency' },
  });
  const issue = decimalsIssue(input.destinationAmount, pair.destination, currencyDecimals(pair.destination));
  if (issue) throw new AppError('VALIDATION_FAILED', { details: [{ field: 'destination_amount', issue }] });

  const mid = await midMarketRate(deps, pair.settlement, pair.destination);
  const priced = price({
    destinationAmount: input.destinationAmount,
    settlementCurrency: pair.settlement,
    midMarketRate: mid.rate,
    pricing: pair.pricing,
    networkFee: deps.corridors.networkFee(pair.settlement, null),
  });
  const now = deps.clock.now();
  const expiresAt = new Date(now.getTime() + deps.config.QUOTE_TTL_MS);
  const initial = initialState(quoteMachine, { expiresAt: expiresAt.toISOString() });

  return request.commit(async (em) => {
    const quote = em.create(Quote, {
      tenant: request.tenantId,
      rail: pair.rail,
      status: initial.status as QuoteStatus,
      snapshot: initial.snapshot,
      settlementCurrency: pair.settlement,
      destinationCurrency: pair.destination,
      destinationAmount: input.destinationAmount,
      settlementAmount: priced.settlementAmount,
      exchangeRate: priced.exchangeRate,
      midMarketRate: priced.midMarketRate,
      spread: priced.spreadPercent,
      platformFeeAmount: priced.platformFee,
      networkFeeAmount: priced.networkFee,
      totalFeeAmount: priced.totalFee,
      provider: mid.source,
      expiresAt,
      usedByPayoutId: null,
    });
    // The id and created_at are assigned on flush; the response needs both.
    await em.flush();
    return toQuoteResource(quote, now);
  });
}

/** A quote of the tenant, optionally locked; 404 QUOTE_NOT_FOUND naming `field` otherwise. */
async function findQuote(
  em: EntityManager,
  args: { tenantId: string; quoteId: string; field: string; lock: boolean },
): Promise<Quote> {
  try {
    return await findForTenant(
      em,
      Quote,
      { id: args.quoteId, tenantId: args.tenantId, notFound: 'QUOTE_NOT_FOUND' },
      args.lock ? { lockMode: LockMode.PESSIMISTIC_WRITE } : undefined,
    );
  } catch (err) {
    if (err instanceof AppError && err.code === 'QUOTE_NOT_FOUND') {
      throw new AppError('QUOTE_NOT_FOUND', { details: [{ field: args.field, issue: 'no such quote' }] });
    }
    throw err;
  }
}

/** One quote of the tenant as the API shows it (expiry evaluated on read; nothing is written). */
export async function getQuote(
  em: EntityManager,
  args: { tenantId: string; quoteId: string; now: Date },
): Promise<QuoteResource> {
  const quote = await findQuote(em, { ...args, field: 'id', lock: false });
  return toQuoteResource(quote, args.now);
}

/**
 * Why a quote cannot be accepted or used at `now`, or null when it can: 409 QUOTE_EXPIRED once
 * lapsed (persisted or not), 409 QUOTE_NOT_ACCEPTABLE once used.
 */
function unusableReason(quote: Quote, now: Date, field: string): AppError | null {
  const status = quoteStatusAt(quote, now);
  if (status === 'EXPIRED') {
    return new AppError('QUOTE_EXPIRED', {
      details: [{ field, issue: `expired at ${iso(quote.expiresAt)}` }],
    });
  }
  if (status === 'USED') {
    return new AppError('QUOTE_NOT_ACCEPTABLE', {
      message: 'The quote was already used by a payout.',
      details: [{ field, issue: 'was already used by a payout' }],
    });
  }
  return null;
}

/**
 * Persists EXPIRE for a lapsed quote in its own transaction (the machine ignores it for a live
 * or final quote). Used where a request fails because of the lapse: that failure must not roll
 * the expiry back.
 */
export async function expireQuote(em: EntityManager, args: { quoteId: string; now: Date }): Promise<void> {
  await em.transactional((tx) =>
    applyEvent(tx, {
      machine: quoteMachine,
      entity: Quote,
      id: args.quoteId,
      event: { type: 'EXPIRE', now: args.now },
    }),
  );
}

/**
 * `POST /v1/rates/quotes/{id}/accept`: PENDING → ACCEPTED; an ACCEPTED quote is returned as it
 * is. A lapsed quote is persisted as EXPIRED and answered with 409 QUOTE_EXPIRED.
 */
export async function acceptQuote(
  request: { commit: Commit; em: EntityManager },
  args: { tenantId: string; quoteId: string; now: Date },
): Promise<QuoteResource> {
  const { now } = args;
  try {
    return await request.commit(async (em) => {
      const quote = await findQuote(em, { ...args, field: 'id', lock: true });
      const refusal = unusableReason(quote, now, 'id');
      if (refusal) throw refusal;
      await applyEvent(em, {
        machine: quoteMachine,
        entity: Quote,
        id: quote.id,
        event: { type: 'ACCEPT', now },
      });
      return toQuoteResource(quote, now);
    });
  } catch (err) {
    // The refusal rolled the request back; record the expiry it observed (a no-op when already EXPIRED).
    if (err instanceof AppError && err.code === 'QUOTE_EXPIRED')
      await expireQuote(request.em, { quoteId: args.quoteId, now });
    throw err;
  }
}

/** The price a used quote freezes for the payout that used it. */
export interface FrozenPrice extends Price {
  quoteId: string;
  rail: Rail;
  /** Label of the rate source. */
  provider: string;
}

/**
 * For payout creation, inside its transaction: checks that the tenant's quote `quoteId` is
 * PENDING or ACCEPTED, unexpired at `now` and priced for exactly this payout, moves it to USED by
 * `payoutId`, and returns its frozen price. Errors name `quote_id` (and any mismatching field):
 * 404 QUOTE_NOT_FOUND, 409 QUOTE_EXPIRED, 409 QUOTE_NOT_ACCEPTABLE (already used), 422 QUOTE_MISMATCH.
 */
export async function useQuote(
  em: EntityManager,
  args: {
    tenantId: string;
    quoteId: string;
    payoutId: string;
    now: Date;
    settlementCurrency: string;
    destinationCurrency: string;
    destinationAmount: Decimal;
  },
): Promise<FrozenPrice> {
  const quote = await findQuote(em, {
    tenantId: args.tenantId,
    quoteId: args.quoteId,
    field: 'quote_id',
    lock: true,
  });
  const refusal = unusableReason(quote, args.now, 'quote_id');
  if (refusal) throw refusal;

  const mismatches: ErrorDetail[] = [];
  if (quote.settlementCurrency !== args.settlementCurrency) {
    mismatches.push({
      field: 'settlement_currency',
      issue: `must be ${quote.settlementCurrency}, as quoted`,
    });
  }
  if (quote.destinationCurrency !== args.destinationCurrency) {
    mismatches.push({
      field: 'destination_currency',
      issue: `must be ${quote.destinationCurrency}, as quoted`,
    });
  }
  const quotedAmount = toDecimal(quote.destinationAmount);
  if (!quotedAmount.isEqualTo(args.destinationAmount)) {
    mismatches.push({ field: 'destination_amount', issue: `must be ${quotedAmount.toFixed()}, as quoted` });
  }
  if (mismatches.length > 0) {
    throw new AppError('QUOTE_MISMATCH', {
      details: [{ field: 'quote_id', issue: 'was priced for a different payout' }, ...mismatches],
    });
  }

  const used = await applyEvent(em, {
    machine: quoteMachine,
    entity: Quote,
    id: quote.id,
    event: { type: 'USE', payoutId: args.payoutId, now: args.now },
  });
  // Checked above under the row lock, so the machine cannot disagree; if it does, fail loudly.
  if (used.to !== 'USED') throw new Error(`quote ${quote.id}: USE was ignored in ${used.from}`);
  quote.usedByPayoutId = args.payoutId;

  return frozenPrice(quote);
}

/** The price a quote froze, as instruction generation uses it for the payout that used the quote. */
export function frozenPrice(quote: Quote): FrozenPrice {
  return {
    quoteId: quote.id,
    rail: quote.rail,
    provider: quote.provider,
    midMarketRate: toDecimal(quote.midMarketRate),
    exchangeRate: toDecimal(quote.exchangeRate),
    spreadPercent: toDecimal(quote.spread),
    platformFee: toDecimal(quote.platformFeeAmount),
    networkFee: toDecimal(quote.networkFeeAmount),
    totalFee: toDecimal(quote.totalFeeAmount),
    settlementAmount: toDecimal(quote.settlementAmount),
  };
}
