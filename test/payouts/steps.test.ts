import { expect } from 'chai';
import { OutboxEvent } from '#src/events/entities.ts';
import { Task } from '#src/jobs/entities.ts';
import { toDecimal } from '#src/lib/money.ts';
import { applyPayoutSteps } from '#src/payouts/lifecycle.ts';
import { lockPayouts } from '#src/payouts/resource.ts';
import { call, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from './fixtures.ts';

/**
 * The batch form of the payout lifecycle, as the workers use it: the same machine and the same
 * rows (status, timeline, outbox payload, tasks) as one event at a time, for many payouts at once.
 */
describe('payout steps in batches', () => {
  let merchant: Merchant;
  const create = async () =>
    (await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout() })).body.id as string;
  const sql = () => harness().service.deps.sql;

  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  it('moves every payout of the batch through its machine with its timeline row, event and payload', async () => {
    const ids = [await create(), await create()];
    const now = harness().clock.now();
    const outcomes = await sql().transaction(async (tx) => {
      const payouts = await lockPayouts(tx, ids);
      return applyPayoutSteps(
        tx,
        payouts.map((payout) => ({
          payout,
          event: {
            type: 'INSTRUCTION_GENERATION_FAILED' as const,
            failureReason: 'corridor closed',
            triggeredBy: 'SYSTEM' as const,
            now,
          },
          note: { reasonDetail: { reason: 'corridor closed' } },
          set: { exchangeRate: toDecimal('1.5') },
        })),
      );
    });
    expect(outcomes.map((o) => [o.from, o.to, o.taken])).to.deep.equal([
      ['CREATED', 'FAILED', true],
      ['CREATED', 'FAILED', true],
    ]);
    const em = harness().service.deps.orm.em.fork();
    for (const id of ids) {
      const read = await call('GET', `/v1/payouts/${id}`, { key: merchant.key });
      expect(read.body.status).to.equal('FAILED');
      expect(read.body.exchange_rate).to.equal(1.5);
      expect(read.body.status_timeline.map((t: { reason_code: string }) => t.reason_code)).to.deep.equal([
        'PAYOUT_CREATED',
        'INSTRUCTION_GENERATION_FAILED',
      ]);
      expect(read.body.status_timeline[1].reason_detail).to.deep.equal({ reason: 'corridor closed' });
      const events = await em.find(
        OutboxEvent,
        { payoutId: id },
        { orderBy: { createdAt: 'asc', id: 'asc' } },
      );
      expect(events.map((e) => e.eventType)).to.deep.equal(['payout.created', 'payout.failed']);
      const payload = JSON.parse(events[1]!.payload) as Record<string, unknown>;
      expect(payload).to.include({ event_id: events[1]!.id, event_type: 'payout.failed', status: 'FAILED' });
      // The payload is the payout exactly as a read shows it after the transaction.
      expect(payload.data).to.deep.equal({ object: 'payout', ...read.body });
    }
  });

  it('writes nothing for an event the machine ignores', async () => {
    const id = await create();
    const now = harness().clock.now();
    const [outcome] = await sql().transaction(async (tx) => {
      const [payout] = await lockPayouts(tx, [id]);
      return applyPayoutSteps(tx, [
        { payout: payout!, event: { type: 'PROCESSOR_SUCCEEDED', triggeredBy: 'SYSTEM', now } },
      ]);
    });
    expect(outcome).to.include({ from: 'CREATED', to: 'CREATED', taken: false });
    const read = await call('GET', `/v1/payouts/${id}`, { key: merchant.key });
    expect(read.body.status_timeline).to.have.length(1);
  });

  it('makes the tasks a transition asks for due, once per payout', async () => {
    const id = await create();
    const em = harness().service.deps.orm.em.fork();
    const before = await em.count(Task, { subjectId: id });
    const now = harness().clock.now();
    await sql().transaction(async (tx) => {
      const [payout] = await lockPayouts(tx, [id]);
      await applyPayoutSteps(tx, [
        { payout: payout!, event: { type: 'INSTRUCTION_GENERATED', triggeredBy: 'SYSTEM', now } },
      ]);
    });
    // INSTRUCTION_GENERATED schedules nothing: the task count stays.
    expect(await em.count(Task, { subjectId: id })).to.equal(before);
  });

  it('refuses a payout twice in one batch', async () => {
    const id = await create();
    const now = harness().clock.now();
    const error = await sql()
      .transaction(async (tx) => {
        const [payout] = await lockPayouts(tx, [id]);
        const event = { type: 'INSTRUCTION_GENERATED' as const, triggeredBy: 'SYSTEM' as const, now };
        await applyPayoutSteps(tx, [
          { payout: payout!, event },
          { payout: payout!, event },
        ]);
      })
      .then(
        () => null,
        (err: unknown) => err as Error,
      );
    expect(error?.message).to.match(/appears twice/);
  });
});
