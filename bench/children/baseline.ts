/**
 * The baseline server: Koa and `pg`, nothing else, serving POST /v1/payouts and GET /v1/payouts
 * over a pool of the service's size, with either the statements of `lib/plain-sql.ts` (`plain`:
 * the create transaction as the issue describes it, statement by statement) or the service's own
 * statements (`same-sql`, `lib/same-sql.ts`). What the service adds on top of this (router,
 * validation, middleware) is what the ratios show.
 */
import Koa from 'koa';
import pg from 'pg';
import { onStop, readChildOptions, sendToParent } from '../lib/ipc.ts';
import { authenticate, createPayoutPlain, listPayoutsPlain, PlainError } from '../lib/plain-sql.ts';
import { sameSql } from '../lib/same-sql.ts';

export interface BaselineChildOptions {
  databaseUrl: string;
  poolSize: number;
  /** Which SQL it runs: the plain transaction, or the service's own statements. */
  variant: 'plain' | 'same-sql';
}

const options = readChildOptions<BaselineChildOptions>();
const db = new pg.Pool({ connectionString: options.databaseUrl, max: options.poolSize });
const same = options.variant === 'same-sql' ? sameSql(db) : null;
const app = new Koa();

app.use(async (ctx) => {
  try {
    const apiKey = ctx.get('x-api-key') || undefined;
    if (ctx.path === '/v1/payouts' && ctx.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      const key = ctx.get('idempotency-key');
      const result = same
        ? await same.create(apiKey, key, body)
        : await createPayoutPlain(db, await authenticate(db, apiKey), key, body);
      ctx.status = result.status;
      ctx.type = 'application/json';
      ctx.body = result.body;
      return;
    }
    if (ctx.path === '/v1/payouts' && ctx.method === 'GET') {
      const limit = Number(ctx.query.limit ?? 20);
      const cursor = typeof ctx.query.cursor === 'string' ? ctx.query.cursor : undefined;
      ctx.type = 'application/json';
      ctx.body = same
        ? await same.list(apiKey, limit, cursor)
        : await listPayoutsPlain(db, await authenticate(db, apiKey), limit, cursor);
      return;
    }
    ctx.status = 404;
  } catch (err) {
    ctx.status = err instanceof PlainError ? err.status : 500;
    ctx.body = { error: err instanceof Error ? err.message : String(err) };
  }
});

const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  sendToParent({ type: 'ready', url: `http://127.0.0.1:${port}` });
});
server.keepAliveTimeout = 65_000;
onStop(async () => {
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  await db.end();
});
