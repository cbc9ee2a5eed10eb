import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { verifyWebhook } from '#src/client/verifier.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { WebhookDelivery } from '#src/webhooks/delivery.entities.ts';
import { unixSeconds } from '#src/webhooks/signature.ts';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  configureWebhook,
  createPayout,
  deliverFor,
  deliveryLog,
  type Received,
  receiversClosedAfterEach,
  rotateSecret,
  startReceiver,
} from './receiver.ts';

const RECORD_FIELDS = [
  'id',
  'payout_id',
  'event_id',
  'event_type',
  'attempt_number',
  'target_url',
  'response_status',
  'status',
  'failure_reason',
  'created_at',
];

const backoff = () => harness().service.deps.config.WEBHOOK_BACKOFF_BASE_MS;

/** Verifies a received request against a secret at the service clock's "now". */
function verified(request: Received, secret: string): boolean {
  return verifyWebhook({
    rawBody: request.body,
    signatureHeader: request.headers['x-service-signature'],
    timestampHeader: request.headers['x-service-timestamp'],
    secret,
    now: unixSeconds(harness().clock.now()),
  }).ok;
}

const bodyOf = (request: Received) => JSON.parse(request.body.toString('utf8'));

async function payoutCreatedEvent(payoutId: string): Promise<OutboxEvent> {
  const em = harness().service.deps.orm.em.fork();
  return em.findOneOrFail(OutboxEvent, { payoutId, eventType: 'payout.created' });
}

async function deliveryJobsOf(payoutId: string): Promise<WebhookDelivery[]> {
  return harness().service.deps.orm.em.fork().find(WebhookDelivery, { payoutId });
}

/** A port nothing listens on (bound once, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * A fresh merchant whose webhook URL is `url`, one payout and one delivery pass (with these
 * overrides): the record of that first attempt.
 */
async function firstAttemptTo(
  url: string,
  config: Parameters<typeof deliverFor>[1] = {},
  options: Parameters<typeof deliverFor>[2] = {},
): Promise<any> {
  const merchant = await payoutReadyMerchant();
  await configureWebhook(merchant, url);
  await createPayout(merchant);
  expect(await deliverFor([merchant], config, options)).to.include({ attempted: 1, failed: 1 });
  const log = await deliveryLog(merchant);
  expect(log).to.have.length(1);
  return log[0];
}

