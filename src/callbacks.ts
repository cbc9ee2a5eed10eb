import type { z } from 'zod';
import type { CallbackRoute } from './http/callbacks.ts';

/**
 * Every inbound provider callback route (`/callbacks/*`), verified by signature in
 * `src/http/callbacks.ts` and handled by its module.
 */
export const CALLBACK_ROUTES: readonly CallbackRoute<z.ZodType>[] = [];
