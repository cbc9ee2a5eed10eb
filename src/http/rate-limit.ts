/**
 * Token bucket per caller (API key id), held in memory: each instance enforces the limit on the
 * traffic it sees, which bounds a misbehaving client without a shared store on the hot path.
 */
export class RateLimiter {
  readonly #rate: number;
  readonly #burst: number;
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  constructor(options: { perSecond: number; burst: number }) {
    this.#rate = options.perSecond;
    this.#burst = options.burst;
  }

  /** Takes one token; returns 0 when allowed, else the milliseconds until one is available. */
  take(key: string, nowMs: number): number {
    const bucket = this.#buckets.get(key) ?? { tokens: this.#burst, at: nowMs };
    const elapsed = Math.max(0, nowMs - bucket.at);
    bucket.tokens = Math.min(this.#burst, bucket.tokens + (elapsed * this.#rate) / 1000);
    bucket.at = nowMs;
    if (this.#buckets.size > 100_000) this.#buckets.clear();
    this.#buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil(((1 - bucket.tokens) * 1000) / this.#rate);
  }
}
