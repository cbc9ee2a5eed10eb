import { z } from 'zod';
import { DESTINATION_TYPES } from '#src/corridors/corridors.ts';
import type { Logger } from '#src/lib/log.ts';
import { toDecimal } from '#src/lib/money.ts';
import {
  createHttpClient,
  errorCode,
  type HttpClient,
  type ProviderCallMetrics,
  parse,
  send,
  unavailable,
  unexpected,
} from './http-client.ts';
import type { DirectoryProvider, Providers, RateSource } from './providers.ts';

/**
 * Adapters for the provider-side HTTP API (the sandbox serves the same one). They build
 * requests and parse responses; the shared client does the HTTP. Whatever they cannot make
 * sense of is a ProviderUnavailableError, never a guess.
 */

const institutionsBody = z.object({
  data: z.array(
    z.object({
      provider_code: z.string().min(1),
      provider_name: z.string().min(1),
      destination_type: z.enum(DESTINATION_TYPES),
    }),
  ),
});

const nameEnquiryBody = z.object({
  account_name: z.string().trim().min(1),
  provider_code: z.string(),
  account_number: z.string(),
});

/** Name-enquiry misses: the institution, or the account at it, does not exist. */
const NAME_ENQUIRY_MISSES: ReadonlySet<string> = new Set(['ACCOUNT_NOT_FOUND', 'INSTITUTION_NOT_FOUND']);

const midRateBody = z.object({
  from: z.string(),
  to: z.string(),
  rate: z.string().regex(/^\d+(\.\d+)?$/, 'must be a decimal string'),
  as_of: z.iso.datetime({ offset: true }),
  source: z.string().min(1),
});

/** Directory and name enquiry over HTTP. */
export function httpDirectoryProvider(client: HttpClient): DirectoryProvider {
  return {
    async listInstitutions(query) {
      const response = await send(client, {
        method: 'GET',
        path: 'directory/institutions',
        searchParams: {
          country: query.country,
          currency: query.currency,
          destination_type: query.destinationType,
        },
      });
      if (response.status !== 200) throw unexpected(client, response);
      const { data } = parse(client, institutionsBody, response.body);
      // Banks and mobile-money providers are never mixed in one answer, whatever the upstream sends.
      return data.filter((i) => i.destination_type === query.destinationType);
    },

    async nameEnquiry(query) {
      const response = await send(client, {
        method: 'POST',
        path: 'directory/name-enquiry',
        json: {
          destination_type: query.destinationType,
          currency: query.currency,
          account_number: query.accountNumber,
          provider_code: query.providerCode,
        },
      });
      if (response.status === 404 && NAME_ENQUIRY_MISSES.has(errorCode(response) ?? '')) return null;
      if (response.status !== 200) throw unexpected(client, response);
      const body = parse(client, nameEnquiryBody, response.body);
      // A name confirmed for some other account is worse than no name at all.
      if (body.account_number !== query.accountNumber || body.provider_code !== query.providerCode) {
        throw unavailable(client, 'name enquiry answered for a different account');
      }
      return { accountName: body.account_name };
    },
  };
}

/** Mid-market rates over HTTP. */
export function httpRateSource(client: HttpClient): RateSource {
  return {
    async midMarket(from, to) {
      const response = await send(client, { method: 'GET', path: 'rates/mid', searchParams: { from, to } });
      if (response.status !== 200) throw unexpected(client, response);
      const body = parse(client, midRateBody, response.body);
      if (body.from !== from || body.to !== to) {
        throw unavailable(client, `rate answered for ${body.from}/${body.to}`);
      }
      const rate = toDecimal(body.rate);
      if (!rate.isGreaterThan(0)) throw unavailable(client, 'rate is not positive');
      return { rate, asOf: new Date(body.as_of), source: body.source };
    },
  };
}

/** Every provider of the service, talking to one provider base URL (the sandbox's, or a real gateway's). */
export function httpProviders(options: {
  baseUrl: string;
  timeoutMs: number;
  log: Logger;
  metrics?: ProviderCallMetrics;
  retryBaseMs?: number;
}): Providers {
  const client = (name: string) => createHttpClient({ ...options, name });
  return {
    directory: httpDirectoryProvider(client('directory')),
    rates: httpRateSource(client('rates')),
  };
}
