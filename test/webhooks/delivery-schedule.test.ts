import { expect } from 'chai';
import { ABANDONED_REASON } from '#machines/webhook-delivery.machine.ts';
import { run } from '#src/cli/admin.ts';
import { WebhookDelivery } from '#src/webhooks/delivery.entities.ts';
import { claimDueDeliveries, publishEvents, recordAttemptResults } from '#src/webhooks/delivery.service.ts';
import type { Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  configureWebhook,
  createPayout,
  deliverFor,
  deliveryLog,
  type Received,
  type Receiver,
  startReceiver,
} from './receiver.ts';

const DAY = 24 * 60 * 60 * 1000;

const backoff = () => harness().service.deps.config.WEBHOOK_BACKOFF_BASE_MS;

async function jobOf(payoutId: string): Promise<WebhookDelivery> {
  return harness().service.deps.orm.em.fork().findOneOrFail(WebhookDelivery, { payoutId });
}

describe('webhook delivery schedule (fake clock)', () => {
  let endpoint: Receiver;
  afterEach(async () => {
    await endpoint?.close();
  });

  it('retries after base·2^(n-2): 10 s, 20 s, 40 s, 80 s; the fifth failure is DEAD and never retried', async () => {
    const merchant = await payoutReadyMerchant();
    endpoint = await startReceiver(() => 503);
    await configureWebhook(merchant, endpoint.url);
    const payoutId = await createPayout(merchant);
    const base = backoff();
    expect(base).to.equal(10_000);

    const start = harness().clock.now().getTime();
    await deliverFor([merchant]);
    expect(endpoint.received).to.have.length(1);

    for (const [attempt, wait] of [
      [2, 10_000],
      [3, 20_000],
      [4, 40_000],
      [5, 80_000],
    ] as const) {
      harness().clock.advance(wait - 1);
      expect(await deliverFor([merchant]), `attempt ${attempt} is not due 1 ms early`).to.include({
        attempted: 0,
      });
      expect(endpoint.received).to.have.length(attempt - 1);
      harness().clock.advance(1);
      expect(await deliverFor([merchant]), `attempt ${attempt} is due after ${wait} ms`).to.include({
        attempted: 1,
      });
      expect(endpoint.received).to.have.length(attempt);
    }

    harness().clock.advance(DAY);
    expect(await deliverFor([merchant])).to.include({ attempted: 0 });
    expect(endpoint.received).to.have.length(5);

    const deliveryIds = new Set(endpoint.received.map((r: Received) => r.headers['x-service-delivery']));
    expect(deliveryIds.size).to.equal(1);
    const eventIds = new Set(endpoint.received.map((r) => JSON.parse(r.body.toString('utf8')).event_id));
    expect(eventIds.size).to.equal(1);

    const log = (await deliveryLog(merchant)).reverse();
    expect(log.map((r) => [r.attempt_number, r.status, r.response_status, r.failure_reason])).to.deep.equal([
      [1, 'FAILED', 503, 'HTTP 503'],
      [2, 'FAILED', 503, 'HTTP 503'],
      [3, 'FAILED', 503, 'HTTP 503'],
      [4, 'FAILED', 503, 'HTTP 503'],
      [5, 'DEAD', 503, 'HTTP 503'],
    ]);
    expect(log.map((r) => Date.parse(r.created_at) - start)).to.deep.equal([
      0, 10_000, 30_000, 70_000, 150_000,
    ]);

    const job = await jobOf(payoutId);
    expect(job.status).to.equal('DEAD');
    expect(job.attempts).to.equal(5);
    expect(job.dueAt).to.equal(null);
  });

  it('lists DEAD deliveries for operators (admin procedure and CLI)', async () => {
    const merchant = await payoutReadyMerchant();
    endpoint = await startReceiver(() => 500);
    await configureWebhook(merchant, endpoint.url);
    const payoutId = await createPayout(merchant);
    await deliverFor([merchant]);
    for (let n = 2; n <= 5; n++) {
      harness().clock.advance(backoff() * 2 ** (n - 2));
      await deliverFor([merchant]);
    }
    const job = await jobOf(payoutId);
    const env = { serviceUrl: harness().url, token: harness().adminToken };
    const listed = (await run(['webhooks', 'dead', '--tenant', merchant.tenantId], env)) as {
      data: Record<string, unknown>[];
      meta: { has_more: boolean };
    };
    expect(listed.meta.has_more).to.equal(false);
    expect(listed.data).to.have.length(1);
    expect(listed.data[0]).to.include({
      delivery_id: job.id,
      tenant_id: merchant.tenantId,
      payout_id: payoutId,
      event_type: 'payout.created',
      target_url: endpoint.url,
      attempts: 5,
      last_response_status: 500,
      last_failure_reason: 'HTTP 500',
    });

    const everyone = (await run(['webhooks', 'dead', '--limit', '100'], env)) as {
      data: { delivery_id: string }[];
    };
    expect(everyone.data.map((d) => d.delivery_id)).to.include(job.id);
    const unknownTenant = (await run(['webhooks', 'dead', '--tenant', crypto.randomUUID()], env)) as {
      data: unknown[];
    };
    expect(unknownTenant.data).to.deep.equal([]);
  });

  describe('crash safety', () => {
    it('a restart finds the started attempt by its lease: interrupted, retried, same event_id and delivery id', async () => {
      const merchant = await payoutReadyMerchant();
      endpoint = await startReceiver();
      await configureWebhook(merchant, endpoint.url);
      const payoutId = await createPayout(merchant);
      const deps = harness().service.deps;
      const config = deps.config;
      const leaseMs = config.WEBHOOK_TIMEOUT_MS + 30_000;

      // A pass that dies right after committing ATTEMPTING: publish and claim, send nothing.
      await publishEvents(deps.sql, {
        now: harness().clock.now(),
        limit: 10,
        tenantIds: [merchant.tenantId],
      });
      const claimed = await claimDueDeliveries(deps.sql, deps, {
        now: harness().clock.now(),
        slots: 1,
        perTarget: 1,
        leaseMs,
        backoffBaseMs: config.WEBHOOK_BACKOFF_BASE_MS,
        tenantIds: [merchant.tenantId],
      });
      expect(claimed.started).to.have.length(1);
      const deliveryId = claimed.started[0]?.deliveryId;
      expect((await jobOf(payoutId)).status).to.equal('ATTEMPTING');

      // Before the lease runs out nobody touches it (the attempt might still be answered).
      harness().clock.advance(leaseMs - 1);
      expect(await deliverFor([merchant])).to.include({ attempted: 0, abandoned: 0 });

      // The lease is over: recorded as an interrupted attempt, the retry scheduled after the backoff.
      harness().clock.advance(1);
      expect(await deliverFor([merchant])).to.include({ attempted: 0, abandoned: 1 });
      expect(endpoint.received).to.have.length(0);
      let log = await deliveryLog(merchant);
      expect(log[0]).to.include({
        attempt_number: 1,
        status: 'FAILED',
        response_status: 0,
        failure_reason: ABANDONED_REASON,
      });

      harness().clock.advance(backoff());
      expect(await deliverFor([merchant])).to.include({ attempted: 1, succeeded: 1 });
      const [request] = endpoint.received as [Received];
      expect(request.headers['x-service-delivery']).to.equal(deliveryId);
      expect(JSON.parse(request.body.toString('utf8')).event_id).to.equal(log[0].event_id);
      log = await deliveryLog(merchant);
      expect(log.map((r) => [r.attempt_number, r.status])).to.deep.equal([
        [2, 'SUCCESS'],
        [1, 'FAILED'],
      ]);
    });

    it("keeps each receiver's count of attempts in flight through claims, lapses and outcomes, and the recount agrees", async () => {
      const merchant = await payoutReadyMerchant();
      endpoint = await startReceiver();
      await configureWebhook(merchant, endpoint.url);
      for (let i = 0; i < 3; i++) await createPayout(merchant);
      const deps = harness().service.deps;
      const db = deps.orm.em.getConnection();
      const origin = new URL(endpoint.url).origin;
      const inFlight = async () =>
        (
          await db.execute<{ attempting: number }[]>(
            'select attempting from webhook_origins_in_flight where target_origin = ?',
            [origin],
          )
        )[0]?.attempting ?? 0;
      const attempting = async () =>
        Number(
          (
            await db.execute<{ n: string }[]>(
              `select count(*) as n from webhook_deliveries where target_origin = ? and status = 'ATTEMPTING'`,
              [origin],
            )
          )[0]!.n,
        );
      const leaseMs = deps.config.WEBHOOK_TIMEOUT_MS + 30_000;
      const claim = () =>
        claimDueDeliveries(deps.sql, deps, {
          now: harness().clock.now(),
          slots: 3,
          perTarget: 2,
          leaseMs,
          backoffBaseMs: deps.config.WEBHOOK_BACKOFF_BASE_MS,
          tenantIds: [merchant.tenantId],
        });
      await publishEvents(deps.sql, {
        now: harness().clock.now(),
        limit: 10,
        tenantIds: [merchant.tenantId],
      });

      // Two of three start (the receiver's limit); the count holds them, so the next round starts none.
      expect((await claim()).started).to.have.length(2);
      expect(await inFlight()).to.equal(2);
      expect(await claim())
        .to.include({ abandoned: 0 })
        .and.nested.include({ 'started.length': 0 });

      // Their lease runs out: the round that abandons them starts the third in the places they held.
      harness().clock.advance(leaseMs);
      const round = await claim();
      expect(round).to.include({ abandoned: 2 });
      expect(round.started).to.have.length(1);
      expect(await inFlight()).to.equal(1);
      expect(await attempting()).to.equal(1);

      // Its outcome frees its place.
      const settled = await recordAttemptResults(
        deps.sql,
        [
          {
            attempt: round.started[0]!,
            result: { ok: true, responseStatus: 204, failureReason: null, durationMs: 1 },
          },
        ],
        { backoffBaseMs: deps.config.WEBHOOK_BACKOFF_BASE_MS, now: harness().clock.now() },
      );
      expect(settled).to.deep.equal(['SUCCEEDED']);
      expect(await inFlight()).to.equal(0);

      // The recount (after a dropped partition) sets the count from the deliveries, whatever it says.
      expect((await claim()).started).to.have.length(0);
      harness().clock.advance(backoff());
      expect((await claim()).started).to.have.length(2);
      await db.execute('update webhook_origins_in_flight set attempting = 7 where target_origin = ?', [
        origin,
      ]);
      await db.execute('select webhook_origins_recount()');
      expect(await inFlight()).to.equal(2);
      expect(await attempting()).to.equal(2);
    });

    it('an event committed while no worker runs is delivered by the next pass (due work is rows)', async () => {
      const merchant: Merchant = await payoutReadyMerchant();
      endpoint = await startReceiver();
      await configureWebhook(merchant, endpoint.url);
      await createPayout(merchant);
      harness().clock.advance(DAY);
      expect(await deliverFor([merchant])).to.include({ published: 1, attempted: 1, succeeded: 1 });
    });
  });
});
