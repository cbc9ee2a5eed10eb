import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import got, { RequestError, TimeoutError } from 'got';
import { checkWebhookUrl, type HostResolver, systemResolver } from './url-policy.ts';

/**
 * Sends one webhook attempt and says what happened, in the words of a delivery record. Owns the
 * outbound rules of delivery: the URL policy again at send time (with the resolved addresses
 * pinned for the connection, so DNS cannot change between the check and the connect), one
 * time-out for the whole exchange, no redirects, no retries (retries are the machine's), and
 * keep-alive connections shared by every attempt of the process.
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
  /** `WEBHOOK_ALLOW_PRIVATE_URLS`. */
  allowPrivate: boolean;
  resolve?: HostResolver;
}

/** Response bytes read before the connection is dropped: receivers should answer with an empty body. */
const MAX_RESPONSE_BYTES = 64 * 1024;

// One pool per process: attempts to the same receiver reuse connections. Sockets idle for long
// are closed so that a receiver's restart or DNS change is picked up.
const agents = {
  http: new http.Agent({ keepAlive: true, maxFreeSockets: 64, timeout: 60_000, scheduling: 'lifo' }),
  https: new https.Agent({ keepAlive: true, maxFreeSockets: 64, timeout: 60_000, scheduling: 'lifo' }),
};

/** A sender bound to the delivery settings. */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const resolve = options.resolve ?? systemResolver;
  const client = got.extend({
    method: 'POST',
    agent: agents,
    followRedirect: false,
    throwHttpErrors: false,
    retry: { limit: 0 },
    timeout: { request: options.timeoutMs },
    decompress: false,
  });

  return async (request) => {
    const started = performance.now();
    const elapsed = () => Math.round(performance.now() - started);
    const verdict = await checkWebhookUrl(request.url, {
      allowPrivate: options.allowPrivate,
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

    let status: number | null = null;
    try {
      const stream = client.stream(verdict.url, {
        body: request.body,
        headers: request.headers,
        dnsLookup: pinnedLookup(verdict.addresses),
      });
      stream.on('response', (response: { statusCode: number }) => {
        status = response.statusCode;
      });
      // Drain the body so the connection can be reused, but never hold more than a little of it.
      let bytes = 0;
      for await (const chunk of stream) {
        bytes += (chunk as Buffer).length;
        if (bytes > MAX_RESPONSE_BYTES) {
          stream.destroy();
          break;
        }
      }
    } catch (err) {
      // A receiver that answered and then stalled or broke the body still answered.
      if (status === null) {
        return {
          ok: false,
          responseStatus: null,
          failureReason: transportReason(err, options),
          durationMs: elapsed(),
        };
      }
    }
    const answered = status as number | null;
    if (answered === null) {
      return { ok: false, responseStatus: null, failureReason: 'no response', durationMs: elapsed() };
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
  const code =
    err instanceof RequestError || err instanceof Error ? (err as { code?: string }).code : undefined;
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
