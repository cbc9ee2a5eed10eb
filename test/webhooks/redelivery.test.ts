import { expect } from 'chai';
import { AuditEntry } from '#src/audit/entities.ts';
import { verifyWebhook } from '#src/client/verifier.ts';
import { WebhookDelivery } from '#src/webhooks/delivery.entities.ts';
import { unixSeconds } from '#src/webhooks/signature.ts';
import type { Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { cliAs, operatorWith, trpcCall } from '../operators/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  configureWebhook,
  createPayout,
  deliverFor,
  deliveryLog,
  type Received,
  receiversClosedAfterEach,
  runAllAttempts as runAllAttemptsOf,
} from './receiver.ts';

const runAllAttempts = (merchant: Merchant) => runAllAttemptsOf([merchant]);

async function jobsOf(merchant: Merchant): Promise<WebhookDelivery[]> {
  return harness()
    .service.deps.orm.em.fork()
    .find(WebhookDelivery, { tenant: merchant.tenantId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

const bodyOf = (request: Received) => JSON.parse(request.body.toString('utf8'));

describe('redelivery of DEAD webhook deliveries (admin.webhooks.redeliver)', () => {
  const receiver = receiversClosedAfterEach();

  /** A merchant whose endpoint fails everything, with one payout whose payout.created went DEAD. */
  async function deadDelivery() {
    const merchant = await payoutReadyMerchant();
    let answer = 500;
    const endpoint = await receiver(() => answer);
    const secret = await configureWebhook(merchant, endpoint.url);
    const payoutId = await createPayout(merchant);
    await runAllAttempts(merchant);
    const [dead] = await jobsOf(merchant);
    expect(dead?.status).to.equal('DEAD');
    return {
      merchant,
      endpoint,
      secret,
      payoutId,
      dead: dead!,
      heal: () => {
        answer = 200;
      },
    };
  }

  it('sends the DEAD delivery again as a new delivery of the same event, freshly signed, with its own records; the DEAD one stays DEAD', async () => {
    const { merchant, endpoint, secret, payoutId, dead, heal } = await deadDelivery();
    const operator = await operatorWith('operator');
    heal();
    harness().clock.advance(60_000);

    const out = await cliAs(operator)('webhooks', 'redeliver', dead.id);
    expect(out.has_more).to.equal(false);
    expect(out.redelivered).to.have.length(1);
    const [redelivery] = out.redelivered;
    expect(redelivery).to.include({
      redelivery_of: dead.id,
      tenant_id: merchant.tenantId,
      event_id: dead.event.id,
      event_type: 'payout.created',
      payout_id: payoutId,
      target_url: endpoint.url,
      status: 'PENDING',
      created: true,
    });
    expect(redelivery.delivery_id).to.not.equal(dead.id);

    expect(await deliverFor([merchant])).to.include({ attempted: 1, succeeded: 1 });
    const sent = endpoint.received.at(-1)!;
    expect(endpoint.received).to.have.length(6);
    expect(sent.headers['x-service-delivery']).to.equal(redelivery.delivery_id);
    expect(bodyOf(sent).event_id).to.equal(dead.event.id);
    expect(sent.body.equals(endpoint.received[0]!.body), 'the same payload, byte for byte').to.equal(true);
    // Signed now, not replayed: the timestamp is the redelivery's, and the signature verifies at it.
    expect(sent.headers['x-service-timestamp']).to.equal(String(unixSeconds(harness().clock.now())));
    expect(sent.headers['x-service-signature']).to.not.equal(
      endpoint.received[4]!.headers['x-service-signature'],
    );
    const check = verifyWebhook({
      rawBody: sent.body,
      signatureHeader: sent.headers['x-service-signature'],
      timestampHeader: sent.headers['x-service-timestamp'],
      secret,
      now: unixSeconds(harness().clock.now()),
    });
    expect(check.ok).to.equal(true);

    const log = await deliveryLog(merchant);
    expect(log.map((r) => [r.attempt_number, r.status, r.event_id])).to.deep.equal([
      [1, 'SUCCESS', dead.event.id],
      [5, 'DEAD', dead.event.id],
      [4, 'FAILED', dead.event.id],
      [3, 'FAILED', dead.event.id],
      [2, 'FAILED', dead.event.id],
      [1, 'FAILED', dead.event.id],
    ]);
    const jobs = await jobsOf(merchant);
    expect(jobs.map((j) => [j.id, j.status])).to.deep.equal([
      [dead.id, 'DEAD'],
      [redelivery.delivery_id, 'SUCCEEDED'],
    ]);
    expect(jobs[1]!.redeliveryOf).to.equal(dead.id);

    // Audited in the transaction of the change: who, what, and the deliveries concerned.
    const [audit] = await harness()
      .service.deps.orm.em.fork()
      .find(AuditEntry, { action: 'admin.webhooks.redeliver', targetIds: { $contains: [dead.id] } });
    expect(audit).to.include({ operatorId: operator.id, outcome: 'OK' });
    expect(audit!.targetIds).to.include.members([redelivery.delivery_id, dead.event.id]);
    expect(audit!.arguments).to.deep.equal({ delivery_id: dead.id });
  });

  it('gives a redelivery five attempts of its own; once it is DEAD too, the event can be sent again', async () => {
    const { merchant, endpoint, dead } = await deadDelivery();
    const cli = cliAs(await operatorWith('operator'));
    const first = (await cli('webhooks', 'redeliver', dead.id)).redelivered[0];
    await runAllAttempts(merchant);
    expect(endpoint.received).to.have.length(10);
    const log = await deliveryLog(merchant);
    expect(log.slice(0, 5).map((r) => [r.attempt_number, r.status])).to.deep.equal([
      [5, 'DEAD'],
      [4, 'FAILED'],
      [3, 'FAILED'],
      [2, 'FAILED'],
      [1, 'FAILED'],
    ]);
    expect(new Set(endpoint.received.slice(5).map((r) => r.headers['x-service-delivery']))).to.deep.equal(
      new Set([first.delivery_id]),
    );

    // The DEAD redelivery may itself be sent again, and so may the original, but not both at once.
    const again = (await cli('webhooks', 'redeliver', first.delivery_id)).redelivered[0];
    expect(again).to.include({ redelivery_of: first.delivery_id, created: true, event_id: dead.event.id });
    const original = (await cli('webhooks', 'redeliver', dead.id)).redelivered[0];
    expect(original).to.include({ delivery_id: again.delivery_id, created: false });
  });

  it('makes one redelivery of concurrent requests for the same DEAD delivery while it is open', async () => {
    const { merchant, dead } = await deadDelivery();
    const operator = await operatorWith('operator');
    const results = await Promise.all(
      Array.from({ length: 8 }, () =>
        trpcCall('admin.webhooks.redeliver', 'mutation', { delivery_id: dead.id }, operator.token),
      ),
    );
    for (const r of results) expect(r.status, JSON.stringify(r.body)).to.equal(200);
    const redeliveries = results.map((r) => r.body.result.data.redelivered[0]);
    expect(new Set(redeliveries.map((r) => r.delivery_id)).size).to.equal(1);
    expect(redeliveries.filter((r) => r.created)).to.have.length(1);
    expect(await jobsOf(merchant)).to.have.length(2);

    // Later, still open: the same one again.
    const later = (await cliAs(operator)('webhooks', 'redeliver', dead.id)).redelivered[0];
    expect(later).to.include({ delivery_id: redeliveries[0].delivery_id, created: false });
    expect(await jobsOf(merchant)).to.have.length(2);
  });

  it('sends nothing again for a DEAD delivery already redelivered successfully, like "recover since", and audits nothing', async () => {
    const { merchant, endpoint, dead, heal } = await deadDelivery();
    const operator = await operatorWith('operator');
    heal();
    const first = (await cliAs(operator)('webhooks', 'redeliver', dead.id)).redelivered[0];
    expect(await deliverFor([merchant])).to.include({ succeeded: 1 });
    const sent = endpoint.received.length;

    const again = await cliAs(operator)('webhooks', 'redeliver', dead.id);
    expect(again.redelivered).to.have.length(1);
    expect(again.redelivered[0]).to.include({
      delivery_id: first.delivery_id,
      status: 'SUCCEEDED',
      created: false,
    });
    const since = await cliAs(operator)(
      'webhooks',
      'redeliver',
      '--tenant',
      merchant.tenantId,
      '--since',
      new Date(0).toISOString(),
    );
    expect(since.redelivered).to.deep.equal([]);
    await deliverFor([merchant]);
    expect(endpoint.received).to.have.length(sent);
    expect(await jobsOf(merchant)).to.have.length(2);
    const audits = await harness()
      .service.deps.orm.em.fork()
      .find(AuditEntry, { action: 'admin.webhooks.redeliver', targetIds: { $contains: [dead.id] } });
    expect(audits, 'only the call that redelivered').to.have.length(1);
  });

  it('sends the event once for 20 concurrent redeliveries of one DEAD delivery, while deliveries run', async () => {
    const { merchant, endpoint, dead, heal } = await deadDelivery();
    const operator = await operatorWith('operator');
    heal();
    const before = endpoint.received.length;
    // Two waves of 10 with deliveries running alongside: the second comes in after the first
    // wave's redelivery has succeeded.
    const wave = async () => {
      const calls = Array.from({ length: 10 }, () =>
        trpcCall('admin.webhooks.redeliver', 'mutation', { delivery_id: dead.id }, operator.token),
      );
      const delivering = (async () => {
        for (let i = 0; i < 3; i++) await deliverFor([merchant]);
      })();
      const results = await Promise.all(calls);
      await delivering;
      await deliverFor([merchant]);
      return results;
    };
    const results = [...(await wave()), ...(await wave())];
    for (const r of results) expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(results.filter((r) => r.body.result.data.redelivered[0].created)).to.have.length(1);
    expect(endpoint.received.length - before).to.equal(1);
    expect(await jobsOf(merchant)).to.have.length(2);
  });

  it('sends the event to where it would go now: the URL the merchant set since', async () => {
    const { merchant, dead, heal } = await deadDelivery();
    const moved = await receiver();
    await configureWebhook(merchant, moved.url);
    heal();
    const out = await cliAs()('webhooks', 'redeliver', dead.id);
    expect(out.redelivered[0].target_url).to.equal(moved.url);
    expect(await deliverFor([merchant])).to.include({ attempted: 1, succeeded: 1 });
    expect(moved.received).to.have.length(1);
    expect(bodyOf(moved.received[0]!).event_id).to.equal(dead.event.id);
  });

  it('refuses what is not a DEAD delivery, and a viewer', async () => {
    const { merchant, dead } = await deadDelivery();
    const operator = await operatorWith('operator');
    const open = (await cliAs(operator)('webhooks', 'redeliver', dead.id)).redelivered[0];

    const refused = async (input: unknown, token = operator.token) => {
      const res = await trpcCall('admin.webhooks.redeliver', 'mutation', input, token);
      return { status: res.status, code: res.body.error?.data?.app_code };
    };
    expect(await refused({ delivery_id: open.delivery_id })).to.deep.equal({
      status: 409,
      code: 'DELIVERY_NOT_DEAD',
    });
    expect(await refused({ delivery_id: crypto.randomUUID() })).to.deep.equal({
      status: 404,
      code: 'DELIVERY_NOT_FOUND',
    });
    expect(await refused({ delivery_id: dead.id }, (await operatorWith('viewer')).token)).to.deep.equal({
      status: 403,
      code: 'OPERATOR_ROLE_REQUIRED',
    });
    expect(await refused({ delivery_id: dead.id, tenant_id: merchant.tenantId })).to.include({
      status: 400,
    });
    expect(await jobsOf(merchant)).to.have.length(2);
  });

  it('recovers a tenant’s DEAD deliveries created since a time, each event once, and nothing twice', async () => {
    const merchant = await payoutReadyMerchant();
    const other = await payoutReadyMerchant();
    let answer = 500;
    const endpoint = await receiver(() => answer);
    await configureWebhook(merchant, endpoint.url);
    await configureWebhook(other, endpoint.url);

    // Three payouts, an hour apart, and one of another tenant: every delivery goes DEAD.
    const times: string[] = [];
    const payouts: string[] = [];
    for (let i = 0; i < 3; i++) {
      times.push(harness().clock.now().toISOString());
      payouts.push(await createPayout(merchant));
      await runAllAttempts(merchant);
      harness().clock.advance(60 * 60 * 1000);
    }
    await createPayout(other);
    await runAllAttempts(other);
    const dead = await jobsOf(merchant);
    expect(dead.map((j) => j.status)).to.deep.equal(['DEAD', 'DEAD', 'DEAD']);

    answer = 200;
    const cli = cliAs(await operatorWith('operator'));
    const since = times[1]!;
    const first = await cli('webhooks', 'redeliver', '--tenant', merchant.tenantId, '--since', since);
    expect(first.has_more).to.equal(false);
    expect(first.redelivered.map((r: { redelivery_of: string }) => r.redelivery_of)).to.deep.equal([
      dead[1]!.id,
      dead[2]!.id,
    ]);
    expect(first.redelivered.every((r: { created: boolean }) => r.created)).to.equal(true);

    // Asked again while they are open, and again once delivered: nothing more.
    const again = await cli('webhooks', 'redeliver', '--tenant', merchant.tenantId, '--since', since);
    expect(again.redelivered).to.deep.equal([]);
    expect(await deliverFor([merchant, other])).to.include({ attempted: 2, succeeded: 2 });
    const delivered = await cli('webhooks', 'redeliver', '--tenant', merchant.tenantId, '--since', since);
    expect(delivered.redelivered).to.deep.equal([]);
    expect(
      endpoint.received.slice(-2).map((r) => bodyOf(r).data.id),
      'the payouts of the range, oldest first',
    ).to.deep.equal([payouts[1], payouts[2]]);

    // A window with an end, one at a time: the first payout's event, and has_more says when to go on.
    const windowed = await trpcCall(
      'admin.webhooks.redeliver',
      'mutation',
      { tenant_id: merchant.tenantId, since: times[0], until: times[1], limit: 1 },
      harness().adminToken,
    );
    expect(windowed.body.result.data.has_more).to.equal(false);
    expect(
      windowed.body.result.data.redelivered.map((r: { redelivery_of: string }) => r.redelivery_of),
    ).to.deep.equal([dead[0]!.id]);
    expect((await jobsOf(other)).map((j) => j.status)).to.deep.equal(['DEAD']);
  });

  it('pages a large recovery: at most `limit` per call, has_more until the range is done', async () => {
    const merchant = await payoutReadyMerchant();
    const endpoint = await receiver(() => 500);
    await configureWebhook(merchant, endpoint.url);
    const since = harness().clock.now().toISOString();
    for (let i = 0; i < 3; i++) await createPayout(merchant);
    await runAllAttempts(merchant);
    const recover = () =>
      trpcCall(
        'admin.webhooks.redeliver',
        'mutation',
        { tenant_id: merchant.tenantId, since, limit: 2 },
        harness().adminToken,
      ).then((r) => r.body.result.data);
    const first = await recover();
    expect([first.redelivered.length, first.has_more]).to.deep.equal([2, true]);
    const second = await recover();
    expect([second.redelivered.length, second.has_more]).to.deep.equal([1, false]);
    const third = await recover();
    expect([third.redelivered.length, third.has_more]).to.deep.equal([0, false]);
  });

  it('checks the command line before sending anything', async () => {
    const cli = cliAs();
    const usage = async (...argv: string[]) => (await cli(...argv).catch((e: Error) => e)).message;
    expect(await usage('webhooks', 'redeliver')).to.equal('DELIVERY_ID or --tenant is required');
    expect(
      await usage('webhooks', 'redeliver', crypto.randomUUID(), '--tenant', crypto.randomUUID()),
    ).to.equal('give DELIVERY_ID or --tenant and --since, not both');
    expect(await usage('webhooks', 'redeliver', '--tenant', crypto.randomUUID())).to.equal(
      '--since ISO_TIME is required',
    );
    expect(
      await usage('webhooks', 'redeliver', '--tenant', crypto.randomUUID(), '--since', 'yesterday'),
    ).to.match(/^--since must be an ISO-8601 time/);
  });
});
