import { type AnyRouter, initTRPC, TRPCError } from '@trpc/server';
import { type TRPC_ERROR_CODE_KEY, TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import type { OpenApiMeta } from 'trpc-to-openapi';
import { z } from 'zod';
import { isDatabaseUnavailable } from '#src/db/unavailable.ts';
import type { Deps } from '#src/deps.ts';
import type { Logger } from '#src/lib/log.ts';
import type { Role } from '#src/operators/roles.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { AppError, ERROR_CATALOGUE, type ErrorCode } from './errors.ts';
import type { RateLimitState } from './rate-limit.ts';

/**
 * What every procedure sees: the dependencies, the request's id, headers and address. Procedures
 * that work through the ORM get the request's own EntityManager and logger from their builder
 * (`requestScope` in procedures.ts), so that the hot paths, which talk SQL, never fork one.
 */
export interface RequestContext {
  deps: Deps;
  requestId: string;
  /** Lower-cased request headers. */
  headers: Record<string, string | undefined>;
  /** Client address, for rate limiting of unauthenticated callers and audit logs. */
  ip: string;
  /** The output schema of a procedure by path (idempotency stores responses as the client sees them). */
  outputSchemaOf?: (path: string) => z.ZodType | undefined;
  /** Set by the REST adapter: how a procedure tells it what exactly to send. */
  response?: ResponseHolder;
}

/** Where the REST adapter learns what to send: a byte-for-byte replay, or the body already rendered. */
export interface ResponseHolder {
  replay?: { status: number; body: string };
  /** The response body exactly as stored under the Idempotency-Key, or as another format rendered it. */
  rendered?: string;
  /** The content type of `rendered` when it is not JSON (a CSV export). */
  contentType?: string;
  /** The caller's rate-limit state, once its API key is known. */
  rateLimit?: RateLimitState;
  /** The caller's tenant, once its API key is known: the access log's `tenant_id`. */
  tenantId?: string;
}

export interface ProcedureMeta extends OpenApiMeta {
  /** HTTP status of a successful REST response; 200 unless said otherwise (create is 201). */
  successStatus?: 200 | 201;
  /**
   * What the procedure answers with `Accept: text/csv` (it renders the CSV into the response
   * holder); documented as the success response's `text/csv` content.
   */
  csv?: string;
  /** Scope the procedure requires, recorded for the OpenAPI document and the scope checks. */
  scope?: string;
  /** Writes that demand an Idempotency-Key header. */
  idempotent?: boolean;
  /**
   * The input as the Idempotency-Key compares it, when one value has several spellings (a mobile
   * number, a network's two names): each in the form the write keeps, so that a request sent
   * again in another spelling replays instead of being refused. Must accept any input, however
   * malformed (the schema has not checked it yet).
   */
  comparable?: (raw: unknown, deps: Deps) => unknown;
  /**
   * The error codes this procedure itself can answer with, beyond those every merchant procedure
   * shares (authentication, scope, validation, rate limit, idempotency, body, cursor; see
   * `operationErrors` in openapi.ts). The OpenAPI document lists them per operation, and the
   * schema-driven test fails on a response whose code is not listed.
   */
  errors?: readonly ErrorCode[];
  /** `admin.*` only: the least role that may call the procedure (see `requiredRole`). */
  role?: Role;
  /**
   * `admin.*` queries only: a list or count that tolerates DATABASE_REPLICA_MAX_LAG_MS of lag, so
   * its `ctx.em` and `ctx.readSql` may be the replica's (src/db/replica.ts).
   */
  lagTolerant?: boolean;
  /**
   * The handler builds its output exactly as the output schema renders it (see
   * {@link settleOutputChecks}): the hot paths, whose output is then not parsed again in production.
   */
  exactOutput?: boolean;
}

const t = initTRPC
  .context<RequestContext>()
  .meta<ProcedureMeta>()
  .create({
    errorFormatter({ shape, error, ctx }) {
      return { ...shape, ...trpcErrorShape(toAppError(error, ctx && requestLog(ctx)), ctx?.requestId) };
    },
  });

/**
 * The tRPC code of each HTTP status the catalogue uses, so that a tRPC client sees a 401 as
 * UNAUTHORIZED (not INTERNAL_SERVER_ERROR) and retries only what is worth retrying. tRPC's own
 * table maps each of these codes back to the same status.
 */
const TRPC_CODE_OF_STATUS = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_SUPPORTED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  422: 'UNPROCESSABLE_CONTENT',
  429: 'TOO_MANY_REQUESTS',
  500: 'INTERNAL_SERVER_ERROR',
  501: 'NOT_IMPLEMENTED',
  503: 'SERVICE_UNAVAILABLE',
} as const satisfies Record<(typeof ERROR_CATALOGUE)[ErrorCode]['status'], TRPC_ERROR_CODE_KEY>;

