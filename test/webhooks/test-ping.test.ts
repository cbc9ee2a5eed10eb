import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { verifyWebhook } from '#src/client/verifier.ts';
import { OutboxEvent } from '#src/events/entities.ts';
import { unixSeconds } from '#src/webhooks/signature.ts';
import { call, createMerchant, errorOf } from '../client.ts';
import { harness } from '../harness.ts';
import { configureWebhook, deliverFor, deliveryLog, receiversClosedAfterEach } from './receiver.ts';

const ping = (key: string, idempotencyKey?: string | null) =>
  call('POST', '/v1/webhooks/config/test', { key, idempotencyKey });

async function testEventsOf(tenantId: string): Promise<OutboxEvent[]> {
  return harness()
    .service.deps.orm.em.fork()
    .find(OutboxEvent, { tenant: tenantId, eventType: 'webhook.test' });
}

describe('POST /v1/webhooks/config/test (a test ping)', () => {
  const receiver = receiversClosedAfterEach();

  it('sends a signed webhook.test event to the configured URL, recorded like any delivery', async () => {
    const merchant = await createMerchant();
    const endpoint = await receiver();
    const secret = await configureWebhook(merchant, endpoint.url);

    const res = await ping(merchant.key);
    expect(res.status, res.text).to.equal(201);
    expect(Object.keys(res.body)).to.deep.equal(['event_id', 'event_type', 'created_at', 'webhook_url']);
    expect(res.body).to.include({
      event_type: 'webhook.test',
      created_at: harness().clock.now().toISOString(),
      webhook_url: endpoint.url,
    });

    expect(await deliverFor([merchant])).to.include({ published: 1, attempted: 1, succeeded: 1 });
    expect(endpoint.received).to.have.length(1);
    const [request] = endpoint.received;
    expect(request!.headers['x-service-event']).to.equal('webhook.test');
    const body = JSON.parse(request!.body.toString('utf8'));
    expect(Object.keys(body)).to.deep.equal(['event_id', 'event_type', 'created_at', 'data']);
    expect(body).to.deep.equal({
      event_id: res.body.event_id,
      event_type: 'webhook.test',
      created_at: res.body.created_at,
      data: { object: 'webhook_test' },
    });
    const verified = verifyWebhook({
      rawBody: request!.body,
      signatureHeader: request!.headers['x-service-signature'],
      timestampHeader: request!.headers['x-service-timestamp'],
      secret,
      now: unixSeconds(harness().clock.now()),
    });
    expect(verified.ok).to.equal(true);

    const log = await deliveryLog(merchant);
    expect(log).to.have.length(1);
    expect(log[0]).to.include({
      event_id: res.body.event_id,
      event_type: 'webhook.test',
      payout_id: null,
      attempt_number: 1,
      target_url: endpoint.url,
      status: 'SUCCESS',
      response_status: 200,
    });
    const filtered = await call('GET', '/v1/webhooks/deliveries?event_type=webhook.test', {
      key: merchant.key,
    });
    expect(filtered.body.data.map((r: { event_id: string }) => r.event_id)).to.deep.equal([
      res.body.event_id,
    ]);
  });

  it('is retried like any delivery when the endpoint fails', async () => {
    const merchant = await createMerchant();
    const endpoint = await receiver(() => 503);
    await configureWebhook(merchant, endpoint.url);
    expect((await ping(merchant.key)).status).to.equal(201);
    await deliverFor([merchant]);
    harness().clock.advance(harness().service.deps.config.WEBHOOK_BACKOFF_BASE_MS);
    await deliverFor([merchant]);
    const log = await deliveryLog(merchant);
    expect(log.map((r) => [r.event_type, r.attempt_number, r.status, r.failure_reason])).to.deep.equal([
      ['webhook.test', 2, 'FAILED', 'HTTP 503'],
      ['webhook.test', 1, 'FAILED', 'HTTP 503'],
    ]);
  });

  it('sends one event per Idempotency-Key: a repeat replays the first response', async () => {
    const merchant = await createMerchant();
    await configureWebhook(merchant, (await receiver()).url);
    const key = randomUUID();
    const first = await ping(merchant.key, key);
    const again = await ping(merchant.key, key);
    expect(again.status).to.equal(201);
    expect(again.headers.get('idempotent-replayed')).to.equal('true');
    expect(again.body).to.deep.equal(first.body);
    expect(await testEventsOf(merchant.tenantId)).to.have.length(1);
    const other = await ping(merchant.key);
    expect(other.body.event_id).to.not.equal(first.body.event_id);
    expect(await testEventsOf(merchant.tenantId)).to.have.length(2);
  });

  it('refuses a tenant without a webhook URL with WEBHOOK_URL_NOT_SET, and sends nothing', async () => {
    const merchant = await createMerchant();
    const res = await ping(merchant.key);
    expect(res.status).to.equal(409);
    const error = errorOf(res);
    expect(error.code).to.equal('WEBHOOK_URL_NOT_SET');
    expect(error.details).to.deep.equal([
      { field: 'webhook_url', issue: 'is not set: PUT /v1/webhooks/config first' },
    ]);

    // A secret without a URL (rotate-secret first) is no URL either.
    await call('POST', '/v1/webhooks/config/rotate-secret', { key: merchant.key });
    expect(errorOf(await ping(merchant.key)).code).to.equal('WEBHOOK_URL_NOT_SET');
    expect(await testEventsOf(merchant.tenantId)).to.deep.equal([]);
  });

  it('needs the scope webhooks:manage and an Idempotency-Key', async () => {
    const reader = await createMerchant({ scopes: ['webhooks:read'] });
    expect(errorOf(await ping(reader.key)).code).to.equal('INSUFFICIENT_SCOPES');
    const merchant = await createMerchant();
    await configureWebhook(merchant, (await receiver()).url);
    expect(errorOf(await ping(merchant.key, null)).code).to.equal('IDEMPOTENCY_KEY_REQUIRED');
    expect(await testEventsOf(merchant.tenantId)).to.deep.equal([]);
  });
});
