import type { z } from 'zod';
import { processorCallback } from './dispatch/callbacks.ts';
import type { CallbackRoute } from './http/callbacks.ts';
import { bankCreditCallback } from './settlement/callbacks.ts';

/**
 * Every inbound provider callback route (`/callbacks/*`), verified by signature in
 * `src/http/callbacks.ts` and handled by its module.
 */
export const CALLBACK_ROUTES: readonly CallbackRoute<z.ZodType>[] = [processorCallback, bankCreditCallback];
