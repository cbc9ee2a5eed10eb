import type { DestinationType, Institution } from '#src/corridors/corridors.ts';
import type { Decimal } from '#src/lib/money.ts';

/**
 * The outside world as the service sees it. Each interface has one HTTP implementation
 * (`http-providers.ts`); the sandbox serves the same HTTP API, so the service cannot tell a
 * sandbox from a real provider.
 */

/** Bank and mobile-money directory, with name enquiry. */
export interface DirectoryProvider {
  /** Institutions able to receive in `country`/`currency` for one destination type. */
  listInstitutions(query: {
    country: string;
    currency: string;
    destinationType: DestinationType;
  }): Promise<Institution[]>;
  /** The account holder's name, or null when the institution has no such account. */
  nameEnquiry(query: {
    destinationType: DestinationType;
    currency: string;
    accountNumber: string;
    providerCode: string;
  }): Promise<{ accountName: string } | null>;
  /**
   * What `nameEnquiry` would answer for `query` without asking anyone, when a cache holds a fresh
   * answer; undefined otherwise. Lets a caller on a hot path skip the wait and its timer.
   */
  knownName?(
    query: Parameters<DirectoryProvider['nameEnquiry']>[0],
  ): { accountName: string } | null | undefined;
  /** What `listInstitutions` would answer for `query` from a fresh cache entry; undefined otherwise. */
  knownInstitutions?(query: Parameters<DirectoryProvider['listInstitutions']>[0]): Institution[] | undefined;
}

/** Mid-market exchange rates. */
export interface RateSource {
  /** Destination units per 1 unit of `from`, before any spread. */
  midMarket(from: string, to: string): Promise<{ rate: Decimal; asOf: Date; source: string }>;
}

export interface Providers {
  directory: DirectoryProvider;
  rates: RateSource;
}

/**
 * A provider call that failed for reasons outside the caller's control (time-out, 5xx,
 * connection refused). Mapped to 503 UPSTREAM_UNAVAILABLE at the API edge.
 */
export class ProviderUnavailableError extends Error {
  readonly provider: string;
  constructor(provider: string, message: string, options?: { cause?: unknown }) {
    super(`${provider}: ${message}`, options);
    this.name = 'ProviderUnavailableError';
    this.provider = provider;
  }
}