describe('webhook delivery', () => {
  const receiver = receiversClosedAfterEach();

  describe('a 2xx answer', () => {
    it('delivers the event to the tenant URL, signed, and logs one SUCCESS record', async () => {
      const merchant = await payoutReadyMerchant();
      const endpoint = await receiver();
      const secret = (await configureWebhook(merchant, endpoint.url)) as string;
      const payoutId = await createPayout(merchant);

      const summary = await deliverFor([merchant]);
      expect(summary).to.include({ attempted: 1, succeeded: 1, failed: 0 });
      expect(endpoint.received).to.have.length(1);
      const [request] = endpoint.received as [Received];
      const event = await payoutCreatedEvent(payoutId);
      const [job] = await deliveryJobsOf(payoutId);

      expect(request.path).to.equal('/hooks');
      expect(request.headers['content-type']).to.equal('application/json');
      expect(request.headers['x-service-event']).to.equal('payout.created');
      expect(request.headers['x-service-delivery']).to.equal(job?.id);
      expect(request.headers['x-service-timestamp']).to.equal(String(unixSeconds(harness().clock.now())));
      expect(request.headers['x-service-signature']).to.match(/^t=\d+,v1=[0-9a-f]{64}$/);
      expect(verified(request, secret)).to.equal(true);

      // The body is the stored payload, byte for byte.
      expect(request.body.toString('utf8')).to.equal(event.payload);
      const body = bodyOf(request);
      expect(Object.keys(body)).to.deep.equal(['event_id', 'event_type', 'created_at', 'status', 'data']);
      expect(body).to.deep.include({ event_id: event.id, event_type: 'payout.created', status: 'CREATED' });
      expect(body.data).to.include({ object: 'payout', id: payoutId, status: 'CREATED' });
      expect(body.data.tenant_id).to.equal(merchant.tenantId);

      const log = await deliveryLog(merchant);
      expect(log).to.have.length(1);
      expect(Object.keys(log[0])).to.deep.equal(RECORD_FIELDS);
      expect(log[0]).to.include({
        payout_id: payoutId,
        event_id: event.id,
        event_type: 'payout.created',
        attempt_number: 1,
        target_url: endpoint.url,
        response_status: 200,
        status: 'SUCCESS',
        failure_reason: null,
      });

      expect(await deliverFor([merchant])).to.include({ published: 0, attempted: 0 });
      expect(endpoint.received).to.have.length(1);
    });

    it('counts every 2xx as success (204, 299)', async () => {
      const merchant = await payoutReadyMerchant();
      const endpoint = await receiver((_, i) => (i === 0 ? 204 : 299));
      await configureWebhook(merchant, endpoint.url);
      await createPayout(merchant);
      await createPayout(merchant);
      expect(await deliverFor([merchant])).to.include({ attempted: 2, succeeded: 2 });
      const log = await deliveryLog(merchant);
      expect(log.map((r) => r.status)).to.deep.equal(['SUCCESS', 'SUCCESS']);
      expect(log.map((r) => r.response_status).sort()).to.deep.equal([204, 299]);
    });
  });

  describe('failures', () => {
    it('a 500 is a FAILED record; the retry carries the same event_id, delivery id and bytes, signed afresh', async () => {
      const merchant = await payoutReadyMerchant();
      const endpoint = await receiver((_, i) => (i === 0 ? 500 : 200));
      const secret = (await configureWebhook(merchant, endpoint.url)) as string;
      await createPayout(merchant);

      expect(await deliverFor([merchant])).to.include({ attempted: 1, failed: 1 });
      let log = await deliveryLog(merchant);
      expect(log).to.have.length(1);
      expect(log[0]).to.include({
        attempt_number: 1,
        status: 'FAILED',
        response_status: 500,
        failure_reason: 'HTTP 500',
      });

      harness().clock.advance(backoff());
      expect(await deliverFor([merchant])).to.include({ attempted: 1, succeeded: 1 });
      const [first, second] = endpoint.received as [Received, Received];
      expect(second.body.equals(first.body)).to.equal(true);
      expect(bodyOf(second).event_id).to.equal(bodyOf(first).event_id);
      expect(second.headers['x-service-delivery']).to.equal(first.headers['x-service-delivery']);
      expect(second.headers['x-service-signature']).to.not.equal(first.headers['x-service-signature']);
      expect(verified(second, secret)).to.equal(true);

      log = await deliveryLog(merchant);
      expect(log.map((r) => [r.attempt_number, r.status])).to.deep.equal([
        [2, 'SUCCESS'],
        [1, 'FAILED'],
      ]);
      expect(log[0].event_id).to.equal(log[1].event_id);
    });

    it('no answer within WEBHOOK_TIMEOUT_MS is a time-out without a response status', async () => {
      const endpoint = await receiver(() => 'hold');
      const started = performance.now();
      const record = await firstAttemptTo(endpoint.url, { WEBHOOK_TIMEOUT_MS: 300 });
      expect(performance.now() - started).to.be.above(250);
      expect(endpoint.received).to.have.length(1);
      expect(record).to.include({
        status: 'FAILED',
        response_status: 0,
        failure_reason: 'timeout: no response within 300 ms',
      });
    });
    it('a refused connection is named as such', async () => {
      const record = await firstAttemptTo(`http://127.0.0.1:${await closedPort()}/hooks`);
      expect(record).to.include({
        status: 'FAILED',
        response_status: 0,
        failure_reason: 'connection refused',
      });
    });
    it('a TLS failure is named as such (https to a server that does not speak TLS)', async () => {
      const plain = await receiver();
      const record = await firstAttemptTo(`https://127.0.0.1:${plain.port}/hooks`);
      expect(record).to.include({ status: 'FAILED', response_status: 0 });
      expect(record.failure_reason).to.match(/^TLS: EPROTO/);
      expect(plain.received).to.have.length(0);
    });
    it('a redirect is a failure and is never followed', async () => {
      const elsewhere = await receiver();
      const endpoint = await receiver(() => (res) => {
        res.writeHead(302, { location: elsewhere.url });
        res.end();
      });
      const record = await firstAttemptTo(endpoint.url);
      expect(endpoint.received).to.have.length(1);
      expect(elsewhere.received).to.have.length(0);
      expect(record).to.include({
        status: 'FAILED',
        response_status: 302,
        failure_reason: 'HTTP 302: redirects are not followed',
      });
    });
    it('another status (404) is a failure naming the status', async () => {
      const endpoint = await receiver(() => 404);
      const record = await firstAttemptTo(endpoint.url);
      expect(record).to.include({ status: 'FAILED', response_status: 404, failure_reason: 'HTTP 404' });
    });
  });

  describe('targets and signing', () => {
    it('routes a payout with notification_url there, signed with the tenant secret; others to the tenant URL', async () => {
      const merchant = await payoutReadyMerchant();
      const tenantEndpoint = await receiver();
      const payoutEndpoint = await receiver();
      const secret = (await configureWebhook(merchant, tenantEndpoint.url)) as string;
      const routed = await createPayout(merchant, { notification_url: payoutEndpoint.url });
      const plain = await createPayout(merchant);

      await deliverFor([merchant]);
      expect(payoutEndpoint.received.map((r) => bodyOf(r).data.id)).to.deep.equal([routed]);
      expect(tenantEndpoint.received.map((r) => bodyOf(r).data.id)).to.deep.equal([plain]);
      expect(verified(payoutEndpoint.received[0] as Received, secret)).to.equal(true);
      const log = await deliveryLog(merchant);
      expect(log.find((r) => r.payout_id === routed)?.target_url).to.equal(payoutEndpoint.url);
      expect(log.find((r) => r.payout_id === plain)?.target_url).to.equal(tenantEndpoint.url);
    });

    it('sends unsigned, without either signature header, when the tenant has no secret', async () => {
      const merchant = await payoutReadyMerchant();
      const endpoint = await receiver();
      await createPayout(merchant, { notification_url: endpoint.url });
      await deliverFor([merchant]);
      const [request] = endpoint.received as [Received];
      expect(request.headers).to.not.have.any.keys('x-service-signature', 'x-service-timestamp');
      expect(request.headers['x-service-event']).to.equal('payout.created');
      expect(request.headers['x-service-delivery']).to.be.a('string');
      expect((await deliveryLog(merchant))[0]).to.include({ status: 'SUCCESS' });
    });

    it('publishes an event with no target without sending or logging anything', async () => {
      const merchant = await payoutReadyMerchant();
      const payoutId = await createPayout(merchant);
      expect(await deliverFor([merchant])).to.include({ published: 1, attempted: 0 });
      expect((await payoutCreatedEvent(payoutId)).publishedAt).to.be.instanceOf(Date);
      expect(await deliveryJobsOf(payoutId)).to.have.length(0);
      expect(await deliveryLog(merchant)).to.deep.equal([]);
    });

    it('after a rotation every attempt, a retry of an older event included, is signed with the new secret', async () => {
      const merchant = await payoutReadyMerchant();
      const endpoint = await receiver((_, i) => (i === 0 ? 503 : 200));
      const oldSecret = (await configureWebhook(merchant, endpoint.url)) as string;
      await createPayout(merchant);
      await deliverFor([merchant]);
      expect(verified(endpoint.received[0] as Received, oldSecret)).to.equal(true);

      const newSecret = await rotateSecret(merchant);
      await createPayout(merchant);
      harness().clock.advance(backoff());
      expect(await deliverFor([merchant])).to.include({ attempted: 2, succeeded: 2 });
      const [, retry, fresh] = endpoint.received as [Received, Received, Received];
      for (const request of [retry, fresh]) {
        expect(verified(request, newSecret)).to.equal(true);
        expect(verified(request, oldSecret)).to.equal(false);
      }
    });
  });

  describe('SSRF defence at delivery time', () => {
    // The URL passed the policy at configuration (its name did not resolve then); what it
    // resolves to at delivery time decides.
    const TARGET = 'https://hooks.delivery-ssrf.example/payouts';

    it('refuses a host that now resolves to a private address, and calls nothing', async () => {
      let asked = '';
      const resolve = async (host: string) => {
        asked = host;
        return ['10.20.30.40'];
      };
      const record = await firstAttemptTo(TARGET, {}, { resolve });
      expect(asked).to.equal('hooks.delivery-ssrf.example');
      expect(record).to.include({
        status: 'FAILED',
        response_status: 0,
        failure_reason: 'refused: URL host resolves to a private address',
      });
    });
    it('refuses the cloud metadata address even when private targets are allowed', async () => {
      const resolve = async () => ['169.254.169.254'];
      const record = await firstAttemptTo(TARGET, { WEBHOOK_ALLOW_PRIVATE_URLS: true }, { resolve });
      expect(record.failure_reason).to.equal('refused: URL host resolves to a cloud metadata endpoint');
    });
    it('does not call localhost once WEBHOOK_ALLOW_LOCALHOST is off, even a URL configured before', async () => {
      const endpoint = await receiver();
      const record = await firstAttemptTo(endpoint.url, { WEBHOOK_ALLOW_LOCALHOST: false });
      expect(record).to.include({
        status: 'FAILED',
        response_status: 0,
        failure_reason: 'refused: URL must use https',
      });
      expect(endpoint.received).to.have.length(0);
    });
    it('does not call a host that does not resolve (DNS failure)', async () => {
      const resolve = async (): Promise<string[]> => {
        throw Object.assign(new Error('queryA ENOTFOUND'), { code: 'ENOTFOUND' });
      };
      const record = await firstAttemptTo(TARGET, {}, { resolve });
      expect(record).to.include({ status: 'FAILED', failure_reason: 'DNS: host does not resolve' });
    });
  });

  describe('GET /v1/webhooks/deliveries', () => {
    let merchant: Merchant;
    before(async () => {
      merchant = await payoutReadyMerchant();
      const endpoint = await startReceiver();
      try {
        await configureWebhook(merchant, endpoint.url);
        for (let i = 0; i < 3; i++) await createPayout(merchant);
        await deliverFor([merchant]);
      } finally {
        await endpoint.close();
      }
    });

    it('pages newest first with an opaque cursor until has_more is false', async () => {
      const seen: string[] = [];
      let cursor: string | null = null;
      for (let page = 0; page < 5; page++) {
        const query: string = cursor ? `?limit=2&cursor=${encodeURIComponent(cursor)}` : '?limit=2';
        const res = await call('GET', `/v1/webhooks/deliveries${query}`, { key: merchant.key });
        expect(res.status, res.text).to.equal(200);
        expect(res.body.meta.limit).to.equal(2);
        seen.push(...res.body.data.map((r: { id: string }) => r.id));
        if (!res.body.meta.has_more) break;
        cursor = res.body.meta.next_cursor;
      }
      expect(seen).to.have.length(3);
      expect(new Set(seen).size).to.equal(3);
      const all = await deliveryLog(merchant);
      expect(all.map((r) => r.id)).to.deep.equal(seen);
      const times = all.map((r) => r.created_at);
      expect([...times].sort().reverse()).to.deep.equal(times);
    });

    it('shows a tenant only its own records', async () => {
      const other = await createMerchant();
      expect(await deliveryLog(other)).to.deep.equal([]);
    });

    it('refuses a limit out of range and a forged cursor', async () => {
      const tooBig = await call('GET', '/v1/webhooks/deliveries?limit=101', { key: merchant.key });
      expect(tooBig.status).to.equal(400);
      const forged = await call('GET', '/v1/webhooks/deliveries?cursor=abc.def', { key: merchant.key });
      expect(forged.status).to.equal(400);
      expect(errorOf(forged).code).to.equal('INVALID_CURSOR');
    });
  });
});
