import type { Context, Next } from 'koa';
import { readBounded } from '#src/lib/body.ts';
import { newRequestId } from '#src/lib/ids.ts';
import { flatLogger, type Logger } from '#src/lib/log.ts';
import type { Metrics } from '#src/observability/metrics.ts';
import { AppError, envelope } from './errors.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './input.ts';
import { isTrpcPath, toAppError, trpcErrorShape } from './trpc.ts';

export const MAX_BODY_BYTES = 1024 * 1024;

const EMPTY = Buffer.alloc(0);

declare module 'koa' {
  interface Request {
    /** The request body exactly as received; signature checks and JSON parsing both read it. */
    rawBody: Buffer;
  }
  interface DefaultState {
    requestId: string;
    /** The caller's tenant, once its API key is known (the access log's `tenant_id`). */
    tenantId?: string;
    /** The error code the request was answered with (the access log's `error_code`). */
    errorCode?: string;
  }
}

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Takes the caller's X-Request-Id when it is sane, else makes one; echoes it on the response. */
function assignRequestId(ctx: Context): void {
  const given = ctx.get('x-request-id');
  ctx.state.requestId = REQUEST_ID.test(given) ? given : newRequestId();
  ctx.set('X-Request-Id', ctx.state.requestId);
}

/**
 * Renders every error as the contract's envelope (tRPC's error shape at /trpc, for refusals made
 * before tRPC runs: a method, a body, an input too deep). AppErrors keep their code; anything
 * else is logged with the request id and answered as a generic 500: no stack or internal message
 * leaks.
 */
function renderError(ctx: Context, err: unknown, log: Logger): void {
  const app = fromKoaError(err) ?? toAppError(err, log.child({ request_id: ctx.state.requestId }));
  ctx.status = app.status;
  ctx.state.errorCode = app.code;
  for (const [name, value] of Object.entries(app.headers)) ctx.set(name, value);
  ctx.type = 'application/json';
  ctx.body = JSON.stringify(
    isTrpcPath(ctx.path)
      ? { error: trpcErrorShape(app, ctx.state.requestId) }
      : envelope(app, ctx.state.requestId),
  );
}

/**
 * The layer around every request, outermost: its id ({@link assignRequestId}), the envelope of
 * whatever it fails with ({@link renderError}), and its access line and metrics once it is
 * answered ({@link accessLine}). One layer, not three: each layer of Koa's chain is a bound
 * function, a promise and an async frame per request.
 */
export function requestFrame(log: Logger, metrics?: Metrics, procedures: ReadonlySet<string> = new Set()) {
  const access = accessLine(log, metrics, procedures);
  return async (ctx: Context, next: Next) => {
    assignRequestId(ctx);
    const started = performance.now();
    try {
      await next();
    } catch (err) {
      renderError(ctx, err, log);
    } finally {
      access(ctx, started);
    }
  };
}

/** Errors raised by Koa or @koa/router themselves (405, 501) carry an HTTP status of their own. */
function fromKoaError(err: unknown): AppError | null {
  if (err instanceof AppError) return err;
  const status = (err as { status?: unknown })?.status;
  // http-errors exposes 4xx only; the router's 501 is one of its own all the same.
  if ((err as { expose?: unknown })?.expose !== true && status !== 501) return null;
  if (status === 501) return new AppError('METHOD_NOT_IMPLEMENTED');
  if (status === 405) return new AppError('METHOD_NOT_ALLOWED');
  if (status === 404) return new AppError('ROUTE_NOT_FOUND');
  return null;
}

/**
 * Buffers the raw body once, refusing more than 1 MiB (413). Anything sent with a body must be
 * JSON (415 otherwise). A request without a body is done at once (nothing to wait for); one with
 * a body gives the promise of its reading.
 */
export function rawBody(limit = MAX_BODY_BYTES) {
  return (ctx: Context): Promise<void> | undefined => {
    const declared = Number(ctx.get('content-length') || 0);
    if (declared > limit) throw new AppError('PAYLOAD_TOO_LARGE');
    // Without Content-Length or Transfer-Encoding a request has no body (RFC 9112 §6.3): most GETs.
    if (declared === 0 && !ctx.get('transfer-encoding')) {
      ctx.request.rawBody = EMPTY;
      return undefined;
    }
    return readBounded(ctx.req, limit).then((body) => {
      if (!body) throw new AppError('PAYLOAD_TOO_LARGE');
      ctx.request.rawBody = body;
      if (body.length > 0 && !isJson(ctx)) throw new AppError('UNSUPPORTED_MEDIA_TYPE');
      if (body.length > 0) refuseDeepJson(body.toString('utf8'), 'body');
    });
  };
}

