import { z } from 'zod';
import { callbackRoute } from '#src/http/callbacks.ts';
import { handleProcessorReport } from './service.ts';

/**
 * `POST /callbacks/processor`: the processor's signed report of an attempt's outcome
 * (`{ event: 'payout.status', reference, processor_reference, status, failure_code,
 * failure_reason, retryable, occurred_at }`). The reference is the outflow id we submitted.
 */
const processorCallbackBody = z.object({
  event: z.literal('payout.status'),
  reference: z.string().min(1).max(128),
  processor_reference: z.string().max(128).nullish(),
  // ACCEPTED is not sent by the sandbox, but a processor that reports acceptance by callback is
  // understood rather than refused (a refusal would only be retried).
  status: z.enum(['ACCEPTED', 'SUCCESSFUL', 'FAILED']),
  failure_code: z.string().max(100).nullish(),
  failure_reason: z.string().max(2000).nullish(),
  retryable: z.boolean().default(false),
  occurred_at: z.string().max(64).nullish(),
});

export const processorCallback = callbackRoute({
  path: '/callbacks/processor',
  body: processorCallbackBody,
  handle: (deps, body, { log }) =>
    handleProcessorReport(
      deps,
      {
        reference: body.reference,
        status: body.status,
        processorReference: body.processor_reference ?? null,
        failureCode: body.failure_code ?? null,
        failureReason: body.failure_reason ?? null,
        retryable: body.status === 'FAILED' && body.retryable,
        occurredAt: body.occurred_at ?? null,
      },
      log,
    ),
});
