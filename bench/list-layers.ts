/**
 * Where a page of `GET /v1/payouts` spends the service's CPU beyond what the same-SQL baseline
 * spends: each layer that only the service runs, timed in process on a page of twenty payouts
 * (no I/O), next to the work both sides do (the rows made resources and serialised). Usage:
 *   npm exec -- node -r ./src/node-guard.cjs bench/list-layers.ts
 * The figures are CPU microseconds per page on this machine; compare them with the bench's
 * "server CPU per request (median round)" of the list and of its Koa + pg baseline.
 */
import { randomUUID } from 'node:crypto';
import { pino } from 'pino';
import { encodeCursor } from '#src/http/pagination.ts';
import { procedureCaller } from '#src/http/rest.ts';
import { middleware, publicProcedure, router } from '#src/http/trpc.ts';
import { createLogger, flatLogger } from '#src/lib/log.ts';
import { createMetrics } from '#src/observability/metrics.ts';
import { type PayoutView, toPayoutPage } from '#src/payouts/resource.ts';
import { appRouter } from '#src/router.ts';
import { payoutView } from './lib/payout-views.ts';
import { plainCursor } from './lib/plain-sql.ts';

type Shape = 'CREATED' | 'PENDING_PAYMENT';

/** A payout as the page query returns it: the bench's list seed (CREATED) or one with an instruction. */
function view(i: number, shape: Shape): PayoutView {
  const at = `2026-11-01 00:00:${String(i % 60).padStart(2, '0')}.123+00`;
  return { ...payoutView(shape, at), merchant_reference: `list-${i}` };
}

/** CPU microseconds per call of `work`, after a warm-up; the lower of two passes. */
async function cpuMicros(work: () => unknown): Promise<number> {
  const pass = async (n: number) => {
    const started = process.cpuUsage();
    for (let i = 0; i < n; i++) await work();
    const used = process.cpuUsage(started);
    return (used.user + used.system) / n;
  };
  await pass(2_000);
  return Math.min(await pass(5_000), await pass(5_000));
}

const list = (
  appRouter._def.procedures as unknown as Record<string, { _def: { inputs: unknown[]; output: unknown } }>
)['payouts.list']!._def;
const listIn = list.inputs[0] as { parse(v: unknown): unknown };
const listOut = list.output as { parse(v: unknown): unknown };
const key = Buffer.alloc(32, 7);
const nothing = middleware(({ next }) => next());
const probe = router({
  bare: publicProcedure
    .use(nothing)
    .use(nothing)
    .query(() => null),
});
const callBare = procedureCaller(probe, 'bare');
// The access line exactly as the service writes it (flatLogger: its fields are plain values, so
// only the top-level redaction paths apply), at info, to a file nobody reads; beside it, the same
// line through the full redaction that every other line gets, and through none.
const fullyRedacted = createLogger({
  level: 'info',
  destination: pino.destination({ dest: '/dev/null', sync: true }),
});
const accessLog = flatLogger(fullyRedacted);
const unredacted = fullyRedacted.child({}, { redact: { paths: [] } });
const metrics = createMetrics();
/** The fields of the service's access line (src/http/middleware.ts). */
const accessLine = () => ({
  request_id: `req_${randomUUID().replaceAll('-', '')}`,
  method: 'GET',
  path: '/v1/payouts',
  route: '/v1/payouts',
  status: 200,
  ms: 3.4,
  tenant_id: '0b7c6f1e-2d7a-4a53-9a43-3f3c1b8e9d10',
  error_code: undefined,
});

const lines: [string, string, number][] = [];
for (const shape of ['CREATED', 'PENDING_PAYMENT'] as const) {
  const rows = Array.from({ length: 20 }, (_, i) => view(i, shape));
  const meta = { next_cursor: 'c', has_more: true, limit: 20 };
  const page = toPayoutPage(rows, meta);
  const add = async (layer: string, work: () => unknown) => lines.push([shape, layer, await cpuMicros(work)]);
  await add('both: rows to resources, and JSON.stringify', () => JSON.stringify(toPayoutPage(rows, meta)));
  await add('service: output validation (zod, the page; development and tests only)', () =>
    listOut.parse(page),
  );
  await add('service: input validation (zod, the query)', () => listIn.parse({ limit: '20' }));
  await add('service: signed cursor (HMAC)', () => {
    encodeCursor(key, { l: 'payouts', c: '2026-11-01T00:00:00.123Z', i: rows[19]!.id });
  });
  await add('baseline: plain cursor', () => plainCursor(new Date('2026-11-01T00:00:00.123Z'), rows[19]!.id));
  await add("service: the procedure's chain as the REST adapter calls it, two middlewares, no schemas", () =>
    callBare({}, async () => ({})),
  );
  await add('service: the access line at info (pino, top-level redaction)', () =>
    accessLog.info(accessLine(), 'request'),
  );
  await add('service: the HTTP metrics (a counter and a histogram by route)', () => {
    metrics.http.record('/v1/payouts', 'GET', 200, 0.0034);
  });
  await add('(the access line with the full redaction)', () => fullyRedacted.info(accessLine(), 'request'));
  await add('(the access line without redaction)', () => unredacted.info(accessLine(), 'request'));
}
const width = Math.max(...lines.map(([, layer]) => layer.length));
for (const [shape, layer, micros] of lines)
  process.stdout.write(`${shape.padEnd(16)} ${layer.padEnd(width)} ${micros.toFixed(1).padStart(7)} µs\n`);
