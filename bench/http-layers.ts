/**
 * What the HTTP facade costs per merchant request, in process: CPU per GET and POST /v1/payouts
 * through `createApp` with every layer the service runs (request id, access line at info into
 * /dev/null, metrics, envelope, policy header, method policy, body, the REST router and the
 * procedure's chain), in front of procedures that answer a constant: no database, no sockets
 * (requests and responses in memory, 16 at a time). Usage:
 *   npm exec -- node -r ./src/node-guard.cjs bench/http-layers.ts [<checkout>,<checkout>,...] [calls] [runs]
 * Each checkout (this one by default) is loaded into the one process and measured in turns, run
 * after run; the figure is the least of the runs (`process.cpuUsage`, µs per request). Compare
 * builds with it, not with the server's CPU per request: the in-memory request and response
 * stand in for Node's HTTP parsing and socket writes, which both sides of the bench share.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { z } from 'zod';

const here = fileURLToPath(new URL('..', import.meta.url)).replace(/\/$/, '');
const roots = (process.argv[2] ?? here).split(',');
const calls = Number(process.argv[3] ?? 30_000);
const runs = Number(process.argv[4] ?? 8);

/** The bench's create body (bench/lib/seed.ts `payoutBody`). */
const createBody = Buffer.from(
  JSON.stringify({
    destination_type: 'BANK_ACCOUNT',
    destination_country: 'NG',
    destination_currency: 'NGN',
    destination_amount: 50_123,
    destination_account_unique: '0123456789',
    destination_provider_name: 'Guaranty Trust Bank',
    destination_provider_code: '058',
    destination_account_name: 'ADAEZE OKONKWO',
  }),
);
const page = JSON.stringify({ data: [], meta: { next_cursor: null, has_more: false, limit: 20 } });

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** The app of the checkout at `root`, its REST routes served by two constant procedures. */
async function appOf(root: string): Promise<Handler> {
  const { createApp } = await import(`${root}/src/http/app.ts`);
  const { publicProcedure, router } = await import(`${root}/src/http/trpc.ts`);
  const { createLogger } = await import(`${root}/src/lib/log.ts`);
  const { createMetrics } = await import(`${root}/src/observability/metrics.ts`);
  const { RateLimiter } = await import(`${root}/src/http/rate-limit.ts`);
  const { loadConfig } = await import(`${root}/src/config.ts`);
  const probe = router({
    list: publicProcedure
      .meta({ openapi: { method: 'GET', path: '/v1/payouts' }, scope: 'payouts:read' })
      .input(z.strictObject({ limit: z.coerce.number().int().default(20) }))
      .query(() => page),
    create: publicProcedure
      .meta({ openapi: { method: 'POST', path: '/v1/payouts' }, scope: 'payouts:write', successStatus: 201 })
      .input(z.looseObject({ destination_type: z.string() }))
      .mutation(() => page),
  });
  // What createApp reads of the dependencies when no procedure touches the database.
  const deps = {
    log: createLogger({ level: 'info', destination: pino.destination({ dest: '/dev/null', sync: true }) }),
    metrics: createMetrics(),
    rateLimiter: new RateLimiter({ perSecond: 1e9, burst: 1e9 }),
    config: loadConfig({ PORT: '0', HOST: '127.0.0.1' }),
  };
  return createApp(deps, probe).callback();
}

function request(handle: Handler, post: boolean): Promise<void> {
  const req = new IncomingMessage(new Socket());
  req.method = post ? 'POST' : 'GET';
  req.url = post ? '/v1/payouts' : '/v1/payouts?limit=20';
  req.headers = post
    ? {
        host: '127.0.0.1',
        'x-api-key': 'sk_bench',
        'content-type': 'application/json',
        'content-length': String(createBody.length),
        'idempotency-key': '6f1c2a9e-1b1e-4c4a-9c5e-8f0a1b2c3d4e',
      }
    : { host: '127.0.0.1', 'x-api-key': 'sk_bench' };
  if (post) req.push(createBody);
  req.push(null);
  const res = new ServerResponse(req);
  return new Promise((resolve, reject) => {
    res.end = ((chunk: unknown) => {
      if (res.statusCode >= 300) reject(new Error(`${res.statusCode} ${String(chunk)}`));
      else resolve();
      return res;
    }) as typeof res.end;
    handle(req, res);
  });
}

/** CPU µs per request over `count` requests, 16 in flight at a time. */
async function run(handle: Handler, post: boolean, count: number): Promise<number> {
  const started = process.cpuUsage();
  for (let i = 0; i < count; i += 16) {
    const batch: Promise<void>[] = [];
    for (let j = 0; j < 16; j++) batch.push(request(handle, post));
    await Promise.all(batch);
  }
  const used = process.cpuUsage(started);
  return (used.user + used.system) / count;
}

const handles: Handler[] = [];
for (const root of roots) handles.push(await appOf(root));
for (const handle of handles) {
  await run(handle, false, 5000);
  await run(handle, true, 5000);
}
const figures = roots.map(() => ({ get: [] as number[], post: [] as number[] }));
for (let r = 0; r < runs; r++) {
  // The order turns each run, so that no build always runs first.
  for (let i = 0; i < roots.length; i++) {
    const k = (i + r) % roots.length;
    figures[k]!.get.push(await run(handles[k]!, false, calls));
    figures[k]!.post.push(await run(handles[k]!, true, calls));
  }
}
const show = (values: number[]) =>
  `${Math.min(...values).toFixed(1)} µs (runs ${values.map((v) => v.toFixed(1)).join(', ')})`;
roots.forEach((root, i) => {
  process.stdout.write(
    `${root}\n  GET /v1/payouts  ${show(figures[i]!.get)}\n  POST /v1/payouts ${show(figures[i]!.post)}\n`,
  );
});
