import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  configureWebhook,
  createPayout,
  deliverFor,
  deliveryLog,
  type Receiver,
  startReceiver,
} from './receiver.ts';

/** Polls a condition every few milliseconds (the pass under test runs meanwhile); fails after `ms`. */
async function until(condition: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = performance.now() + ms;
  while (!condition()) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

describe('webhook delivery fairness across tenants', () => {
  const receivers: Receiver[] = [];
  after(async () => {
    await Promise.all(receivers.map((r) => r.close()));
  });

  it("a receiver that hangs holds only its own slots: another tenant's deliveries, even new ones, go through meanwhile", async () => {
    const slow = await payoutReadyMerchant();
    const fast = await payoutReadyMerchant();
    const hanging = await startReceiver(() => 'hold');
    const answering = await startReceiver();
    receivers.push(answering);
    await configureWebhook(slow, hanging.url);
    await configureWebhook(fast, answering.url);
    // The hanging tenant's backlog is older, so it comes first in due order.
    for (let i = 0; i < 4; i++) await createPayout(slow);
    for (let i = 0; i < 3; i++) await createPayout(fast);

    const pass = deliverFor([slow, fast], {
      // Far beyond this test's duration: everything below happens while the hanging attempts hang.
      WEBHOOK_TIMEOUT_MS: 20_000,
      WEBHOOK_CONCURRENCY: 3,
      WEBHOOK_CONCURRENCY_PER_TARGET: 2,
      WORKER_POLL_INTERVAL_MS: 20,
    });

    // Two of the hanging tenant's attempts are in flight (its limit); the third slot serves the other.
    await until(() => answering.received.length === 3, 10_000, 'the answering tenant');
    // A new event of the answering tenant, raised while the others still hang, goes out too.
    await createPayout(fast);
    await until(() => answering.received.length === 4, 10_000, 'the new event');
    expect(hanging.received, 'only two attempts to the hanging receiver').to.have.length(2);
    expect(
      hanging.received.every((r) => r.droppedAt === undefined),
      'both still hanging',
    ).to.equal(true);
    expect(hanging.maxConcurrent).to.equal(2);

    // The hanging receiver goes away: its two attempts fail, the rest of its backlog is refused.
    await hanging.close();
    const summary = await pass;
    expect(summary.succeeded).to.equal(4);
    // The rest of the hanging tenant's backlog goes out in this pass, or (on a loaded machine,
    // when the pass ends as its last attempts settle) in the next one: either way, once each.
    const rest = summary.attempted < 8 ? await deliverFor([slow], { WEBHOOK_TIMEOUT_MS: 5_000 }) : null;
    expect(summary.attempted + (rest?.attempted ?? 0)).to.equal(8);
    expect(summary.failed + (rest?.failed ?? 0)).to.equal(4);
    const slowLog = await deliveryLog(slow);
    expect(slowLog.map((r) => r.failure_reason).sort()).to.deep.equal([
      'connection refused',
      'connection refused',
      'connection reset by the receiver',
      'connection reset by the receiver',
    ]);
    expect((await deliveryLog(fast)).map((r) => r.status)).to.deep.equal(new Array(4).fill('SUCCESS'));
  });

  it('reuses connections to a receiver (keep-alive)', async () => {
    const merchant = await payoutReadyMerchant();
    const sockets = new Set<unknown>();
    const endpoint = await startReceiver(() => (res) => {
      sockets.add(res.req.socket);
      res.writeHead(200);
      res.end();
    });
    receivers.push(endpoint);
    await configureWebhook(merchant, endpoint.url);
    for (let i = 0; i < 4; i++) await createPayout(merchant);
    await deliverFor([merchant], { WEBHOOK_CONCURRENCY_PER_TARGET: 1 });
    expect(endpoint.received).to.have.length(4);
    expect(sockets.size).to.equal(1);
  });
});
