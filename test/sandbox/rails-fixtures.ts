import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { Corridors } from '#src/corridors/corridors.ts';
import { type Clock, ManualClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { type RunningSandbox, type SandboxOptions, startSandbox } from '#src/sandbox/server.ts';

/**
 * A sandbox for the money-moving parties' tests: blocks only when mined, callbacks at the next
 * tick and retried after 1 ms, so that tests await events instead of waiting out delays.
 */
export function startRailsSandbox(
  clock: Clock,
  overrides: Partial<SandboxOptions> = {},
): Promise<RunningSandbox> {
  return startSandbox({
    corridors: Corridors.load(),
    clock,
    log: createLogger({ level: 'silent' }),
    port: 0,
    blockIntervalMs: 0,
    callbackDelayMs: 0,
    callbackRetryBaseMs: 1,
    ...overrides,
  });
}

/** One request the receiver got, with the exact bytes for signature checks. */
export interface ReceivedCallback {
  path: string;
  rawBody: Buffer;
  body: any;
  signature: string | undefined;
  /** The status the receiver answered. */
  answered: number;
}

/**
 * A stand-in for the service's callback endpoints: records every request, answers 200 unless
 * told otherwise per path, and lets a test await callbacks instead of sleeping.
 */
export interface CallbackReceiver {
  url: string;
  received: ReceivedCallback[];
  /** Answers the next requests to `path` with these statuses, in order, then 200 again. */
  answer(path: string, ...statuses: number[]): void;
  /** Runs before each answer to `path` (a test moves its clock between attempts here). */
  onRequest(path: string, hook: () => void): void;
  /** Resolves with the first `count` callbacks to `path` once that many have arrived. */
  waitFor(path: string, count?: number): Promise<ReceivedCallback[]>;
  close(): Promise<void>;
}

export async function startCallbackReceiver(): Promise<CallbackReceiver> {
  const received: ReceivedCallback[] = [];
  const scripted = new Map<string, number[]>();
  const hooks = new Map<string, () => void>();
  const waiters: { path: string; count: number; resolve: (hits: ReceivedCallback[]) => void }[] = [];

  const hitsOf = (path: string) => received.filter((r) => r.path === path);

  const app = new Koa();
  app.use(async (ctx) => {
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const rawBody = Buffer.concat(chunks);
    hooks.get(ctx.path)?.();
    const answered = scripted.get(ctx.path)?.shift() ?? 200;
    received.push({
      path: ctx.path,
      rawBody,
      body: JSON.parse(rawBody.toString('utf8')),
      signature: ctx.get('x-provider-signature') || undefined,
      answered,
    });
    ctx.status = answered;
    ctx.body = answered < 300 ? { ok: true } : { error: 'try again' };
    for (const waiter of [...waiters]) {
      const hits = hitsOf(waiter.path);
      if (hits.length >= waiter.count) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(hits.slice(0, waiter.count));
      }
    }
  });
  const server: Server = createServer(app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));

  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    answer: (path, ...statuses) => scripted.set(path, [...(scripted.get(path) ?? []), ...statuses]),
    onRequest: (path, hook) => hooks.set(path, hook),
    waitFor(path, count = 1) {
      const hits = hitsOf(path);
      if (hits.length >= count) return Promise.resolve(hits.slice(0, count));
      return new Promise((resolve) => waiters.push({ path, count, resolve }));
    },
    close() {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A JSON answer of the sandbox: status and parsed body. */
export interface JsonAnswer {
  status: number;
  body: any;
}

/** Calls the sandbox's HTTP API with a JSON body (or none) and reads the JSON answer. */
export async function callJson(
  baseUrl: string,
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
): Promise<JsonAnswer> {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: response.status, body: await response.json() };
}

/** What a rails test works with: a manual clock, the sandbox, a callback receiver and shortcuts. */
export interface RailsRig {
  clock: ManualClock;
  sandbox: RunningSandbox;
  receiver: CallbackReceiver;
  /** Calls the sandbox's HTTP API. */
  call(method: 'GET' | 'POST', path: string, body?: unknown): Promise<JsonAnswer>;
  /** The clock's time in unix seconds, as signatures carry it. */
  seconds(): number;
}

/**
 * Registers hooks on the enclosing describe that start a rails sandbox signing with
 * `callbackSecret` and a callback receiver, and stop both afterwards.
 */
export function useRailsRig(callbackSecret: string): RailsRig {
  const clock = new ManualClock(new Date('2026-03-02T09:00:00Z'));
  let sandbox: RunningSandbox | undefined;
  let receiver: CallbackReceiver | undefined;
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error('the rails rig starts in a before hook');
    return value;
  };
  before(async () => {
    receiver = await startCallbackReceiver();
    sandbox = await startRailsSandbox(clock, { callbackSecret });
  });
  after(async () => {
    await sandbox?.close();
    await receiver?.close();
  });
  return {
    clock,
    get sandbox() {
      return started(sandbox);
    },
    get receiver() {
      return started(receiver);
    },
    call: (method, path, body) => callJson(started(sandbox).url, method, path, body),
    seconds: () => Math.floor(clock.now().getTime() / 1000),
  };
}
