import type { AddressInfo } from 'node:net';
import Router from '@koa/router';
import Koa from 'koa';
import type { Corridors } from '#src/corridors/corridors.ts';
import type { Clock } from '#src/lib/clock.ts';
import type { Logger } from '#src/lib/log.ts';
import { bankParty, type SandboxBank } from './bank.ts';
import {
  type CallbackSender,
  createCallbackSender,
  DEFAULT_CALLBACK_DELAY_MS,
  DEFAULT_CALLBACK_RETRY_BASE_MS,
  DEFAULT_CALLBACK_SECRET,
} from './callbacks.ts';
import { chainsParty, type SandboxChains } from './chains.ts';
import { directoryRouter } from './directory.ts';
import { sandboxErrors } from './http.ts';
import { processorParty, type SandboxProcessor } from './processor.ts';
import { ratesRouter } from './rates.ts';

/** What every simulated party may need; parties take only the part they use. */
export interface SandboxOptions {
  corridors: Corridors;
  clock: Clock;
  log: Logger;
  /** Block time of both chains; 0 mines blocks only on request. Default 3000 (SANDBOX_BLOCK_INTERVAL_MS). */
  blockIntervalMs?: number;
  /** Delay before the bank and the processor call back; 0 is the next tick. Default 200. */
  callbackDelayMs?: number;
  /** First retry delay of a callback the service did not take, doubled per retry. Default 1000. */
  callbackRetryBaseMs?: number;
  /** Key of the callbacks' X-Provider-Signature, shared with the service. Default DEFAULT_CALLBACK_SECRET. */
  callbackSecret?: string;
}

/** The parties that keep state (chains, bank, processor), with handles for tests and tools. */
export interface SandboxParties {
  chains: SandboxChains;
  bank: SandboxBank;
  processor: SandboxProcessor;
  callbacks: CallbackSender;
}

export interface RunningSandbox extends SandboxParties {
  url: string;
  port: number;
  close(): Promise<void>;
}

const DEFAULT_BLOCK_INTERVAL_MS = 3000;

/** The stateful parties of one sandbox; `callbacks.close()` stops their pending callbacks. */
export function createSandboxParties(options: SandboxOptions): SandboxParties {
  const callbackDelayMs = options.callbackDelayMs ?? DEFAULT_CALLBACK_DELAY_MS;
  const callbacks = createCallbackSender({
    secret: options.callbackSecret ?? DEFAULT_CALLBACK_SECRET,
    clock: options.clock,
    log: options.log,
    retryBaseMs: options.callbackRetryBaseMs ?? DEFAULT_CALLBACK_RETRY_BASE_MS,
  });
  return {
    chains: chainsParty({
      clock: options.clock,
      blockIntervalMs: options.blockIntervalMs ?? DEFAULT_BLOCK_INTERVAL_MS,
    }),
    bank: bankParty({ ...options, callbacks, callbackDelayMs }),
    processor: processorParty({ ...options, callbacks, callbackDelayMs }),
    callbacks,
  };
}

/**
 * The outside world in one Koa app: one router per simulated party, each serving the same
 * provider-side HTTP API a real provider would. Parties keep no state unless they simulate some.
 */
export function createSandboxApp(
  options: SandboxOptions,
  parties: SandboxParties = createSandboxParties(options),
): Koa {
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
  for (const party of [
    health,
    directoryRouter(options),
    ratesRouter(options),
    parties.chains.router,
    parties.bank.router,
    parties.processor.router,
  ]) {
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
  const parties = createSandboxParties(options);
  const app = createSandboxApp(options, parties);
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
    ...parties,
    url: `http://${urlHost}:${port}`,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        parties.callbacks.close();
        server.close((err) => (err ? reject(err) : resolve()));
        // Keep-alive connections of clients would otherwise hold close() open until they idle out.
        server.closeIdleConnections();
      }),
  };
}
