import { createHash } from 'node:crypto';
import { dayStart } from '#src/lib/days.ts';
import { toDecimal } from '#src/lib/money.ts';
import type { PaidPayout } from '#src/sandbox/processor.ts';

/**
 * The outflows of the reconciliation scenario's day, the same on both sides: the rows the
 * scenario writes in PostgreSQL (bench/scenarios/reconciliation.ts) and the payouts the sandbox's
 * processor reports paid that day (bench/children/sandbox.ts). Outflow `n` (1…rows) has the id
 * `md5('recon-bench-outflow-' || n)::uuid` (its reference at the processor), pays
 * `2000 + n % 700` NGN and was paid at `n × 86399 / rows` seconds into the day.
 */
export const OUTFLOW_AMOUNT_SQL = '(2000 + n % 700)';

/** SQL of outflow `n`'s time (`$k` the parameter holding the day's start). */
export const outflowAtSql = (param: number, rows: number) =>
  `$${param}::timestamptz + n * interval '1 second' * (86399.0 / ${rows})`;

/** PostgreSQL's `md5(text)::uuid`. */
export function md5Uuid(text: string): string {
  const h = createHash('md5').update(text).digest('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** What the processor reports paid on `day`: one payout per outflow, as the seeded rows say. */
export function paidOutflows(day: string, rows: number): PaidPayout[] {
  const start = dayStart(day).getTime();
  const out: PaidPayout[] = [];
  for (let n = 1; n <= rows; n++) {
    out.push({
      reference: md5Uuid(`recon-bench-outflow-${n}`),
      amount: toDecimal(2000 + (n % 700)),
      currency: 'NGN',
      settledAt: new Date(start + Math.floor((n * 86_399_000) / rows)),
    });
  }
  return out;
}
