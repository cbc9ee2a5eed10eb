import type { EntityManager } from '@mikro-orm/postgresql';
import { TRPCError } from '@trpc/server';
import { middlewareMarker } from '@trpc/server/unstable-core-do-not-import';
import { AuditNote, recordAudit } from '#src/audit/service.ts';
import { replicaFailure } from '#src/db/replica.ts';
import { emSql } from '#src/db/sql.ts';
import {
  claimKey,
  findStoredResponse,
  type IdempotentWrite,
  KeyTaken,
  replayOf,
  requestFingerprint,
  sealResponse,
  storeResponse,
} from '#src/idempotency/idempotency.ts';
import { wakeFollowUps } from '#src/jobs/wake.ts';
import { isUuidV4 } from '#src/lib/ids.ts';
import { type OperatorIdentity, operatorOfBearer } from '#src/operators/auth.ts';
import { hasRole, type Role, requiredRole } from '#src/operators/roles.ts';
import { authenticateApiKey, type Principal, type StoredResponse } from '#src/tenants/auth.ts';
import { AppError, type ErrorCode } from './errors.ts';
import { alreadyClean, controlCharacterIssue, type TextRule, wellFormed } from './input.ts';
import {
  middleware,
  type ProcedureMeta,
  publicProcedure,
  type RequestContext,
  type ResponseHolder,
  requestLog,
} from './trpc.ts';

export type { ResponseHolder } from './trpc.ts';

/**
 * Procedures come in two kinds: merchant procedures (X-API-Key, a scope from `meta.scope`, rate
 * limited, and idempotent when `meta.idempotent`) and admin procedures (an operator's bearer token,
 * or ADMIN_TOKEN for root, and the role from `meta.role`).
 * Handlers write through `ctx.commit`, which opens the write transaction and, for idempotent
 * procedures, stores the response in that same transaction. Merchant procedures that talk SQL
 * alone (`merchantSqlProcedure`) get no EntityManager or request logger: the hot paths skip the
 * fork.
 */

export type Commit = <T>(work: (em: EntityManager) => Promise<T>) => Promise<T>;

/** The request's Idempotency-Key when it is well-formed, lower-cased; otherwise null (refused later). */
function idempotencyKeyOf(headers: Record<string, string | undefined>): string | null {
  const key = headers['idempotency-key'];
  return key && isUuidV4(key) ? key.toLowerCase() : null;
}

/**
 * The caller of a merchant procedure, from its X-API-Key (401 without a known one), with the
 * response already stored under its Idempotency-Key if any; its request counted by the rate
 * limiter (429 past it) and its scope checked against `meta.scope` (403).
 */
async function authenticate(
  ctx: RequestContext,
  meta: ProcedureMeta | undefined,
): Promise<{ principal: Principal; stored: StoredResponse | null }> {
  const found = await authenticateApiKey(
    ctx.deps.sql,
    ctx.headers['x-api-key'],
    meta?.idempotent ? idempotencyKeyOf(ctx.headers) : null,
  );
  if (!found) throw new AppError('UNAUTHENTICATED');
  const { principal, stored } = found;
  if (ctx.response) ctx.response.tenantId = principal.tenant.id;
  // Every request of a known key counts, whatever becomes of it; the REST adapter shows the state.
  const limit = ctx.deps.rateLimiter.take(principal.keyId, ctx.deps.clock.now().getTime());
  if (ctx.response) ctx.response.rateLimit = limit;
  if (!limit.allowed) {
    throw new AppError('RATE_LIMITED', { headers: { 'Retry-After': String(limit.retryAfter) } });
  }
  const scope = meta?.scope;
  if (!scope) throw new Error('merchant procedure without meta.scope');
  if (!principal.scopes.has(scope)) {
    throw new AppError('INSUFFICIENT_SCOPES', {
      message: `This operation requires the scope '${scope}'.`,
      details: [{ field: 'X-API-Key', issue: `missing scope ${scope}` }],
    });
  }
  return { principal: principal as Principal, stored };
}

/** What idempotency adds to a merchant procedure's context. */
interface Idempotent {
  commit: Commit;
  /** The Idempotency-Key's record, for a handler that stores the response in its own statement. */
  idempotent: IdempotentWrite | null;
}

/**
 * Idempotency around the rest of a merchant procedure (`proceed`): a stored response is answered
 * at once (or refused with 422 when the request differs); otherwise the procedure's `commit`
 * stores its response under the key in the write's own transaction, and a request that lost the
 * key to another one that committed first is answered with that one's response. `em` gives the
 * EntityManager a write starts from.
 */
