import Router from '@koa/router';
import { type AnyRouter, callTRPCProcedure } from '@trpc/server';
import type { Context } from 'koa';
import type { z } from 'zod';
import type { Deps } from '#src/deps.ts';
import { AppError } from './errors.ts';
import { jsonBody } from './middleware.ts';
import type { ResponseHolder } from './procedures.ts';
import { isMerchantApiPath, rateLimitField } from './rate-limit.ts';
import { type ProcedureMeta, type RequestContext, requestLog, toAppError } from './trpc.ts';

/** A procedure of the router that declares a REST route in `meta.openapi`. */
export interface RestRoute {
  procedurePath: string;
  type: 'query' | 'mutation';
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  meta: ProcedureMeta;
}

/** Every REST route the router declares, in declaration order. */
export function restRoutes(appRouter: AnyRouter): RestRoute[] {
  const routes: RestRoute[] = [];
  for (const [procedurePath, procedure] of Object.entries(appRouter._def.procedures)) {
    const { meta, type } = (procedure as { _def: { meta?: ProcedureMeta; type: RestRoute['type'] } })._def;
    if (!meta?.openapi || meta.openapi.enabled === false) continue;
    routes.push({ procedurePath, type, method: meta.openapi.method, path: meta.openapi.path, meta });
  }
  return routes;
}

/** Output schemas of a router's procedures, by path. */
export function outputSchemas(appRouter: AnyRouter): (path: string) => z.ZodType | undefined {
  const procedures = appRouter._def.procedures as Record<string, { _def: { output?: z.ZodType } }>;
  return (path) => procedures[path]?._def.output;
}

export function requestContext(
  deps: Deps,
  ctx: Context,
  outputSchemaOf?: (path: string) => z.ZodType | undefined,
  response?: ResponseHolder,
): RequestContext {
  return {
    outputSchemaOf,
    deps,
    requestId: ctx.state.requestId,
    headers: ctx.headers as Record<string, string | undefined>,
    ip: ctx.ip,
    response,
  };
}

/**
 * The merchant REST API: one Koa route per procedure with `meta.openapi`, calling the procedure
 * the way tRPC's own adapters do (`callTRPCProcedure`), so that validation, auth, idempotency and
 * errors are the router's own. (trpc-to-openapi's adapters cannot render the contract's envelope
 * or a 201; see stack notes.)
 */
export function restRouter(deps: Deps, appRouter: AnyRouter): Router {
  const router = new Router();
  const schemas = outputSchemas(appRouter);
  for (const route of restRoutes(appRouter)) {
    // The app sends only paths under /v1 to this router (createApp).
    if (!isMerchantApiPath(route.path)) throw new Error(`REST route ${route.path} is outside /v1`);
    const koaPath = route.path.replace(/\{(\w+)\}/g, ':$1');
    const method = route.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
    router[method](koaPath, async (ctx) => {
      const response: ResponseHolder = {};
      const base =
        route.method === 'GET' || route.method === 'DELETE' ? firstValues(ctx.query) : jsonBody(ctx);
      for (const [name, value] of Object.entries(ctx.params)) {
        if (name in base)
          throw new AppError('VALIDATION_FAILED', {
            details: [{ field: name, issue: 'is taken from the path' }],
          });
        base[name] = value;
      }
      let result: unknown;
      try {
        result = await callTRPCProcedure({
          router: appRouter,
          path: route.procedurePath,
          type: route.type,
          ctx: requestContext(deps, ctx, schemas, response),
          getRawInput: async () => base,
          signal: undefined,
          batchIndex: 0,
        });
      } catch (err) {
        ctx.state.tenantId = response.tenantId;
        if (response.rateLimit) ctx.set('RateLimit', rateLimitField(response.rateLimit));
        throw toAppError(err, requestLog({ deps, requestId: ctx.state.requestId }, { route: route.path }));
      }
      ctx.state.tenantId = response.tenantId;
      if (response.rateLimit) ctx.set('RateLimit', rateLimitField(response.rateLimit));
      ctx.type = 'application/json';
      if (response.replay) {
        ctx.status = response.replay.status;
        ctx.set('Idempotent-Replayed', 'true');
        ctx.body = response.replay.body;
        return;
      }
      ctx.status = route.meta.successStatus ?? 200;
      if (response.contentType) ctx.type = response.contentType;
      // A write sends the very bytes it stored under its Idempotency-Key, so a replay is identical.
      ctx.body = response.rendered ?? JSON.stringify(result);
    });
  }
  return router;
}

/** Query strings may repeat a name; the API takes the first value of each. */
function firstValues(query: Record<string, string | string[] | undefined>): Record<string, unknown> {
  // fromEntries defines own properties: `?__proto__=1` stays a parameter the schema refuses,
  // where an assignment would set the object's prototype and slip past it.
  return Object.fromEntries(
    Object.entries(query).map(([name, value]) => [name, Array.isArray(value) ? value[0] : value]),
  );
}
