import type { Clock } from '#src/lib/clock.ts';
import type { DirectoryProvider } from './providers.ts';

/** A small TTL map with a size bound: oldest entries go first when it is full. */
class TtlCache<V> {
  readonly #entries = new Map<string, { value: V; until: number }>();
  readonly #ttlMs: number;
  readonly #max: number;
  readonly #clock: Clock;

  constructor(ttlMs: number, max: number, clock: Clock) {
    this.#ttlMs = ttlMs;
    this.#max = max;
    this.#clock = clock;
  }

  /** The entry under `key` if it is still fresh at `now`. */
  #fresh(key: string, now: number): { value: V } | undefined {
    const hit = this.#entries.get(key);
    return hit && hit.until > now ? hit : undefined;
  }

  /** The fresh entry under `key`, if any. */
  peek(key: string): { value: V } | undefined {
    return this.#fresh(key, this.#clock.now().getTime());
  }

  async get(key: string, load: () => Promise<V>): Promise<V> {
    const now = this.#clock.now().getTime();
    const hit = this.#fresh(key, now);
    if (hit) return hit.value;
    const value = await load();
    if (this.#ttlMs > 0) {
      this.#entries.delete(key);
      if (this.#entries.size >= this.#max) this.#entries.delete(this.#entries.keys().next().value as string);
      this.#entries.set(key, { value, until: now + this.#ttlMs });
    }
    return value;
  }
}

/**
 * The directory with brief caching: name-enquiry results per account (including "no such
 * account") for `nameEnquiryTtlMs`, institution lists for a minute. Errors are never cached.
 */
export function cachedDirectory(
  inner: DirectoryProvider,
  options: { nameEnquiryTtlMs: number; clock: Clock },
): DirectoryProvider {
  const names = new TtlCache<Awaited<ReturnType<DirectoryProvider['nameEnquiry']>>>(
    options.nameEnquiryTtlMs,
    10_000,
    options.clock,
  );
  const lists = new TtlCache<Awaited<ReturnType<DirectoryProvider['listInstitutions']>>>(
    60_000,
    500,
    options.clock,
  );
  const listKey = (q: Parameters<DirectoryProvider['listInstitutions']>[0]) =>
    `${q.country}|${q.currency}|${q.destinationType}`;
  const nameKey = (q: Parameters<DirectoryProvider['nameEnquiry']>[0]) =>
    `${q.destinationType}|${q.currency}|${q.providerCode}|${q.accountNumber}`;
  return {
    listInstitutions: (q) => lists.get(listKey(q), () => inner.listInstitutions(q)),
    nameEnquiry: (q) => names.get(nameKey(q), () => inner.nameEnquiry(q)),
    knownInstitutions: (q) => lists.peek(listKey(q))?.value,
    knownName: (q) => names.peek(nameKey(q))?.value,
  };
}