/** The tRPC error code a catalogue code is sent with over tRPC (its HTTP status's). */
export function trpcCodeOf(code: ErrorCode): TRPC_ERROR_CODE_KEY {
  return TRPC_CODE_OF_STATUS[ERROR_CATALOGUE[code].status];
}

/**
 * A catalogue error as tRPC clients read it (`error` of a tRPC response): the tRPC code of its
 * status, both as JSON-RPC number and by name, and the catalogue's code in `data.app_code`.
 */
export function trpcErrorShape(app: AppError, requestId: string | undefined) {
  const code = trpcCodeOf(app.code);
  return {
    code: TRPC_ERROR_CODES_BY_KEY[code],
    message: app.message,
    data: {
      code,
      httpStatus: app.status,
      app_code: app.code,
      details: app.details,
      request_id: requestId,
    },
  };
}

/** Whether a request is for the tRPC endpoint, whose refusals take tRPC's shape (`trpcErrorShape`). */
export function isTrpcPath(path: string): boolean {
  return path === '/trpc' || path.startsWith('/trpc/');
}

export const router = t.router;

/** tRPC marks the middleware that `.output()` adds with this `_type`. */
const OUTPUT_CHECK = 'output';

interface CheckedDef {
  meta?: ProcedureMeta;
  output?: z.ZodType;
  middlewares: ((opts: { next: () => Promise<{ ok: boolean; data?: unknown }> }) => Promise<unknown>)[];
}

/**
 * The output checks of the procedures marked `meta.exactOutput` (the hot paths: create, list and
 * get payouts, 20-30 µs of zod for a page of twenty). Under NODE_ENV=production they are dropped:
 * the handler's output is sent as it is. Anywhere else (development, the tests) the check is
 * stricter than tRPC's: the output must be valid and come out of the schema byte for byte as it
 * went in (no field stripped, reordered or transformed), so that every response the tests make
 * proves that production, which skips the schema, sends what the schema would have rendered.
 */
export function settleOutputChecks<R extends AnyRouter>(
  appRouter: R,
  production = process.env.NODE_ENV === 'production',
): R {
  for (const procedure of Object.values(appRouter._def.procedures)) {
    const def = (procedure as { _def: CheckedDef })._def;
    const schema = def.output;
    if (!def.meta?.exactOutput || !schema) continue;
    const at = def.middlewares.findIndex((m) => (m as { _type?: string })._type === OUTPUT_CHECK);
    if (at < 0) continue;
    if (production) {
      def.middlewares = def.middlewares.filter((_, i) => i !== at);
      continue;
    }
    const exact: CheckedDef['middlewares'][number] = async ({ next }) => {
      const result = await next();
      if (!result.ok) return result;
      const parsed = schema.safeParse(result.data);
      if (!parsed.success || JSON.stringify(parsed.data) !== JSON.stringify(result.data))
        throw new TRPCError({
          code: 'INTERNAL_SERVER_ERROR',
          message: 'Output validation failed',
          cause: parsed.success
            ? new Error('the output is not exactly what its schema renders')
            : parsed.error,
        });
      return result;
    };
    def.middlewares = def.middlewares.map((m, i) => (i === at ? exact : m));
  }
  return appRouter;
}
export const middleware = t.middleware;
export const publicProcedure = t.procedure;

/** The service's logger bound to the request's id. */
export function requestLog(
  ctx: Pick<RequestContext, 'deps' | 'requestId'>,
  bindings?: Record<string, string>,
): Logger {
  return ctx.deps.log.child({ request_id: ctx.requestId, ...bindings });
}

/** Wraps an AppError so tRPC carries it to the REST adapter and the error formatter intact. */
export function fail(code: ErrorCode, options?: ConstructorParameters<typeof AppError>[1]): never {
  throw new AppError(code, options);
}

/** Seconds a client is told to wait after the database connection was lost under its request. */
const DATABASE_RETRY_AFTER_S = 1;

/**
 * Maps whatever a procedure threw to the catalogue. Input validation failures become
 * VALIDATION_FAILED with one detail per issue; an output that fails its schema, and unknown
 * errors, become INTERNAL_ERROR with a generic message (the original is logged, never sent).
 */
