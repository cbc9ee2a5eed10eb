import Router from '@koa/router';
import type { z } from 'zod';
import type { Deps } from '#src/deps.ts';
import { wakeFollowUps } from '#src/jobs/wake.ts';
import type { Logger } from '#src/lib/log.ts';
import { CALLBACK_SIGNATURE_HEADER, verifyCallback } from '#src/providers/callback-signature.ts';
import { AppError } from './errors.ts';
import { jsonBody } from './middleware.ts';
import { zodDetails } from './trpc.ts';

/** One inbound provider callback: its body schema and what to do with a verified body. */
export interface CallbackRoute<S extends z.ZodType> {
  path: `/callbacks/${string}`;
  body: S;
  handle(deps: Deps, body: z.output<S>, context: { requestId: string; log: Logger }): Promise<void>;
}

/** Declares a callback route with its body type inferred from the schema. */
export function callbackRoute<S extends z.ZodType>(route: CallbackRoute<S>): CallbackRoute<S> {
  return route;
}

/**
 * Inbound callbacks from providers (bank credits, processor outcomes). Each is verified against
 * the exact raw bytes with the shared callback secret before anything is parsed; a verified
 * callback is handled idempotently by its module and answered 204, so a provider that retries
 * never causes a second effect.
 */
export function callbacksRouter(deps: Deps, routes: readonly CallbackRoute<z.ZodType>[]): Router {
  const router = new Router();
  for (const route of routes) {
    router.post(route.path, async (ctx) => {
      const verdict = verifyCallback(
        deps.secrets.callbackSecret,
        ctx.request.rawBody,
        ctx.get(CALLBACK_SIGNATURE_HEADER) || undefined,
        Math.floor(deps.clock.now().getTime() / 1000),
      );
      if (!verdict.valid) {
        deps.log.warn(
          { path: route.path, reason: verdict.reason, request_id: ctx.state.requestId },
          'callback refused',
        );
        throw new AppError('CALLBACK_SIGNATURE_INVALID', {
          details: [{ field: CALLBACK_SIGNATURE_HEADER, issue: verdict.reason }],
        });
      }
      const parsed = route.body.safeParse(jsonBody(ctx));
      if (!parsed.success) throw new AppError('VALIDATION_FAILED', { details: zodDetails(parsed.error) });
      const log = deps.log.child({ request_id: ctx.state.requestId, callback: route.path });
      await route.handle(deps, parsed.data, { requestId: ctx.state.requestId, log });
      wakeFollowUps(deps);
      ctx.status = 204;
    });
  }
  return router;
}