/** How nearly every client labels JSON, lower-cased: recognised without parsing the header. */
const PLAIN_JSON_TYPES = new Set([
  'application/json',
  'application/json; charset=utf-8',
  'application/json;charset=utf-8',
]);

/** Whether the request's body is labelled JSON (Koa's `ctx.is`, after the common spellings). */
function isJson(ctx: Context): boolean {
  const type = ctx.req.headers['content-type'];
  if (type !== undefined && PLAIN_JSON_TYPES.has(type.toLowerCase())) return true;
  return Boolean(ctx.is('application/json'));
}

/** A 400 for JSON text (a body, a tRPC query's input) that nests deeper than MAX_JSON_DEPTH. */
export function refuseDeepJson(text: string, field: string): void {
  if (nestsDeeperThan(text, MAX_JSON_DEPTH))
    throw new AppError('VALIDATION_FAILED', {
      details: [{ field, issue: `nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` }],
    });
}

/** Parses the buffered body as a JSON object; an empty body is an empty object. */
export function jsonBody(ctx: Context): Record<string, unknown> {
  const raw = ctx.request.rawBody;
  if (!raw || raw.length === 0) return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString('utf8'));
  } catch {
    throw new AppError('VALIDATION_FAILED', { details: [{ field: 'body', issue: 'is not valid JSON' }] });
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new AppError('VALIDATION_FAILED', { details: [{ field: 'body', issue: 'must be a JSON object' }] });
  }
  return parsed as Record<string, unknown>;
}

/** Paths served outside the routers, each its own route in the metrics. */
const FIXED_ROUTES = new Set([
  '/',
  '/health',
  '/health/live',
  '/health/ready',
  '/metrics',
  '/openapi.json',
  '/trpc',
]);

/**
 * The route a request matched, as a template (`/v1/payouts/:id`), for the metrics and the access
 * log: a label of bounded cardinality, whatever paths callers send. tRPC calls count per procedure
 * when the path names exactly one; pages under /docs and /console share one route each.
 */
export function routeOf(ctx: Context, procedures: ReadonlySet<string>): string {
  const matched = (ctx as Context & { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === 'string') return matched;
  const path = ctx.path;
  if (FIXED_ROUTES.has(path)) return path;
  if (path.startsWith('/trpc/')) {
    const name = path.slice('/trpc/'.length);
    return procedures.has(name) ? `/trpc/${name}` : '/trpc/*';
  }
  if (path === '/docs' || path.startsWith('/docs/')) return path === '/docs/machines' ? path : '/docs/*';
  if (path === '/console' || path.startsWith('/console/')) return '/console/*';
  return 'unmatched';
}

/**
 * Requests logged at debug rather than info: what the console reads while it is open (successful
 * tRPC queries, polled every few seconds, and its own assets), which would bury the start-up
 * banner and every line worth reading. They still count in the metrics.
 */
function quietRequest(ctx: Context): boolean {
  if (ctx.status >= 400 || (ctx.method !== 'GET' && ctx.method !== 'HEAD')) return false;
  return ctx.path.startsWith('/trpc/') || ctx.path === '/console' || ctx.path.startsWith('/console/');
}

/**
 * One structured log line per request, without headers or bodies (they may hold secrets): the
 * request id, method, path, route, status, time, the caller's tenant once its key is known, and
 * the error code of an error. Each request also counts in the HTTP metrics by route template.
 * Operators' successful reads (`quietRequest`) are logged at debug. Called once the request is
 * answered, with the time it started.
 */
export function accessLine(log: Logger, metrics?: Metrics, procedures: ReadonlySet<string> = new Set()) {
  // Every field is a plain value: the flat logger's redaction costs a fifth of the full one's.
  const lines = flatLogger(log);
  return (ctx: Context, started: number): void => {
    const seconds = (performance.now() - started) / 1000;
    const route = routeOf(ctx, procedures);
    metrics?.http.record(route, ctx.method, ctx.status, seconds);
    lines[quietRequest(ctx) ? 'debug' : 'info'](
      {
        request_id: ctx.state.requestId,
        method: ctx.method,
        path: ctx.path,
        route,
        status: ctx.status,
        ms: Math.round(seconds * 10_000) / 10,
        tenant_id: ctx.state.tenantId,
        error_code: ctx.state.errorCode,
      },
      'request',
    );
  };
}
