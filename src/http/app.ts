import { nodeHTTPRequestHandler } from '@trpc/server/adapters/node-http';
import Koa, { type Context } from 'koa';
import { CALLBACK_ROUTES } from '#src/callbacks.ts';
import { consoleRoutes } from '#src/console/serve.ts';
import type { Deps } from '#src/deps.ts';
import { docsRoutes } from '#src/docs/serve.ts';
import type { AppRouter } from '#src/router.ts';
import { callbacksRouter } from './callbacks.ts';
import { AppError } from './errors.ts';
import { methodPolicy, routerMethods } from './methods.ts';
import { rawBody, refuseDeepJson, requestFrame } from './middleware.ts';
import { observabilityRoutes } from './observability.ts';
import { openApiDocument } from './openapi.ts';
import { isMerchantApiPath, rateLimitPolicy } from './rate-limit.ts';
import { outputSchemas, requestContext, restApi } from './rest.ts';
import { isTrpcPath } from './trpc.ts';

/**
 * The HTTP facade: the REST API under /v1 (derived from the router's OpenAPI meta), the same
 * router over tRPC at /trpc for internal tools, and the OpenAPI document.
 */
export function createApp(deps: Deps, appRouter: AppRouter): Koa {
  const app = new Koa({ proxy: false });
  app.silent = true;
  const rest = restApi(deps, appRouter);
  const callbacks = callbacksRouter(deps, CALLBACK_ROUTES);
  const schemas = outputSchemas(appRouter);
  let openapi: string | undefined;

  const policy = rateLimitPolicy(() => deps.rateLimiter);
  const methods = methodPolicy([rest.methods, routerMethods(callbacks)]);
  const body = rawBody();

  app.use(requestFrame(deps.log, deps.metrics, new Set(Object.keys(appRouter._def.procedures))));
  // What every request passes, in this order, in one layer: the rate-limit policy header (/v1),
  // the method's refusal or OPTIONS answer, the body. The merchant API (/v1) is then its own
  // alone: nothing below serves a path under it (restApi declares no route elsewhere), so its
  // requests go straight there, past the layers below. The method policy has by then answered
  // OPTIONS, 405 and 501 for every /v1 path a route takes (callbacks live under /callbacks), so a
  // request the API does not serve is a 404.
  app.use(async (ctx, next) => {
    policy(ctx);
    if (methods(ctx)) return;
    await body(ctx);
    if (!isMerchantApiPath(ctx.path)) return next();
    await rest.serve(ctx);
    refuseUnserved(ctx);
  });
  app.use(observabilityRoutes(deps));
  app.use(async (ctx, next) => {
    if (ctx.path === '/health') {
      ctx.body = { status: 'ok' };
      return;
    }
    if (ctx.path === '/openapi.json') {
      openapi ??= JSON.stringify(
        openApiDocument(appRouter, { baseUrl: `http://${deps.config.HOST}:${deps.config.PORT}` }),
      );
      ctx.type = 'application/json';
      ctx.body = openapi;
      return;
    }
    if (isTrpcPath(ctx.path)) {
      const input = ctx.query.input;
      for (const text of Array.isArray(input) ? input : input ? [input] : []) refuseDeepJson(text, 'input');
      const raw = ctx.request.rawBody;
      (ctx.req as typeof ctx.req & { body?: unknown }).body =
        raw.length > 0 ? raw.toString('utf8') : undefined;
      ctx.respond = false;
      ctx.res.statusCode = 200;
      await nodeHTTPRequestHandler({
        req: ctx.req,
        res: ctx.res,
        router: appRouter,
        path: ctx.path.slice('/trpc/'.length),
        createContext: () => requestContext(deps, ctx, schemas),
      });
      return;
    }
    await next();
  });
  app.use(async (ctx, next) => {
    await next();
    refuseUnserved(ctx);
  });
  app.use(docsRoutes(deps.config));
  app.use(consoleRoutes());
  app.use(callbacks.routes());
  return app;
}

/** A request that nothing answered is the envelope's ROUTE_NOT_FOUND, not Koa's bare 404. */
function refuseUnserved(ctx: Context): void {
  if (ctx.status === 404 && ctx.body == null) throw new AppError('ROUTE_NOT_FOUND');
}