export function toAppError(error: unknown, log?: Logger): AppError {
  const cause = error instanceof TRPCError ? (error.cause ?? error) : error;
  if (cause instanceof AppError) return cause;
  if (cause instanceof ProviderUnavailableError) {
    log?.warn({ err: cause }, 'provider unavailable');
    return new AppError('UPSTREAM_UNAVAILABLE');
  }
  // tRPC's check of a procedure's output fails with the same ZodError as its input's: the
  // service's fault, not the request's (an unhandled error below, logged).
  const outputCheck = error instanceof TRPCError && error.code === 'INTERNAL_SERVER_ERROR';
  if (cause instanceof z.ZodError && !outputCheck) {
    return new AppError('VALIDATION_FAILED', { details: zodDetails(cause) });
  }
  if (error instanceof TRPCError) {
    if (error.code === 'NOT_FOUND') return new AppError('ROUTE_NOT_FOUND');
    if (error.code === 'PARSE_ERROR') {
      return new AppError('VALIDATION_FAILED', { details: [{ field: 'body', issue: 'is not valid JSON' }] });
    }
    // tRPC reads a call's input (the POST body, GET's `input`) when a middleware first asks for
    // it, and refuses text that is not JSON as BAD_REQUEST with JSON.parse's SyntaxError.
    if (error.code === 'BAD_REQUEST' && cause instanceof SyntaxError) {
      return new AppError('VALIDATION_FAILED', { details: [{ field: 'input', issue: 'is not valid JSON' }] });
    }
    if (error.code === 'METHOD_NOT_SUPPORTED') return new AppError('METHOD_NOT_ALLOWED');
    // tRPC's own refusals of a call's shape, e.g. a batch that mixes a mutation and a query
    // ("Cannot mix procedure types in call"): its message, as a refusal of the request.
    if (error.code === 'BAD_REQUEST' && error.cause === undefined) {
      return new AppError('VALIDATION_FAILED', {
        message: error.message,
        details: [{ field: 'path', issue: error.message }],
      });
    }
    if (error.code === 'PAYLOAD_TOO_LARGE') return new AppError('PAYLOAD_TOO_LARGE');
    if (error.code === 'UNSUPPORTED_MEDIA_TYPE') return new AppError('UNSUPPORTED_MEDIA_TYPE');
  }
  if (isDatabaseUnavailable(cause)) {
    log?.warn({ err: cause }, 'database unavailable');
    return new AppError('SERVICE_UNAVAILABLE', {
      headers: { 'Retry-After': String(DATABASE_RETRY_AFTER_S) },
    });
  }
  log?.error({ err: cause }, 'unhandled error');
  return new AppError('INTERNAL_ERROR');
}

const TYPE_NAMES: Record<string, string> = {
  number: 'a number',
  int: 'an integer',
  string: 'a string',
  boolean: 'a boolean',
  object: 'an object',
  record: 'an object',
  array: 'an array',
};

/**
 * What a value of the wrong type is told: `is required` only when it is absent. zod reports what
 * it received in the message (issues carry no input): `undefined` when the field is missing, and
 * `Infinity` for a number beyond the largest double (JSON's 1e309).
 */
function invalidTypeIssue(issue: z.core.$ZodIssueInvalidType): string {
  const received = /received (\S+)$/.exec(issue.message)?.[1];
  if (received === 'undefined') return 'is required';
  if (received === 'Infinity') return 'is too large';
  if (received === '-Infinity') return 'is too small';
  const expected = TYPE_NAMES[issue.expected];
  return expected ? `must be ${expected}` : issue.message;
}

/** One detail per zod issue, with the field as the snake_case path the client sent. */
export function zodDetails(error: z.ZodError): { field: string; issue: string }[] {
  return error.issues.map((issue) => {
    const field = issue.path.length > 0 ? issue.path.map(String).join('.') : 'body';
    if (issue.code === 'unrecognized_keys') {
      return {
        field: issue.keys.map((k) => (field === 'body' ? k : `${field}.${k}`)).join(', '),
        issue: 'is not a known field',
      };
    }
    if (issue.code === 'invalid_type') return { field, issue: invalidTypeIssue(issue) };
    // A record's key that its key schema refused: the field is the key, the issue what keys must be.
    if (issue.code === 'invalid_key') return { field, issue: issue.issues[0]?.message ?? issue.message };
    return { field, issue: issue.message };
  });
}
