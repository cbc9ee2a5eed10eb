import got, { type Got, RequestError, type Response, TimeoutError } from 'got';
import type { Counter, Histogram } from 'prom-client';
import { z } from 'zod';
import type { Logger } from '#src/lib/log.ts';
import { ProviderUnavailableError } from './providers.ts';

/** The one outbound HTTP client type: a got instance carrying the provider's defaults. */
export type HttpClient = Got;

export interface HttpClientOptions {
  baseUrl: string;
  timeoutMs: number;
  log: Logger;
  /** Names the provider in logs and in ProviderUnavailableError. */
  name: string;
  /** First retry delay, doubled per retry (default 100 ms); tests make it 1 ms instead of waiting. */
  retryBaseMs?: number;
  /** Where each HTTP attempt is counted, with its outcome and duration (`src/observability/metrics.ts`). */
  metrics?: ProviderCallMetrics;
}

/** The instruments a client records its attempts in. */
export interface ProviderCallMetrics {
  providerCalls: Counter<'provider' | 'outcome'>;
  providerDuration: Histogram<'provider' | 'outcome'>;
}

/**
 * An attempt's outcome as a metric label: `ok` (2xx), `client_error` (another 4xx), `unavailable`
 * (5xx, 408, 429), `timeout`, or `network_error` (no answer at all).
 */
function outcomeOfStatus(status: number): string {
  if (status >= 500 || UNAVAILABLE_STATUS_CODES.has(status)) return 'unavailable';
  if (status >= 400) return 'client_error';
  return 'ok';
}

function outcomeOfError(error: RequestError): string {
  return error instanceof TimeoutError || error.code === 'ETIMEDOUT' ? 'timeout' : 'network_error';
}

const RETRY_LIMIT = 2;
const RETRY_STATUS_CODES = [408, 429, 500, 502, 503, 504];
// got's own backoff starts at 1 s, longer than a merchant request should wait on a flaky read.
const DEFAULT_RETRY_BASE_MS = 100;
const UNAVAILABLE_STATUS_CODES = new Set([408, 429]);

/**
 * The shared outbound client: time-out per attempt, retries for GET only, JSON responses, and a
 * debug line per call with method, path and status (never the query string or body, which can
 * carry account numbers). HTTP error statuses resolve; {@link send} decides what they mean.
 */
export function createHttpClient(options: HttpClientOptions): HttpClient {
  const log = options.log.child({ provider: options.name });
  const retryBaseMs = options.retryBaseMs ?? DEFAULT_RETRY_BASE_MS;
  const metrics = options.metrics;
  const provider = options.name;
  const record = (outcome: string, ms: number | undefined) => {
    if (!metrics) return;
    metrics.providerCalls.inc({ provider, outcome });
    if (ms !== undefined && Number.isFinite(ms))
      metrics.providerDuration.observe({ provider, outcome }, ms / 1000);
  };
  // An attempt that got no response: its duration from its own start to now.
  const failed = (error: RequestError) => {
    if (error.response) return;
    const start = error.timings?.start;
    record(outcomeOfError(error), start === undefined ? undefined : Date.now() - start);
  };
  return got.extend({
    prefixUrl: options.baseUrl,
    timeout: { request: options.timeoutMs },
    retry: {
      limit: RETRY_LIMIT,
      methods: ['GET'],
      statusCodes: RETRY_STATUS_CODES,
      // A Retry-After the server sent (and got accepted as within the time-out) wins. Never 0:
      // got reads 0 as "do not retry".
      calculateDelay: ({ attemptCount, computedValue, error }) =>
        error.response?.headers['retry-after']
          ? computedValue
          : Math.max(1, retryBaseMs * 2 ** (attemptCount - 1)),
    },
    throwHttpErrors: false,
    responseType: 'json',
    context: { provider: options.name },
    hooks: {
      afterResponse: [
        (response) => {
          record(outcomeOfStatus(response.statusCode), response.timings?.phases.total);
          log.debug(
            {
              method: response.request.options.method,
              path: pathOf(response.url),
              status: response.statusCode,
              attempt: response.retryCount + 1,
              ms: response.timings?.phases.total,
            },
            'provider call',
          );
          return response;
        },
      ],
      beforeRetry: [
        (error, retryCount) => {
          failed(error);
          log.debug(
            {
              method: error.options.method,
              path: pathOf(error.options.url),
              retry: retryCount,
              reason: reasonOf(error),
            },
            'provider call retried',
          );
        },
      ],
      beforeError: [
        (error) => {
          failed(error);
          log.debug(
            { method: error.options.method, path: pathOf(error.options.url), reason: reasonOf(error) },
            'provider call failed',
          );
          return error;
        },
      ],
    },
  });
}

