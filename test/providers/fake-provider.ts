import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';

/**
 * A local HTTP server standing in for a misbehaving provider (errors, silence, malformed
 * answers): the adapters' failure handling is tested against real sockets. Records each hit.
 */
export async function fakeProvider(
  handler: Koa.Middleware,
): Promise<{ url: string; hits: string[]; server: Server }> {
  const hits: string[] = [];
  const app = new Koa();
  app.use(async (ctx, next) => {
    hits.push(`${ctx.method} ${ctx.path}`);
    await next();
  });
  app.use(handler);
  const server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits, server };
}

/** Closes a fake provider, dropping connections that are still open (silent handlers). */
export async function stop(server: Server): Promise<void> {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}
