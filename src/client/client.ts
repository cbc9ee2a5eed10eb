import {
  type CallArgs,
  type ErrorCode,
  type ErrorDetail,
  type ErrorEnvelope,
  type ListOperationId,
  OPERATIONS,
  type OperationId,
  type Operations,
  PayoutApi,
} from './api.ts';

/**
 * The merchant client: every operation of the API as a typed method (`PayoutApi`, generated from
 * the OpenAPI document), over `fetch`. Writes carry an Idempotency-Key (a UUID v4 made per call
 * unless given), and a call answered 429 or 503, or cut off by the network, is retried with the
 * same key after Retry-After (or a short backoff), so a retry never writes twice.
 */
export interface ClientOptions {
  /** Where the API is, e.g. `https://api.example.com` (no trailing `/v1`). */
  baseUrl: string;
  apiKey: string;
  /** Retries of a call answered 429 or 503 or cut off by the network; 2 by default, 0 to turn off. */
  maxRetries?: number;
  /** The `fetch` to use (the global one by default). */
  fetch?: typeof fetch;
  /** How to wait before a retry (a timer by default). */
  sleep?: (ms: number) => Promise<void>;
}

/** An error answer of the API, in its envelope: `code` is one of the operation's codes. */
export class PayoutApiError<C extends ErrorCode = ErrorCode> extends Error {
  readonly status: number;
  readonly code: C;
  readonly details: ErrorDetail[];
  readonly requestId: string;
  /** Seconds to wait before retrying, when the answer said (429). */
  readonly retryAfter: number | null;

  constructor(status: number, envelope: ErrorEnvelope, headers: Headers) {
    super(envelope.error.message);
    this.name = 'PayoutApiError';
    this.status = status;
    this.code = envelope.error.code as C;
    this.details = envelope.error.details;
    this.requestId = envelope.error.request_id;
    const retryAfter = headers.get('retry-after');
    this.retryAfter = retryAfter === null ? null : Number(retryAfter);
  }

  /** Whether the code is one of `codes`; narrows it. */
  is<K extends C>(...codes: K[]): this is PayoutApiError<K> {
    return (codes as string[]).includes(this.code);
  }
}

/** The call got no answer in the API's envelope: the network failed, or something else answered. */
export class PayoutTransportError extends Error {
  /** The HTTP status when something answered, else null. */
  readonly status: number | null;

  constructor(message: string, status: number | null, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PayoutTransportError';
    this.status = status;
  }
}

/** The item type of a paginated list operation (`Payout` for `listPayouts`). */
export type PageItem<K extends ListOperationId> = Operations[K]['response'] extends { data: (infer T)[] }
  ? T
  : never;

const RETRIED = new Set([429, 503]);
const MAX_BACKOFF_MS = 8_000;

export class PayoutClient extends PayoutApi {
  readonly #baseUrl: string;
  readonly #apiKey: string;
  readonly #maxRetries: number;
  readonly #fetch: typeof fetch;
  readonly #sleep: (ms: number) => Promise<void>;

  constructor(options: ClientOptions) {
    super();
    this.#baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.#apiKey = options.apiKey;
    this.#maxRetries = options.maxRetries ?? 2;
    this.#fetch = options.fetch ?? globalThis.fetch.bind(globalThis);
    this.#sleep = options.sleep ?? ((ms) => new Promise((resolve) => setTimeout(resolve, ms)));
  }

  /**
   * Every item of a cursor-paginated list, page after page (newest first), with the same filters:
   * `for await (const payout of client.paginate('listPayouts', { status: 'SUCCESSFUL' }))`.
   */
  async *paginate<K extends ListOperationId>(
    operationId: K,
    query: Operations[K]['query'] = {} as Operations[K]['query'],
  ): AsyncGenerator<PageItem<K>> {
    let cursor: string | undefined;
    for (;;) {
      const page = (await this.send(operationId, { query: { ...query, ...(cursor ? { cursor } : {}) } })) as {
        data: PageItem<K>[];
        meta: { has_more: boolean; next_cursor: string | null };
      };
      yield* page.data;
      if (!page.meta.has_more || !page.meta.next_cursor) return;
      cursor = page.meta.next_cursor;
    }
  }

  protected async send(operationId: OperationId, args: CallArgs): Promise<never> {
    const spec = OPERATIONS[operationId];
    const url = new URL(
      this.#baseUrl +
        spec.path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(args.path?.[name] ?? '')),
    );
    for (const [name, value] of Object.entries(args.query ?? {}))
      if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { 'x-api-key': this.#apiKey, accept: 'application/json' };
    if (spec.idempotent)
      headers['idempotency-key'] = args.options?.idempotencyKey ?? globalThis.crypto.randomUUID();
    if (args.options?.requestId) headers['x-request-id'] = args.options.requestId;
    if (args.body !== undefined) headers['content-type'] = 'application/json';
    const init: RequestInit = {
      method: spec.method,
      headers,
      ...(args.body !== undefined ? { body: JSON.stringify(args.body) } : {}),
      ...(args.options?.signal ? { signal: args.options.signal } : {}),
    };

    for (let attempt = 0; ; attempt++) {
      const retry = attempt < this.#maxRetries && !args.options?.signal?.aborted;
      let response: Response;
      try {
        response = await this.#fetch(url, init);
      } catch (err) {
        if (retry && !args.options?.signal?.aborted) {
          await this.#sleep(backoff(attempt, null));
          continue;
        }
        throw new PayoutTransportError(`${spec.method} ${url.pathname}: ${(err as Error).message}`, null, {
          cause: err,
        });
      }
      const text = await response.text();
      const body = parse(text);
      if (response.ok) return body as never;
      if (retry && RETRIED.has(response.status)) {
        await this.#sleep(backoff(attempt, response.headers.get('retry-after')));
        continue;
      }
      if (isEnvelope(body)) throw new PayoutApiError(response.status, body, response.headers);
      throw new PayoutTransportError(
        `${spec.method} ${url.pathname} answered ${response.status} without the API's error envelope`,
        response.status,
      );
    }
  }
}

function parse(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function isEnvelope(body: unknown): body is ErrorEnvelope {
  const error = (body as { error?: { code?: unknown } } | undefined)?.error;
  return typeof error?.code === 'string';
}

/** Retry-After when the answer gave one, else 0.5 s doubled per attempt; never more than 8 s. */
function backoff(attempt: number, retryAfter: string | null): number {
  const stated = retryAfter === null ? Number.NaN : Number(retryAfter) * 1000;
  return Math.min(Number.isFinite(stated) ? stated : 500 * 2 ** attempt, MAX_BACKOFF_MS);
}
