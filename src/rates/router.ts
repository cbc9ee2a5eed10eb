import { z } from 'zod';
import { currencyCode } from '#src/banks/schemas.ts';
import { merchantProcedure } from '#src/http/procedures.ts';
import {
  AMOUNT_RULES,
  amountDecimals,
  amountIn,
  idParam,
  iso,
  moneyJson,
  settlementCurrencySchema,
} from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { quoteOut } from '#src/quotes/schemas.ts';
import { acceptQuote, createQuote, getQuote } from '#src/quotes/service.ts';
import { indicativeRateOut } from './schemas.ts';
import { indicativeRate } from './service.ts';

export const ratesRouter = router({
  indicative: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/rates',
        operationId: 'getIndicativeRate',
        tags: ['Rates'],
        summary: 'Indicative rate',
        description: 'Non-binding and fee-free; create a quote to freeze a price.',
      },
      scope: 'rates:read',
      errors: ['CORRIDOR_NOT_SUPPORTED', 'UPSTREAM_UNAVAILABLE'],
    })
    .input(
      z.strictObject({
        from: settlementCurrencySchema
          .default('USDT')
          .describe('Settlement currency: USDT (default) or NGN.'),
        to: currencyCode.describe('Destination currency of the payout.'),
      }),
    )
    .output(indicativeRateOut)
    .query(async ({ ctx, input }) => {
      const { pair, mid, rate } = await indicativeRate(ctx.deps, { from: input.from, to: input.to });
      return {
        settlement_currency: pair.settlement,
        destination_currency: pair.destination,
        rate: moneyJson(rate),
        mid_market_rate: moneyJson(mid.rate),
        spread_percent: moneyJson(pair.pricing.spreadPercent),
        rail: pair.rail,
        source: mid.source,
        as_of: iso(mid.asOf),
      };
    }),

  createQuote: merchantProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/rates/quotes',
        operationId: 'createQuote',
        tags: ['Rates'],
        summary: 'Create a quote',
        description: 'Freezes rate, spread and every fee until expires_at (QUOTE_TTL_MS, 30 s by default).',
      },
      scope: 'rates:read',
      idempotent: true,
      successStatus: 201,
      errors: ['CORRIDOR_NOT_SUPPORTED', 'UPSTREAM_UNAVAILABLE'],
    })
    .input(
      z
        .strictObject({
          settlement_currency: settlementCurrencySchema,
          destination_currency: currencyCode,
          destination_amount: amountIn.describe(
            `What the beneficiary would receive, in destination_currency. ${AMOUNT_RULES}`,
          ),
        })
        .meta({
          id: 'CreateQuoteRequest',
          allOf: amountDecimals('destination_currency', 'destination_amount'),
        } as never),
    )
    .output(quoteOut)
    .mutation(({ ctx, input }) =>
      createQuote(
        ctx.deps,
        { commit: ctx.commit, tenantId: ctx.principal.tenant.id },
        {
          settlementCurrency: input.settlement_currency,
          destinationCurrency: input.destination_currency,
          destinationAmount: input.destination_amount,
        },
      ),
    ),

  getQuote: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/rates/quotes/{id}',
        operationId: 'getQuote',
        tags: ['Rates'],
        summary: 'Get a quote',
        description: 'A quote whose expires_at has passed reads as EXPIRED.',
      },
      scope: 'rates:read',
      errors: ['QUOTE_NOT_FOUND'],
    })
    .input(z.strictObject({ id: idParam }))
    .output(quoteOut)
    .query(({ ctx, input }) =>
      getQuote(ctx.em, { tenantId: ctx.principal.tenant.id, quoteId: input.id, now: ctx.deps.clock.now() }),
    ),

  acceptQuote: merchantProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/rates/quotes/{id}/accept',
        operationId: 'acceptQuote',
        tags: ['Rates'],
        summary: 'Accept a quote (optional)',
        description:
          'PENDING becomes ACCEPTED; accepting an ACCEPTED quote returns it unchanged. ' +
          'A lapsed quote answers 409 QUOTE_EXPIRED, a used one 409 QUOTE_NOT_ACCEPTABLE. No body.',
      },
      scope: 'rates:read',
      idempotent: true,
      errors: ['QUOTE_NOT_FOUND', 'QUOTE_EXPIRED', 'QUOTE_NOT_ACCEPTABLE'],
    })
    .input(z.strictObject({ id: idParam }))
    .output(quoteOut)
    .mutation(({ ctx, input }) =>
      acceptQuote(
        { commit: ctx.commit, em: ctx.em },
        { tenantId: ctx.principal.tenant.id, quoteId: input.id, now: ctx.deps.clock.now() },
      ),
    ),
});
