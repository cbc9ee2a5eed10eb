import type { EntityManager } from '@mikro-orm/postgresql';
import { middlewareMarker } from '@trpc/server/unstable-core-do-not-import';
import { claim, complete, release, requestFingerprint } from '#src/idempotency/idempotency.ts';
import { wakeFollowUps } from '#src/jobs/wake.ts';
import { isUuidV4 } from '#src/lib/ids.ts';
import { authenticateApiKey, isAdminAuthorized, type Principal } from '#src/tenants/auth.ts';
import { AppError } from './errors.ts';
import { middleware, publicProcedure } from './trpc.ts';

/**
 * Procedures come in two kinds: merchant procedures (X-API-Key, a scope from `meta.scope`, rate
 * limited, and idempotent when `meta.idempotent`) and admin procedures (bearer ADMIN_TOKEN).
 * Handlers write through `ctx.commit`, which opens the write transaction and, for idempotent
 * procedures, stores the response in that same transaction.
 */

/** Where the REST adapter learns that a response is a byte-for-byte replay. */
export interface ResponseHolder {
  replay?: { status: number; body: string };
}

export type Commit = <T>(work: (em: EntityManager) => Promise<T>) => Promise<T>;

const authenticate = middleware(async ({ ctx, meta, next }) => {
  const principal = await authenticateApiKey(ctx.em, ctx.headers['x-api-key']);
  if (!principal) throw new AppError('UNAUTHENTICATED');
  const scope = meta?.scope;
  if (!scope) throw new Error('merchant procedure without meta.scope');
  if (!principal.scopes.has(scope)) {
    throw new AppError('INSUFFICIENT_SCOPES', {
      message: `This operation requires the scope '${scope}'.`,
      details: [{ field: 'X-API-Key', issue: `missing scope ${scope}` }],
    });
  }
  const wait = ctx.deps.rateLimiter.take(principal.keyId, Date.now());
  if (wait > 0) {
    throw new AppError('RATE_LIMITED', { headers: { 'Retry-After': String(Math.ceil(wait / 1000)) } });
  }
  return next({ ctx: { principal: principal as Principal } });
});

const plainCommit =
  (em: EntityManager): Commit =>
  (work) =>
    em.transactional((tx) => work(tx));

const idempotency = middleware(async ({ ctx, meta, path, getRawInput, next }) => {
  const principal = (ctx as typeof ctx & { principal: Principal }).principal;
  if (!meta?.idempotent) return next({ ctx: { commit: plainCommit(ctx.em) } });

  const key = ctx.headers['idempotency-key'];
  if (!key)
    throw new AppError('IDEMPOTENCY_KEY_REQUIRED', {
      details: [{ field: 'Idempotency-Key', issue: 'is required' }],
    });
  if (!isUuidV4(key))
    throw new AppError('IDEMPOTENCY_KEY_INVALID', {
      details: [{ field: 'Idempotency-Key', issue: 'must be a UUID v4' }],
    });

  const now = () => ctx.deps.clock.now();
  const fingerprint = requestFingerprint(path, await getRawInput());
  const responseKey = ctx.deps.secrets.idempotencyKey;
  const claimed = await claim(ctx.em, {
    tenantId: principal.tenant.id,
    key: key.toLowerCase(),
    fingerprint,
    now: now(),
    lockMs: ctx.deps.config.IDEMPOTENCY_LOCK_MS,
    responseKey,
  });
  if (claimed.kind === 'replay') {
    const holder = (ctx as typeof ctx & { response?: ResponseHolder }).response;
    if (holder) holder.replay = { status: claimed.status, body: claimed.body };
    // Short-circuit the chain with the stored response. tRPC has no public way for a middleware
    // to answer without calling next(); this is the shape next() itself returns.
    return {
      ok: true as const,
      data: JSON.parse(claimed.body) as unknown,
      marker: middlewareMarker,
    } as never;
  }

  const status = meta.successStatus ?? 200;
  // Stored as the client will see it: through the procedure's output schema, which strips
  // anything a handler returned beyond the contract, so a replay can never show more.
  const output = ctx.outputSchemaOf?.(path);
  const commit: Commit = (work) =>
    ctx.em.transactional(async (tx) => {
      const result = await work(tx);
      const rendered = output ? output.parse(result) : result;
      await complete(tx, { ...claimed, status, body: JSON.stringify(rendered), now: now(), responseKey });
      return result;
    });
  const result = await next({ ctx: { commit } });
  if (!result.ok) await release(ctx.em, claimed);
  return result;
});

/** Procedures of the merchant REST API. */
export const merchantProcedure = publicProcedure.use(authenticate).use(idempotency);

/** Internal procedures under `admin.*`, for operators and the admin CLI. */
export const adminProcedure = publicProcedure.use(async ({ ctx, type, next }) => {
  if (!isAdminAuthorized(ctx.headers['authorization'], ctx.deps.secrets.adminToken)) {
    throw new AppError('ADMIN_UNAUTHORIZED');
  }
  const result = await next({ ctx: { commit: plainCommit(ctx.em) } });
  // An operator's change (a failed payout, an attributed inflow, a retried refund) starts its
  // follow-up work now rather than at the next poll.
  if (result.ok && type === 'mutation') wakeFollowUps(ctx.deps);
  return result;
});
