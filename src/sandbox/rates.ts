import { createHash } from 'node:crypto';
import Router from '@koa/router';
import { z } from 'zod';
import type { Corridors } from '#src/corridors/corridors.ts';
import type { Clock } from '#src/lib/clock.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { SandboxError, validate } from './http.ts';

export const RATE_FEED_SOURCE = 'sandbox-feed';
const SIGNIFICANT_DIGITS = 10;
const SLOW_PERIOD_MS = 7 * 60_000;
const FAST_PERIOD_MS = 53_000;

/**
 * How far each currency's USD price swings: USD is the feed's unit and stands still, stablecoins
 * barely move, everything else drifts. Amplitudes are small enough that even a cross pair of two
 * drifting currencies stays within ±1% of its configured rate.
 */
const STABLE = new Set(['USD', 'USDT', 'USDC']);
function amplitudes(currency: string): { slow: number; fast: number } {
  if (currency === 'USD') return { slow: 0, fast: 0 };
  if (STABLE.has(currency)) return { slow: 0, fast: 0.0002 };
  return { slow: 0.003, fast: 0.0012 };
}

/** Units of each currency per 1 USD, as configured in `rate_feed` of the corridors file. */
export type RateFeed = ReadonlyMap<string, Decimal>;

/** Reads `rate_feed`, skipping `$comment`-style keys; a non-positive or garbage value stops the start. */
export function rateFeedOf(corridors: Corridors): RateFeed {
  const feed = new Map<string, Decimal>();
  for (const [currency, value] of Object.entries(corridors.data.rate_feed ?? {})) {
    if (currency.startsWith('$')) continue;
    const units = /^\d+(\.\d+)?$/.test(value) ? toDecimal(value) : null;
    if (!units?.isGreaterThan(0)) {
      throw new Error(`rate_feed.${currency}: "${value}" is not a positive decimal`);
    }
    feed.set(currency, units);
  }
  return feed;
}

/** A phase in [0, 2π) fixed per currency, so currencies do not all peak together. */
function phase(currency: string, salt: string): number {
  const digest = createHash('sha256').update(`${salt}:${currency}`).digest();
  return (digest.readUInt32BE(0) / 0x1_0000_0000) * 2 * Math.PI;
}

/** USD price of one currency at `at`: the configured level times a smooth, deterministic wobble. */
function level(feed: RateFeed, currency: string, at: Date): Decimal {
  const base = feed.get(currency);
  if (!base) throw new SandboxError('PAIR_NOT_SUPPORTED', `The feed has no rate for ${currency}.`);
  const t = at.getTime();
  const a = amplitudes(currency);
  const wobble =
    a.slow * Math.sin((2 * Math.PI * t) / SLOW_PERIOD_MS + phase(currency, 'slow')) +
    a.fast * Math.sin((2 * Math.PI * t) / FAST_PERIOD_MS + phase(currency, 'fast'));
  // The wobble is a simulated market move, not money; it enters the arithmetic as a fixed decimal.
  return base.times(toDecimal((1 + wobble).toFixed(12)));
}

/**
 * Units of `to` per 1 `from` at `at`, to 10 significant digits. Both legs go through USD, so
 * cross rates are consistent and a pair's inverse is its reciprocal.
 */
export function sandboxMidRate(feed: RateFeed, from: string, to: string, at: Date): Decimal {
  const toLevel = level(feed, to, at);
  const fromLevel = level(feed, from, at);
  if (from === to) return toDecimal(1);
  return toLevel.div(fromLevel).precision(SIGNIFICANT_DIGITS);
}

const midQuery = z.object({
  from: z.string().regex(/^[A-Z]{3,5}$/, 'must be a currency code'),
  to: z.string().regex(/^[A-Z]{3,5}$/, 'must be a currency code'),
});

/** The market-data vendor: mid-market rates that move with the injected clock. */
export function ratesRouter(options: { corridors: Corridors; clock: Clock }): Router {
  const feed = rateFeedOf(options.corridors);
  const router = new Router({ prefix: '/rates' });

  router.get('/mid', (ctx) => {
    const query = validate(midQuery, ctx.query);
    const at = options.clock.now();
    ctx.body = {
      from: query.from,
      to: query.to,
      rate: sandboxMidRate(feed, query.from, query.to, at).toFixed(),
      as_of: at.toISOString(),
      source: RATE_FEED_SOURCE,
    };
  });

  return router;
}
