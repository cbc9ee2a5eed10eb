import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import got, { TimeoutError } from 'got';
import { checkWebhookUrl, type HostResolver, systemResolver, type UrlPolicySwitches } from './url-policy.ts';

/**
 * Sends one webhook attempt and says what happened, in the words of a delivery record. Owns the
 * outbound rules of delivery: the URL policy again at send time (with the resolved addresses
 * pinned for the connection, so DNS cannot change between the check and the connect), one
 * time-out for the whole exchange, no redirects, no retries (retries are the machine's), and
 * keep-alive connections shared by every attempt of the process.
 *
 * Attempts go out through got (like every outbound call), with a client of their own: the shared
 * provider client's retries, JSON parsing and base URL are not what a delivery wants.
 */

/** One attempt as the delivery job builds it. */
export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
}

/** The outcome of one attempt. `responseStatus` is null when no HTTP response came back. */
export type AttemptOutcome =
  | { ok: true; responseStatus: number; durationMs: number }
  | { ok: false; responseStatus: number | null; failureReason: string; durationMs: number };

export type WebhookSender = (request: WebhookRequest) => Promise<AttemptOutcome>;

export interface WebhookSenderOptions {
  /** `WEBHOOK_TIMEOUT_MS`: from the start of the request to the end of the response. */
  timeoutMs: number;
  /** `WEBHOOK_ALLOW_PRIVATE_URLS` and `WEBHOOK_ALLOW_LOCALHOST`. */
  policy: UrlPolicySwitches;
  resolve?: HostResolver;
}

/** Response bytes read before the connection is dropped: receivers should answer with an empty body. */
const MAX_RESPONSE_BYTES = 64 * 1024;

/**
 * How long a host's resolved addresses are reused. The policy still judges them on every send;
 * only the lookup is saved, so a name that moves somewhere private is refused within this long.
 */
const DNS_CACHE_MS = 5_000;

// One pool per process: attempts to the same receiver reuse connections. Sockets idle for long
// are closed so that a receiver's restart or DNS change is picked up.
const agents = {
  http: new http.Agent({ keepAlive: true, maxFreeSockets: 64, timeout: 60_000, scheduling: 'lifo' }),
  https: new https.Agent({ keepAlive: true, maxFreeSockets: 64, timeout: 60_000, scheduling: 'lifo' }),
};

/** The system resolver behind one cache for the whole process (its lookups span passes). */
const systemCached = cachedResolver(systemResolver, DNS_CACHE_MS);

/** A sender bound to the delivery settings. */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const resolve = options.resolve ? cachedResolver(options.resolve, DNS_CACHE_MS) : systemCached;
  // The exchange's time-out is the sender's: set once here rather than merged into every request.
  const client = deliveryClient.extend({ timeout: { request: options.timeoutMs } });

  return async (request) => {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const verdict = await checkWebhookUrl(request.url, {
      ...options.policy,
      resolve,
      unresolved: 'reject',
    });
    if (!verdict.ok) {
      const failureReason =
        verdict.issue === 'host does not resolve'
          ? 'DNS: host does not resolve'
          : `refused: URL ${verdict.issue}`;
      return { ok: false, responseStatus: null, failureReason, durationMs: elapsed() };
    }

    const exchange = await post(client, verdict.url, verdict.addresses, request);
    // A receiver that answered and then stalled or broke the body still answered.
    const answered = exchange.status;
    if (answered === null) {
      const failureReason = exchange.error ? transportReason(exchange.error, options) : 'no response';
      return { ok: false, responseStatus: null, failureReason, durationMs: elapsed() };
    }
    if (answered >= 200 && answered < 300)
      return { ok: true, responseStatus: answered, durationMs: elapsed() };
    return {
      ok: false,
      responseStatus: answered,
      failureReason: statusReason(answered),
      durationMs: elapsed(),
    };
  };
}

