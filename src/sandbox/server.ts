import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import type { Corridors } from '#src/corridors/corridors.ts';
import type { Clock } from '#src/lib/clock.ts';
import type { Logger } from '#src/lib/log.ts';
import { directoryRouter } from './directory.ts';
import { sandboxErrors } from './http.ts';
import { ratesRouter } from './rates.ts';

/** What every simulated party may need; parties take only the part they use. */
export interface SandboxOptions {
  corridors: Corridors;
  clock: Clock;
  log: Logger;
}

export interface RunningSandbox {
  url: string;
  port: number;
  close(): Promise<void>;
}

/**
 * The outside world in one Koa app: one router per simulated party, each serving the same
 * provider-side HTTP API a real provider would. Parties keep no state unless they simulate some.
 */
export function createSandboxApp(options: SandboxOptions): Koa {
  const { log } = options;
  const app = new Koa();
  const health = new Router();
  health.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  app.use(async (ctx, next) => {
    const started = performance.now();
    await next();
    // Path only: query strings and bodies of provider calls carry account numbers.
    log.debug(
      { method: ctx.method, path: ctx.path, status: ctx.status, ms: Math.round(performance.now() - started) },
      'sandbox request',
    );
  });
  app.use(sandboxErrors(log));
  for (const party of [health, directoryRouter(options), ratesRouter(options)]) {
    app.use(party.routes());
    app.use(party.allowedMethods({ throw: true }));
  }
  return app;
}

/** Starts the sandbox on `port` (0 picks a free one) and reports where it listens. */
export async function startSandbox(
  options: SandboxOptions & { port: number; host?: string },
): Promise<RunningSandbox> {
  const host = options.host ?? '127.0.0.1';
  const app = createSandboxApp(options);
  const server = app.listen({ port: options.port, host });
  await new Promise<void>((resolve, reject) => {
    const fail = (err: Error) => reject(err);
    server.once('error', fail);
    server.once('listening', () => {
      server.off('error', fail);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  return {
    url: `http://${urlHost}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Keep-alive connections of clients would otherwise hold close() open until they idle out.
        server.closeIdleConnections();
      }),
  };
}
