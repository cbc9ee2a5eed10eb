import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { WebhookDelivery } from '#src/webhooks/delivery.entities.ts';
import { runWebhooksOnce, type WebhookPassOptions } from '#src/webhooks/job.ts';
import { call, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';

/** One request a receiver got, body as raw bytes. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** performance.now() when the request had fully arrived. */
  at: number;
  /** performance.now() when the connection of an unanswered ('hold') request was closed by the sender. */
  droppedAt?: number;
}

/**
 * What the receiver does with a request: answer with a status, or take the response over
 * (`'hold'` leaves it unanswered until the receiver closes).
 */
export type Reply = number | 'hold' | ((res: ServerResponse) => void);

/** A real HTTP merchant endpoint on 127.0.0.1 (the contract's exception for plain http). */
export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  /** Most requests open at the same time. */
  maxConcurrent: number;
  close(): Promise<void>;
}

/** Starts a receiver on a free port; `reply` decides each answer (200 by default). */
export async function startReceiver(
  reply: (request: Received, index: number) => Reply = () => 200,
): Promise<Receiver> {
  const received: Received[] = [];
  let open = 0;
  const state = { maxConcurrent: 0 };
  const server = createServer((req, res) => {
    open++;
    state.maxConcurrent = Math.max(state.maxConcurrent, open);
    res.on('close', () => {
      open--;
    });
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const request: Received = {
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks),
        at: performance.now(),
      };
      received.push(request);
      const answer = reply(request, received.length - 1);
      if (answer === 'hold') {
        res.on('close', () => {
          request.droppedAt = performance.now();
        });
        return;
      }
      if (typeof answer === 'function') answer(res);
      else {
        res.writeHead(answer);
        res.end();
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    get maxConcurrent() {
      return state.maxConcurrent;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Starts receivers for the tests of the calling `describe` and closes them after each test: call it
 * in the `describe` body.
 */
export function receiversClosedAfterEach(): typeof startReceiver {
  const started: Receiver[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((r) => r.close()));
  });
  return async (...args) => {
    const r = await startReceiver(...args);
    started.push(r);
    return r;
  };
}

/** Sets the tenant's webhook URL; returns the signing secret in force. */
export async function configureWebhook(merchant: Merchant, url: string): Promise<string> {
  const res = await call('PUT', '/v1/webhooks/config', { key: merchant.key, body: { webhook_url: url } });
  expect(res.status, res.text).to.equal(200);
  return res.body.signing_secret;
}

/** Rotates the signing secret; returns the new one. */
export async function rotateSecret(merchant: Merchant): Promise<string> {
  const res = await call('POST', '/v1/webhooks/config/rotate-secret', { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  return res.body.signing_secret;
}

/** Creates a payout (which writes payout.created to the outbox); returns its id. */
export async function createPayout(
  merchant: Merchant,
  overrides: Record<string, unknown> = {},
): Promise<string> {
  const res = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout(overrides) });
  expect(res.status, res.text).to.equal(201);
  return res.body.id;
}

/**
 * One pass of the webhooks job over these merchants only (other tests' rows share the database),
 * with configuration overrides such as a short time-out.
 */
export function deliverFor(
  merchants: Merchant[],
  config: Partial<ReturnType<typeof harness>['service']['deps']['config']> = {},
  options: WebhookPassOptions = {},
) {
  const deps = harness().service.deps;
  return runWebhooksOnce(
    { ...deps, config: { ...deps.config, ...config } },
    { tenantIds: merchants.map((m) => m.tenantId), ...options },
  );
}

/** The merchant's delivery records, newest first, as the API returns them. */
export async function deliveryLog(merchant: Merchant): Promise<any[]> {
  const res = await call('GET', '/v1/webhooks/deliveries?limit=100', { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  return res.body.data;
}

/**
 * Passes of the webhooks job over these merchants, the clock moved to each next attempt's due
 * time: every delivery open at the start runs all five of its attempts.
 */
export async function runAllAttempts(merchants: Merchant[]): Promise<void> {
  const base = harness().service.deps.config.WEBHOOK_BACKOFF_BASE_MS;
  await deliverFor(merchants);
  for (let n = 2; n <= 5; n++) {
    harness().clock.advance(base * 2 ** (n - 2));
    await deliverFor(merchants);
  }
}

/**
 * A fresh merchant whose webhook URL refuses connections (a port nothing listens on), with one
 * payout whose payout.created delivery is DEAD: that delivery job.
 */
export async function deadDelivery(): Promise<{ merchant: Merchant; job: WebhookDelivery }> {
  const merchant = await payoutReadyMerchant();
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await configureWebhook(merchant, `http://127.0.0.1:${port}/hooks`);
  await createPayout(merchant);
  await runAllAttempts([merchant]);
  const job = await harness()
    .service.deps.orm.em.fork()
    .findOneOrFail(WebhookDelivery, { tenant: merchant.tenantId, status: 'DEAD' });
  return { merchant, job };
}
