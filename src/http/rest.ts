import { type AnyRouter, getTRPCErrorFromUnknown, TRPCError } from '@trpc/server';
import { middlewareMarker } from '@trpc/server/unstable-core-do-not-import';
import type { Context } from 'koa';
import type { z } from 'zod';
import type { Deps } from '#src/deps.ts';
import { AppError } from './errors.ts';
import { jsonBody } from './middleware.ts';
import type { ResponseHolder } from './procedures.ts';
import { isMerchantApiPath, rateLimitField } from './rate-limit.ts';
import { compileDispatch, type DispatchMatch, type DispatchRoute } from './rest-dispatch.ts';
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

/** What a layer of a procedure's chain answers (tRPC's middleware result). */
type LayerResult = { ok: true; data: unknown } | { ok: false; error: TRPCError };

/** The options each layer of a procedure's chain is called with, as tRPC hands them on. */
interface LayerOptions {
  ctx: object;
  type: RestRoute['type'];
  path: string;
  input: unknown;
  getRawInput: () => Promise<unknown>;
  signal: undefined;
  meta: ProcedureMeta | undefined;
  next(options?: {
    ctx?: object;
    input?: unknown;
    getRawInput?: () => Promise<unknown>;
  }): Promise<LayerResult>;
}

/** A procedure's chain as tRPC keeps it: its layers (middlewares, input parser, resolver) and meta. */
interface ChainDef {
  middlewares: ((options: LayerOptions) => Promise<LayerResult>)[];
  meta?: ProcedureMeta;
}

/**
 * Calls layer `index` of a procedure's chain exactly as tRPC's own caller does (`callRecursive`
 * in @trpc/server): each layer gets the call's options with the procedure's meta and a `next`
 * that hands the next layer the context merged with what it adds, the input, and the raw input's
 * getter; whatever a layer throws becomes a failed result carrying a TRPCError. tRPC builds those
 * options with a helper that defines each key one at a time (about a third of its call's cost);
 * here each is one object literal of a fixed shape.
 */
async function callLayer(
  def: ChainDef,
  index: number,
  call: {
    ctx: object;
    type: RestRoute['type'];
    path: string;
    input: unknown;
    getRawInput: () => Promise<unknown>;
  },
): Promise<LayerResult> {
  try {
    const layer = def.middlewares[index]!;
    return await layer({
      ctx: call.ctx,
      type: call.type,
      path: call.path,
      input: call.input,
      getRawInput: call.getRawInput,
      signal: undefined,
      meta: def.meta,
      next: (options) =>
        callLayer(def, index + 1, {
          ctx: options?.ctx ? { ...call.ctx, ...options.ctx } : call.ctx,
          type: call.type,
          path: call.path,
          input: options && 'input' in options ? options.input : call.input,
          getRawInput: options?.getRawInput ?? call.getRawInput,
        }),
    });
  } catch (cause) {
    return { ok: false, error: getTRPCErrorFromUnknown(cause), marker: middlewareMarker } as LayerResult;
  }
}

/**
 * A procedure of `appRouter` called with `ctx` and its raw input, as `callTRPCProcedure` calls it
 * (see {@link callLayer}): its data, or the TRPCError it failed with.
 */
export function procedureCaller(
  appRouter: AnyRouter,
  path: string,
): (ctx: object, getRawInput: () => Promise<unknown>) => Promise<unknown> {
  const procedure = (
    appRouter._def.procedures as Record<string, { _def: ChainDef & { type: RestRoute['type'] } }>
  )[path];
  if (!procedure) throw new Error(`no procedure ${path}`);
  const def = procedure._def;
  const type = def.type;
  return async (ctx, getRawInput) => {
    const result = await callLayer(def, 0, { ctx, type, path, input: undefined, getRawInput });
    if (!result)
      throw new TRPCError({
        code: 'INTERNAL_SERVER_ERROR',
        message: 'No result from middlewares - did you forget to `return next()`?',
      });
    if (!result.ok) throw result.error;
    return result.data;
  };
}

/** A merchant request once its route is known: its decoded path parameters and route template. */
type RoutedContext = Context & { params: Record<string, string>; _matchedRoute?: string };

/** The merchant REST API: what serves a request under /v1, and the methods each path takes. */
export interface RestApi {
  /**
   * Serves a request to the route its method and path reach, setting `ctx.params` and
   * `ctx._matchedRoute` (the template, e.g. `/v1/payouts/:id`) as the router did; leaves a request
   * no route takes untouched (404), as the method policy has answered every other case before.
   */
  serve(ctx: Context): Promise<void> | undefined;
  /** The route a method and a path reach, with the decoded path parameters (what `serve` serves). */
  match(method: string, path: string): DispatchMatch<unknown> | undefined;
  /** The methods the API takes on a path, HEAD wherever GET (for `methodPolicy`). */
  methods(path: string): string[];
}

/**
 * The merchant REST API: one route per procedure with `meta.openapi`, calling the procedure the
 * way tRPC's own adapters do (`procedureCaller`, tRPC's own chain), so that validation, auth,
 * idempotency and errors are the router's own. (trpc-to-openapi's adapters cannot render the
 * contract's envelope or a 201; see stack notes.) Requests are dispatched by a matcher compiled
 * once from the routes (`compileDispatch`), not by @koa/router, whose per-request regexps and
 * composed layers showed in the create profile (issue 27 §5).
 */
export function restApi(deps: Deps, appRouter: AnyRouter): RestApi {
  const routes: DispatchRoute<(ctx: RoutedContext) => Promise<void>>[] = [];
  const schemas = outputSchemas(appRouter);
  for (const route of restRoutes(appRouter)) {
    // The app sends only paths under /v1 to this API (createApp).
    if (!isMerchantApiPath(route.path)) throw new Error(`REST route ${route.path} is outside /v1`);
    const call = procedureCaller(appRouter, route.procedurePath);
    const handler = async (ctx: RoutedContext) => {
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
        result = await call(requestContext(deps, ctx, schemas, response), async () => base);
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
    };
    routes.push({ method: route.method, path: koaTemplate(route.path), handler });
  }
  const dispatch = compileDispatch(routes);
  return {
    match: dispatch.match,
    methods: dispatch.methods,
    serve(ctx) {
      const match = dispatch.match(ctx.method, ctx.path);
      if (!match) return undefined;
      const routed = ctx as RoutedContext;
      routed.params = match.params;
      routed._matchedRoute = match.route.path;
      return match.route.handler(routed);
    },
  };
}

/** A route's OpenAPI path as the Koa template it is served and counted under: `{id}` as `:id`. */
export function koaTemplate(path: string): string {
  return path.replace(/\{(\w+)\}/g, ':$1');
}

/** Query strings may repeat a name; the API takes the first value of each. */
function firstValues(query: Record<string, string | string[] | undefined>): Record<string, unknown> {
  // fromEntries defines own properties: `?__proto__=1` stays a parameter the schema refuses,
  // where an assignment would set the object's prototype and slip past it.
  return Object.fromEntries(
    Object.entries(query).map(([name, value]) => [name, Array.isArray(value) ? value[0] : value]),
  );
}