async function idempotent<R extends { ok: true } | { ok: false; error: unknown }>(
  args: {
    ctx: RequestContext;
    meta: ProcedureMeta | undefined;
    path: string;
    getRawInput: () => Promise<unknown>;
    principal: Principal;
    stored: StoredResponse | null;
    em: () => EntityManager;
  },
  proceed: (added: Idempotent) => Promise<R>,
): Promise<R> {
  const { ctx, meta, path, principal, stored, em } = args;
  if (!meta?.idempotent)
    return proceed({ commit: (work) => em().transactional((tx) => work(tx)), idempotent: null });

  const header = ctx.headers['idempotency-key'];
  if (!header)
    throw new AppError('IDEMPOTENCY_KEY_REQUIRED', {
      details: [{ field: 'Idempotency-Key', issue: 'is required' }],
    });
  const key = idempotencyKeyOf(ctx.headers);
  if (!key)
    throw new AppError('IDEMPOTENCY_KEY_INVALID', {
      details: [{ field: 'Idempotency-Key', issue: 'must be a UUID v4' }],
    });

  const responseKey = ctx.deps.secrets.idempotencyKey;
  const raw = await args.getRawInput();
  const fingerprint = requestFingerprint(path, meta.comparable ? meta.comparable(raw, ctx.deps) : raw);
  const holder: ResponseHolder | undefined = ctx.response;
  const replay = (found: StoredResponse): R => {
    const response = replayOf(found, fingerprint, responseKey);
    if (holder) holder.replay = response;
    // Short-circuit the chain with the stored response. tRPC has no public way for a middleware
    // to answer without calling next(); this is the shape next() itself returns.
    return {
      ok: true as const,
      data: JSON.parse(response.body) as unknown,
      marker: middlewareMarker,
    } as never;
  };
  if (stored) return replay(stored);

  const write: IdempotentWrite = {
    tenantId: principal.tenant.id,
    key,
    fingerprint,
    status: meta.successStatus ?? 200,
    seal: (body) => sealResponse(responseKey, body),
  };
  // Stored as the client will see it: through the procedure's output schema, which strips
  // anything a handler returned beyond the contract, so a replay can never show more.
  const output = ctx.outputSchemaOf?.(path);
  const commit: Commit = (work) =>
    em().transactional(async (tx) => {
      await claimKey(emSql(tx), write);
      const result = await work(tx);
      const body = JSON.stringify(output ? output.parse(result) : result);
      await storeResponse(emSql(tx), write, { body, now: ctx.deps.clock.now() });
      if (holder) holder.rendered = body;
      return result;
    });
  const result = await proceed({ commit, idempotent: write });
  // Another request with this key committed while this one worked: answer with its response.
  if (!result.ok && causeOf(result.error) instanceof KeyTaken) {
    const first = await findStoredResponse(ctx.deps.sql, { tenantId: write.tenantId, key });
    if (first) return replay(first);
  }
  return result;
}

function causeOf(error: unknown): unknown {
  return error instanceof TRPCError ? (error.cause ?? error) : error;
}

/**
 * Every procedure's input, before anything reads it (the idempotency fingerprint, the checks, the
 * handler): lone surrogates replaced (see `wellFormed`), then refused with a 400 naming the field
 * if any text holds control characters (see `input.ts`), never a database error. Worked out once:
 * every reader after gets that same value, through the `getRawInput` this returns.
 */
async function cleanedInput(
  getRawInput: () => Promise<unknown>,
  rule: TextRule,
): Promise<() => Promise<unknown>> {
  const raw = await getRawInput();
  if (alreadyClean(raw, rule)) return async () => raw;
  const input = wellFormed(raw);
  const issue = controlCharacterIssue(input, rule);
  if (issue) throw new AppError('VALIDATION_FAILED', { details: [issue] });
  return async () => input;
}

/**
 * Options for a middleware's `next` that add to the context and hand on the cleaned input at once:
 * tRPC takes both in one call, though its types offer them as two.
 */
function withInput<T extends { ctx: object }>(options: T, getRawInput: () => Promise<unknown>): T {
  return Object.assign(options, { getRawInput });
}

/** {@link cleanedInput} as a layer of its own (the admin procedures'). */
const cleanInput = (rule: TextRule) =>
  middleware(async ({ getRawInput, next }) => next({ getRawInput: await cleanedInput(getRawInput, rule) }));

/**
 * Procedures of the merchant REST API, with the request's EntityManager (`ctx.em`) and logger
 * bound to its request id. The input's cleaning (see {@link cleanedInput}), authentication, the
 * request's scope and idempotency are one layer of tRPC's chain, which hands the procedure one
 * context: each layer copies the call's options, and each context given to `next` copies the
 * whole context.
 */