/**
 * The delivery client: got with nothing of its own on top (no retries, no redirects, no HTTP error
 * as an exception, no body parsing), over the keep-alive agents above. Each sender extends it
 * with the exchange's time-out.
 */
const deliveryClient = got.extend({
  retry: { limit: 0 },
  followRedirect: false,
  throwHttpErrors: false,
  agent: agents,
  decompress: false,
});

/**
 * POSTs once and reads at most `MAX_RESPONSE_BYTES` of the answer (draining it lets the connection
 * be reused). Resolves with the status, if one came, and the error that ended the exchange, if any;
 * never rejects.
 */
function post(
  client: typeof deliveryClient,
  url: string,
  addresses: string[],
  request: WebhookRequest,
): Promise<{ status: number | null; error?: unknown }> {
  return new Promise((resolve) => {
    let status: number | null = null;
    let done = false;
    const finish = (error?: unknown) => {
      if (done) return;
      done = true;
      resolve({ status, error });
    };
    const stream = client.stream.post(url, {
      body: request.body,
      headers: request.headers,
      dnsLookup: pinnedLookup(addresses) as never,
    });
    stream.on('response', (res: { statusCode: number }) => {
      status = res.statusCode;
    });
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > MAX_RESPONSE_BYTES) {
        stream.destroy();
        finish();
      }
    });
    stream.on('end', () => finish());
    stream.on('error', (err: unknown) => finish(err));
  });
}

/** `resolve` with each host's addresses kept for `ttlMs`; failures are not kept. */
export function cachedResolver(resolve: HostResolver, ttlMs: number): HostResolver {
  const cache = new Map<string, { addresses: string[]; until: number }>();
  return async (host) => {
    const now = performance.now();
    const hit = cache.get(host);
    if (hit && hit.until > now) return hit.addresses;
    const addresses = await resolve(host);
    // Bounded: a process talks to a few thousand receivers at most; start over rather than grow.
    if (cache.size >= 10_000) cache.clear();
    cache.set(host, { addresses, until: now + ttlMs });
    return addresses;
  };
}

/** The failure reason of an answer other than 2xx. */
function statusReason(status: number): string {
  if (status >= 300 && status < 400) return `HTTP ${status}: redirects are not followed`;
  return `HTTP ${status}`;
}

/** A resolver that hands the connection exactly the addresses the URL policy approved. */
function pinnedLookup(addresses: string[]): LookupFunction {
  const entries = addresses.map((address) => ({ address, family: isIP(address) === 6 ? 6 : 4 }));
  return ((_host: string, opts: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    const first = entries[0];
    if (!first) {
      callback(Object.assign(new Error('no approved address'), { code: 'ENOTFOUND' }));
      return;
    }
    if (opts?.all) callback(null, entries);
    else callback(null, first.address, first.family);
  }) as LookupFunction;
}

const TLS_CODE = /CERT|SSL|TLS|^EPROTO$/;

/** Names a transport failure the way the delivery log does: time-out, DNS, TLS, refused... */
function transportReason(err: unknown, options: WebhookSenderOptions): string {
  if (err instanceof TimeoutError) return `timeout: no response within ${options.timeoutMs} ms`;
  const code = err instanceof Error ? (err as { code?: string }).code : undefined;
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset by the receiver';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'DNS: host does not resolve';
    case 'ETIMEDOUT':
      return `timeout: no response within ${options.timeoutMs} ms`;
    default:
      if (code && TLS_CODE.test(code)) {
        // EPROTO alone says little; OpenSSL's last words ("wrong version number") say more.
        const detail =
          code === 'EPROTO'
            ? /SSL routines:[^:]*:([^:]+)/.exec((err as Error).message)?.[1]?.trim()
            : undefined;
        return detail ? `TLS: ${code} (${detail})` : `TLS: ${code}`;
      }
      return `transport error: ${code ?? (err instanceof Error ? err.message : String(err))}`.slice(0, 500);
  }
}
