import type { Context, Next } from 'koa';
import type { z } from 'zod';
import { readBounded } from '#src/lib/body.ts';
import type { Logger } from '#src/lib/log.ts';

/**
 * HTTP plumbing shared by the simulated parties. The sandbox plays providers, not the service,
 * so it keeps its own small error vocabulary and body reader instead of the service's HTTP
 * layer: a real provider would not answer in the merchant contract's envelope either.
 */
export const SANDBOX_ERRORS = {
  INVALID_REQUEST: 400,
  ROUTE_NOT_FOUND: 404,
  ACCOUNT_NOT_FOUND: 404,
  INSTITUTION_NOT_FOUND: 404,
  PAIR_NOT_SUPPORTED: 404,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  UNSUPPORTED_MEDIA_TYPE: 415,
  INTERNAL_ERROR: 500,
} as const satisfies Record<string, number>;

export type SandboxErrorCode = keyof typeof SANDBOX_ERRORS;

/** An expected failure of a simulated provider, answered as `{ error: { code, message } }`. */
export class SandboxError extends Error {
  readonly code: SandboxErrorCode;

  constructor(code: SandboxErrorCode, message: string) {
    super(message);
    this.name = 'SandboxError';
    this.code = code;
  }

  get status(): number {
    return SANDBOX_ERRORS[this.code];
  }
}

/**
 * Renders every failure, and any request no party answered, as the providers' error body;
 * unexpected errors are logged and become 500.
 */
export function sandboxErrors(log: Logger) {
  return async (ctx: Context, next: Next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body == null) {
        throw new SandboxError('ROUTE_NOT_FOUND', 'No such sandbox endpoint.');
      }
    } catch (err) {
      const error = err instanceof SandboxError ? err : fromKoaError(err);
      if (!error) log.error({ err, method: ctx.method, path: ctx.path }, 'sandbox handler failed');
      const rendered = error ?? new SandboxError('INTERNAL_ERROR', 'The sandbox failed unexpectedly.');
      ctx.status = rendered.status;
      ctx.body = { error: { code: rendered.code, message: rendered.message } };
    }
  };
}

/** 405 and 501 raised by @koa/router's allowedMethods carry their own status. */
function fromKoaError(err: unknown): SandboxError | null {
  const status = (err as { status?: unknown } | null)?.status;
  if ((err as { expose?: unknown } | null)?.expose !== true) return null;
  if (status === 405 || status === 501) return new SandboxError('METHOD_NOT_ALLOWED', 'Method not allowed.');
  return null;
}

/** Parses the query string or a JSON body with a zod schema; the first issue names the field. */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.join('.') || 'body';
  throw new SandboxError('INVALID_REQUEST', `${field}: ${issue?.message ?? 'is invalid'}`);
}

const MAX_BODY_BYTES = 64 * 1024;

/** Reads a JSON object body (at most 64 KiB); provider APIs take nothing else. */
export async function readJson(ctx: Context): Promise<unknown> {
  if (!ctx.is('application/json')) {
    throw new SandboxError('UNSUPPORTED_MEDIA_TYPE', 'Request bodies must be application/json.');
  }
  const body = await readBounded(ctx.req, MAX_BODY_BYTES);
  if (!body) throw new SandboxError('PAYLOAD_TOO_LARGE', 'The request body is larger than 64 KiB.');
  try {
    return JSON.parse(body.toString('utf8'));
  } catch {
    throw new SandboxError('INVALID_REQUEST', 'body: is not valid JSON');
  }
}
