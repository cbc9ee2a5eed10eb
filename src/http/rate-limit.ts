import type { Context } from 'koa';
/**
 * Token bucket per caller (API key id), held in memory: each instance enforces the limit on the
 * traffic it sees, which bounds a misbehaving client without a shared store on the hot path.
 *
 * A full bucket holds `burst` requests and refills at `perSecond`. Advertised in the IETF draft's
 * form (draft-ietf-httpapi-ratelimit-headers): the policy is `burst` requests per the time the
 * bucket takes to refill from empty; the live counter is what is left in the bucket and the
 * seconds until it is full again.
 */
export class RateLimiter {
  readonly #rate: number;
  readonly #burst: number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();
  /** The `RateLimit-Policy` field value: the same on every response. */
  readonly policy: string;

  constructor(options: { perSecond: number; burst: number }) {
    this.#rate = options.perSecond;
    this.#burst = options.burst;
    this.policy = `"${RATE_LIMIT_POLICY}";q=${this.#burst};w=${Math.max(1, Math.ceil(this.#burst / this.#rate))}`;
  }

  /**
   * Takes one token for `key` at `nowMs`. Allowed or not, says what is left in the bucket and in
   * how many seconds it is full again; when refused, `retryAfter` is the seconds until a token.
   */
  take(key: string, nowMs: number): RateLimitState {
    const bucket = this.#buckets.get(key) ?? { tokens: this.#burst, at: nowMs };
    const elapsed = Math.max(0, nowMs - bucket.at);
    bucket.tokens = Math.min(this.#burst, bucket.tokens + (elapsed * this.#rate) / 1000);
    bucket.at = nowMs;
    if (this.#buckets.size > 100_000) this.#buckets.clear();
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return {
        allowed: true,
        remaining: Math.floor(bucket.tokens),
        resetSeconds: Math.ceil((this.#burst - bucket.tokens) / this.#rate),
        retryAfter: 0,
      };
    }
    const retryAfter = Math.max(1, Math.ceil((1 - bucket.tokens) / this.#rate));
    // The draft: a Retry-After never points earlier than the end of the effective window.
    return { allowed: false, remaining: 0, resetSeconds: retryAfter, retryAfter };
  }
}

/** The name of the one policy: a bucket per API key. */
export const RATE_LIMIT_POLICY = 'api-key';

export interface RateLimitState {
  allowed: boolean;
  /** Requests left in the bucket after this one. */
  remaining: number;
  /** Seconds until the bucket is full again (when refused: until the next request is allowed). */
  resetSeconds: number;
  /** Seconds to wait before retrying; 0 when allowed. */
  retryAfter: number;
}

/** The `RateLimit` field value of a caller's state. */
export function rateLimitField(state: RateLimitState): string {
  return `"${RATE_LIMIT_POLICY}";r=${state.remaining};t=${state.resetSeconds}`;
}

/** Paths of the merchant API, whose every response carries the rate-limit policy. */
export function isMerchantApiPath(path: string): boolean {
  return path === '/v1' || path.startsWith('/v1/');
}

/**
 * Sets `RateLimit-Policy` on every response under /v1, before anything can refuse the request:
 * a 405, 413 or 415 made ahead of the route says the policy as a 200 does. Reads the limiter at
 * each request, so that the one in force answers.
 */
export function rateLimitPolicy(limiter: () => RateLimiter) {
  return (ctx: Context): void => {
    if (isMerchantApiPath(ctx.path)) ctx.set('RateLimit-Policy', limiter().policy);
  };
}
