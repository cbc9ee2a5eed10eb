import { z } from 'zod';
import { currencyOut, iso, moneyJson, moneyOut, timestampOut } from '#src/http/schemas.ts';
import type { Outflow } from './entities.ts';

export const outflowOut = z
  .object({
    id: z.string(),
    payout_id: z.string(),
    processor: z.string(),
    status: z.enum(['PENDING', 'PROCESSING', 'SUCCESSFUL', 'FAILED']).meta({ id: 'OutflowStatus' }),
    attempt_number: z.number().int().describe('1 for the first attempt; each retry is a row of its own.'),
    destination_amount: moneyOut,
    destination_currency: currencyOut,
    processor_reference: z.string().nullable(),
    failure_reason: z.string().nullable(),
    failure_code: z.string().nullable(),
    dispatched_at: timestampOut.nullable(),
    settled_at: timestampOut.nullable(),
    created_at: timestampOut,
  })
  .meta({
    id: 'Outflow',
    description: 'One attempt to pay the beneficiary through the processor (immutable).',
  });

export function toOutflowResource(o: Outflow): z.input<typeof outflowOut> {
  return {
    id: o.id,
    payout_id: o.payout.id,
    processor: o.processor,
    status: o.status,
    attempt_number: o.attemptNumber,
    destination_amount: moneyJson(o.destinationAmount),
    destination_currency: o.destinationCurrency,
    processor_reference: o.processorReference ?? null,
    failure_reason: o.failureReason ?? null,
    failure_code: o.failureCode ?? null,
    dispatched_at: iso(o.dispatchedAt ?? null),
    settled_at: iso(o.settledAt ?? null),
    created_at: iso(o.createdAt),
  };
}