export const merchantProcedure = publicProcedure.use(async ({ ctx, meta, type, path, getRawInput, next }) => {
  const input = await cleanedInput(getRawInput, 'single-line');
  const { principal, stored } = await authenticate(ctx, meta);
  const em = ctx.deps.orm.em.fork();
  const log = requestLog(ctx);
  const result = await idempotent(
    { ctx, meta, path, getRawInput: input, principal, stored, em: () => em },
    (added) => next(withInput({ ctx: { principal, stored, em, log, ...added } }, input)),
  );
  // Read your writes: the tenant's lag-tolerant reads stay on the primary a while (src/db/replica.ts).
  if (type === 'mutation') ctx.deps.reads.wrote(principal.tenant.id);
  return result;
});

/**
 * Merchant procedures that read and write through `deps.sql` alone, without the ORM: the hot
 * paths (create, list and get payouts), which then never pay for an EntityManager fork or a
 * request logger (a write that needs an EntityManager forks one then).
 */
export const merchantSqlProcedure = publicProcedure.use(
  async ({ ctx, meta, type, path, getRawInput, next }) => {
    const input = await cleanedInput(getRawInput, 'single-line');
    const { principal, stored } = await authenticate(ctx, meta);
    const result = await idempotent(
      { ctx, meta, path, getRawInput: input, principal, stored, em: () => ctx.deps.orm.em.fork() },
      (added) => next(withInput({ ctx: { principal, stored, ...added } }, input)),
    );
    if (type === 'mutation') ctx.deps.reads.wrote(principal.tenant.id);
    return result;
  },
);

const ROLE_REFUSALS = {
  operator: 'OPERATOR_ROLE_REQUIRED',
  approver: 'APPROVER_ROLE_REQUIRED',
  admin: 'ADMIN_ROLE_REQUIRED',
} as const satisfies Record<Exclude<Role, 'viewer'>, ErrorCode>;

/** The 403 of an operator whose role is below what a procedure needs; its code names the role wanted. */
export function roleRefusal(operator: OperatorIdentity, wanted: Exclude<Role, 'viewer'>): AppError {
  return new AppError(ROLE_REFUSALS[wanted], {
    message: `This needs the role ${wanted} or above; operator ${operator.name} is ${operator.role}.`,
    details: [
      {
        field: 'Authorization',
        issue: `operator ${operator.name} has the role ${operator.role}, not ${wanted}`,
      },
    ],
  });
}

/**
 * Internal procedures under `admin.*`, for operators, the admin CLI and the console: the bearer
 * token names the operator (`ctx.operator`), whose role must reach `meta.role` (see
 * `requiredRole`: reads default to viewer, changes to admin). A mutation's `ctx.commit` appends
 * the call's audit row (src/audit/service.ts) inside the transaction of its change; the handler
 * adds targets and the outcome through `ctx.audit`.
 */
export const adminProcedure = publicProcedure
  .use(cleanInput('multi-line'))
  .use(async ({ ctx, meta, type, path, getRawInput, next }) => {
    const operator = await operatorOfBearer(
      ctx.deps.sql,
      ctx.headers['authorization'],
      ctx.deps.secrets.adminToken,
    );
    if (!operator) throw new AppError('ADMIN_UNAUTHORIZED');
    const wanted = requiredRole(meta, type);
    if (wanted !== 'viewer' && !hasRole(operator.role, wanted)) throw roleRefusal(operator, wanted);
    const em = ctx.deps.orm.em.fork();
    const log = requestLog(ctx, { operator_id: operator.id });
    const audit = new AuditNote();
    const commit: Commit =
      type === 'mutation'
        ? async (work) => {
            const input = await getRawInput();
            return em.transactional(async (tx) => {
              const result = await work(tx);
              if (!audit.changed) return result;
              recordAudit(tx, {
                operator,
                action: path,
                input,
                result,
                note: audit,
                requestId: ctx.requestId,
                now: ctx.deps.clock.now(),
              });
              return result;
            });
          }
        : (work) => em.transactional((tx) => work(tx));
    if (type === 'query' && meta?.lagTolerant) {
      return ctx.deps.reads.read(null, async (db) => {
        const result = await next({ ctx: { em: db.em, readSql: db.sql, log, operator, audit, commit } });
        // Thrown when the replica failed under it, so that the read runs again on the primary.
        if (!result.ok && db.sql !== ctx.deps.sql && replicaFailure(result.error)) throw result.error;
        return result;
      });
    }
    const result = await next({ ctx: { em, readSql: ctx.deps.sql, log, operator, audit, commit } });
    // An operator's change (a failed payout, an attributed inflow, a retried refund) starts its
    // follow-up work now rather than at the next poll.
    if (result.ok && type === 'mutation') wakeFollowUps(ctx.deps);
    if (type === 'mutation') ctx.deps.reads.wrote(null);
    return result;
  });