/** One provider request as an adapter builds it; the path is relative to the client's base URL. */
export interface ProviderRequest {
  method: 'GET' | 'POST';
  path: string;
  searchParams?: Record<string, string>;
  json?: Record<string, unknown>;
}

/** A response the provider actually gave: a 2xx or a 4xx other than 408/429, body parsed when JSON. */
export interface ProviderResponse {
  status: number;
  body: unknown;
}

/**
 * Sends a request through the client. Connection failures, time-outs, unparseable bodies, 5xx,
 * 408 and 429 (after any retries) all throw ProviderUnavailableError: the caller can only retry
 * later. Every other status is returned for the adapter to interpret.
 */
export async function send(client: HttpClient, request: ProviderRequest): Promise<ProviderResponse> {
  const provider = providerName(client);
  let response: Response<unknown>;
  try {
    response = await client<unknown>(request.path, {
      method: request.method,
      searchParams: request.searchParams,
      json: request.json,
      responseType: 'json',
    });
  } catch (err) {
    if (err instanceof RequestError) {
      throw new ProviderUnavailableError(provider, reasonOf(err), { cause: err });
    }
    throw err;
  }
  if (response.statusCode >= 500 || UNAVAILABLE_STATUS_CODES.has(response.statusCode)) {
    throw new ProviderUnavailableError(
      provider,
      `${request.method} ${request.path} answered ${response.statusCode}`,
    );
  }
  return { status: response.statusCode, body: response.body };
}

/** The provider name a client was created with. */
export function providerName(client: HttpClient): string {
  const name = client.defaults.options.context['provider'];
  return typeof name === 'string' ? name : 'provider';
}

function pathOf(url: string | URL | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    return new URL(url).pathname;
  } catch {
    return undefined;
  }
}

/** A short, log-safe cause: error code and status, never the URL's query string. */
function reasonOf(error: RequestError): string {
  if (error.response) return `status ${error.response.statusCode}`;
  return error.code ? `${error.code}: ${error.message}` : error.message;
}

const errorBody = z.object({ error: z.object({ code: z.string(), message: z.string().optional() }) });

/** A provider failure the caller cannot cure: mapped to 503 UPSTREAM_UNAVAILABLE at the API edge. */
export function unavailable(client: HttpClient, message: string): ProviderUnavailableError {
  return new ProviderUnavailableError(providerName(client), message);
}

/** The provider's own error code in an error body, when it sent one. */
export function errorCode(response: ProviderResponse): string | undefined {
  return errorBody.safeParse(response.body).data?.error.code;
}

/** A status the adapter has no meaning for: the provider is not answering the API we speak. */
export function unexpected(client: HttpClient, response: ProviderResponse): ProviderUnavailableError {
  const code = errorCode(response);
  return unavailable(client, `unexpected status ${response.status}${code ? ` (${code})` : ''}`);
}

/** Validates a response body; a malformed one means the provider cannot be used right now. */
export function parse<S extends z.ZodType>(client: HttpClient, schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw unavailable(
    client,
    `malformed response: ${issue?.path.join('.') || 'body'} ${issue?.message ?? 'is invalid'}`,
  );
}
