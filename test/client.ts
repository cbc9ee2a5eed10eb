import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { AppError } from '#src/http/errors.ts';
import type { Scope } from '#src/tenants/scopes.ts';
import { createTenant, issueApiKey } from '#src/tenants/service.ts';
import { harness } from './harness.ts';
import { ownTenant } from './isolation.ts';

export interface ApiResponse<T = any> {
  status: number;
  headers: Headers;
  /** Parsed JSON body (undefined when the body is empty or not JSON). */
  body: T;
  /** The body exactly as received. */
  text: string;
}

export interface CallOptions {
  key?: string | null;
  body?: unknown;
  /** Sent verbatim instead of JSON-encoding `body`. */
  rawBody?: string | Buffer;
  headers?: Record<string, string>;
  /** Defaults to a fresh UUID v4 on POST and PUT; null sends none. */
  idempotencyKey?: string | null;
  /** The service to call; the harness's by default (tests that start instances of their own). */
  url?: string;
}

/** One HTTP request to the running service. */
export async function call<T = any>(
  method: string,
  path: string,
  options: CallOptions = {},
): Promise<ApiResponse<T>> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers['x-api-key'] = options.key;
  const writes = method === 'POST' || method === 'PUT';
  const idem = options.idempotencyKey === undefined ? (writes ? randomUUID() : null) : options.idempotencyKey;
  if (idem) headers['idempotency-key'] = idem;
  let body: string | Buffer | undefined;
  if (options.rawBody !== undefined) body = options.rawBody;
  else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers['content-type'] ??= 'application/json';
  }
  // A copy as a plain Uint8Array: a body both Node's and the DOM's fetch types accept.
  const res = await fetch((options.url ?? harness().url) + path, {
    method,
    headers,
    body: typeof body === 'string' || body === undefined ? body : new Uint8Array(body),
  });
  const text = await res.text();
  let parsed: unknown;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {
    parsed = undefined;
  }
  return { status: res.status, headers: res.headers, body: parsed as T, text };
}

/**
 * The body of a successful request as `key` to the service at `url`; any other answer throws with
 * its status and body (the instances and crash tests, which start services of their own).
 */
export async function apiAt(
  url: string,
  key: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<any> {
  const res = await call(method, path, { url, key, body });
  if (res.status < 200 || res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${res.text}`);
  return res.body;
}

/** One request with any method, over node:http (fetch refuses TRACE and friends). */
export function rawRequest(
  method: string,
  path: string,
  options: { headers?: Record<string, string>; chunks?: Buffer[] } = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${harness().url}${path}`, { method, headers: options.headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        text += c;
      });
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, text }));
    });
    req.on('error', reject);
    for (const chunk of options.chunks ?? []) req.write(chunk);
    req.end();
  });
}

export interface Merchant {
  tenantId: string;
  key: string;
}

/** `base` made unique: tenant names are (TENANT_NAME_TAKEN), and a run's tests share one database. */
export function uniqueName(base: string): string {
  return `${base} ${randomUUID().slice(0, 8)}`;
}

/** A fresh tenant with one API key; approved with every scope unless told otherwise. */
export async function createMerchant(
  options: { approved?: boolean; scopes?: Scope[]; name?: string } = {},
): Promise<Merchant> {
  const em = harness().service.deps.orm.em.fork();
  const tenant = await createTenant(em, {
    name: options.name ?? `Test ${randomUUID().slice(0, 8)}`,
    approved: options.approved ?? true,
  });
  const { plaintext } = await issueApiKey(em, { tenantId: tenant.id, scopes: options.scopes });
  ownTenant(tenant.id);
  return { tenantId: tenant.id, key: plaintext };
}

/** Asserts the contract's error envelope and returns it. */
export function errorOf(res: ApiResponse): {
  code: string;
  message: string;
  details: { field: string; issue: string }[];
  request_id: string;
} {
  const error = (res.body as { error?: unknown })?.error as ReturnType<typeof errorOf> | undefined;
  if (!error) throw new Error(`expected an error envelope, got ${res.status} ${res.text}`);
  return error;
}

/** The AppError a promise rejects with; fails the test when it resolves or rejects otherwise. */
export async function rejection(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof AppError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}
