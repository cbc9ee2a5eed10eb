import { expect } from 'chai';
import { runDispatchOnce } from '#src/dispatch/job.ts';
import { Task } from '#src/jobs/entities.ts';
import { CALLBACK_SIGNATURE_HEADER, signCallback } from '#src/providers/callback-signature.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import type { ProcessorResult } from '#src/providers/rails.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { call, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  callbacksDelivered,
  deps,
  dispatch,
  eventTypesOf,
  forceCallback,
  outflowsOf,
  paidPayout,
  payoutOf,
  payoutTo,
  processorRecord,
  processorSettled,
  timelineOf,
  withSubmit,
} from './fixtures.ts';

describe('dispatch: paying the beneficiary through the processor', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  it('calls the processor once when a second dispatcher takes over while the first attempt is at the processor', async () => {
    const id = await paidPayout(merchant, payoutTo('5678'));
    const references: string[] = [];
    let tookOver = false;
    await withSubmit(
      (real) => async (args) => {
        references.push(args.reference);
        const answer = await real(args);
        // The processor has the transfer; before the first dispatcher records its answer, its
        // lease lapses and another dispatcher claims the task: it asks, and submits nothing.
        if (!tookOver && (await outflowsOf(merchant, id)).some((o) => o.id === args.reference)) {
          tookOver = true;
          harness().clock.advance(60_001);
          await runDispatchOnce(deps());
        }
        return answer;
      },
      async () => {
        await runDispatchOnce(deps());
      },
    );
    expect(tookOver).to.equal(true);
    const outflows = await outflowsOf(merchant, id);
    expect(outflows.map((o: { attempt_number: number }) => o.attempt_number)).to.deep.equal([1]);
    expect(references.filter((r) => r === outflows[0].id)).to.have.length(1);
    const record = await callbacksDelivered(outflows[0].id);
    expect(record).to.include({ submissions: 1, attempt: 1, status: 'SUCCESSFUL' });
    expect((await outflowsOf(merchant, id))[0]).to.include({ status: 'SUCCESSFUL', attempt_number: 1 });
    expect((await payoutOf(merchant, id)).status).to.equal('SUCCESSFUL');
  });

  it('pays once when a second dispatcher takes over before the first attempt reaches the processor', async () => {
    const id = await paidPayout(merchant, payoutTo('5678'));
    const references: string[] = [];
    let tookOver = false;
    await withSubmit(
      (real) => async (args) => {
        references.push(args.reference);
        // The pass may first send payouts other files left due: take over at this payout's own.
        if (!tookOver && (await outflowsOf(merchant, id)).some((o) => o.id === args.reference)) {
          tookOver = true;
          // The first dispatcher's call is on its way; its lease on the task lapses, and another
          // dispatcher claims the task, finds the processor without it, and submits it first.
          harness().clock.advance(60_001);
          await runDispatchOnce(deps());
        }
        return real(args);
      },
      async () => {
        await runDispatchOnce(deps());
      },
    );
    const outflows = await outflowsOf(merchant, id);
    // One attempt, submitted by both under its one reference: the processor pays it once.
    expect(outflows.map((o: { attempt_number: number }) => o.attempt_number)).to.deep.equal([1]);
    expect(references.filter((r) => r === outflows[0].id)).to.have.length(2);
    const record = await callbacksDelivered(outflows[0].id);
    expect(record).to.include({ submissions: 2, attempt: 1, status: 'SUCCESSFUL' });
    const [settled] = await outflowsOf(merchant, id);
    expect(settled).to.include({ status: 'SUCCESSFUL', attempt_number: 1 });
    expect((await payoutOf(merchant, id)).status).to.equal('SUCCESSFUL');
  });

  it('pays a payout: one outflow, accepted then successful by callback', async () => {
    const id = await paidPayout(merchant, payoutTo('5678'));
    const submits: { reference: string; result: ProcessorResult }[] = [];
    await withSubmit(
      (real) => async (args) => {
        const result = await real(args);
        submits.push({ reference: args.reference, result });
        return result;
      },
      async () => {
        await runDispatchOnce(deps());
      },
    );
    // The pass also sends whatever other tests left due: only this payout's submits count.
    const outflows = await outflowsOf(merchant, id);
    const answers = submits
      .filter((s) => outflows.some((o: { id: string }) => o.id === s.reference))
      .map((s) => s.result);
    expect(answers.map((a) => a.status)).to.deep.equal(['ACCEPTED']);
    const [accepted] = outflows;
    expect(accepted).to.include({
      id: answers[0]?.reference,
      payout_id: id,
      attempt_number: 1,
      destination_amount: 150000,
      destination_currency: 'NGN',
      processor: 'payout-processor',
      processor_reference: answers[0]?.processorReference,
      failure_code: null,
    });
    // The clock is the harness's manual one: the attempt is stamped with the moment of the pass.
    expect(accepted.dispatched_at).to.equal(harness().clock.now().toISOString());

    await callbacksDelivered(accepted.id);
    const [settled] = await outflowsOf(merchant, id);
    expect(settled).to.include({ id: accepted.id, status: 'SUCCESSFUL', attempt_number: 1 });
    expect(settled.settled_at).to.equal(harness().clock.now().toISOString());
    const one = await call('GET', `/v1/outflows/${accepted.id}`, { key: merchant.key });
    expect(one.body).to.deep.equal(settled);

    const payout = await payoutOf(merchant, id);
    expect(payout.status).to.equal('SUCCESSFUL');
    expect(payout.is_refunded).to.equal(false);
    // The acceptance is recorded by whichever arrives first: our submit's answer or the callback.
    const [received, dispatched, succeeded] = timelineOf(payout).slice(-3);
    expect(received).to.equal('PAYMENT_RECEIVED/SYSTEM');
    expect(dispatched).to.match(/^DISPATCHED\/(SYSTEM|PROCESSOR_WEBHOOK)$/);
    expect(succeeded).to.equal('PAYOUT_SUCCEEDED/PROCESSOR_WEBHOOK');
    expect((await eventTypesOf(id)).slice(-3)).to.deep.equal([
      'payout.payment_received',
      'payout.processing',
      'payout.successful',
    ]);
  });

  it('1001: the processor refuses the account as closed; the payout fails and its money is refunded', async () => {
    const id = await paidPayout(merchant, payoutTo('1001'));
    const [rejected] = await dispatch(merchant, id);
    expect(rejected).to.include({
      status: 'FAILED',
      attempt_number: 1,
      failure_code: 'ACCOUNT_CLOSED',
      dispatched_at: null,
    });
    expect(rejected.failure_reason).to.be.a('string').and.not.empty;
    const failed = await payoutOf(merchant, id);
    expect(failed.status).to.equal('FAILED');
    expect(timelineOf(failed).at(-1)).to.equal('ACCOUNT_CLOSED/SYSTEM');
    expect(failed.status_timeline.at(-1).reason_detail).to.include({
      failure_code: 'ACCOUNT_CLOSED',
      retryable: false,
    });

    await runRefundsOnce(deps());
    const refunded = await payoutOf(merchant, id);
    expect(refunded.is_refunded).to.equal(true);
    const refunds = (await call('GET', `/v1/payouts/${id}/refunds`, { key: merchant.key })).body;
    expect(refunds).to.have.length(1);
    expect(refunded.refund_reference).to.equal(refunds[0].id);
    const events = await eventTypesOf(id);
    expect(events.slice(events.indexOf('payout.failed'), events.indexOf('payout.failed') + 3)).to.deep.equal([
      'payout.failed',
      'payout.refunded',
      'refund.created',
    ]);
  });

  it('1002: the first attempt fails retryably by callback, a second row succeeds', async () => {
    const id = await paidPayout(merchant, payoutTo('1002'));
    const [first] = await dispatch(merchant, id);
    await callbacksDelivered(first.id);
    const afterFirst = await outflowsOf(merchant, id);
    expect(afterFirst).to.have.length(1);
    expect(afterFirst[0]).to.include({ status: 'FAILED', failure_code: 'PROCESSOR_TIMEOUT' });
    const retrying = await payoutOf(merchant, id);
    // PROCESSING once the acceptance was recorded; PAYMENT_RECEIVED if the failure overtook it.
    expect(retrying.status).to.be.oneOf(['PROCESSING', 'PAYMENT_RECEIVED']);
    expect(timelineOf(retrying).at(-1)).to.equal('DISPATCH_RETRIED/PROCESSOR_WEBHOOK');

    const [, second] = await dispatch(merchant, id);
    expect(second.attempt_number).to.equal(2);
    expect(second.id).to.not.equal(first.id);
    await callbacksDelivered(second.id);

    const rows = await outflowsOf(merchant, id);
    expect(rows.map((o) => [o.attempt_number, o.status])).to.deep.equal([
      [1, 'FAILED'],
      [2, 'SUCCESSFUL'],
    ]);
    expect(rows[0]).to.deep.equal(afterFirst[0]);
    const payout = await payoutOf(merchant, id);
    expect(payout.status).to.equal('SUCCESSFUL');
    const timeline = timelineOf(payout);
    expect(timeline.at(-1)).to.equal('PAYOUT_SUCCEEDED/PROCESSOR_WEBHOOK');
    expect(timeline.filter((t) => t.startsWith('DISPATCH_RETRIED/'))).to.have.length(1);
    // PROCESSING is entered once: the retry adds a row, not a second DISPATCHED.
    expect(timeline.filter((t) => t.startsWith('DISPATCHED/'))).to.have.length(1);
  });

  it('1003: every attempt fails retryably; after DISPATCH_MAX_ATTEMPTS rows the payout fails and is refunded', async () => {
    const max = deps().config.DISPATCH_MAX_ATTEMPTS;
    const id = await paidPayout(merchant, payoutTo('1003'));
    for (let n = 1; n <= max; n++) {
      const rows = await dispatch(merchant, id);
      expect(rows).to.have.length(n);
      await callbacksDelivered(rows[n - 1].id);
    }
    await runDispatchOnce(deps());
    const rows = await outflowsOf(merchant, id);
    expect(rows.map((o) => [o.attempt_number, o.status, o.failure_code])).to.deep.equal(
      Array.from({ length: max }, (_, i) => [i + 1, 'FAILED', 'PROCESSOR_TIMEOUT']),
    );
    const payout = await payoutOf(merchant, id);
    expect(payout.status).to.equal('FAILED');
    expect(timelineOf(payout).at(-1)).to.equal('PROCESSOR_TIMEOUT/PROCESSOR_WEBHOOK');
    expect(timelineOf(payout).filter((t) => t.startsWith('DISPATCH_RETRIED'))).to.have.length(max - 1);

    await runRefundsOnce(deps());
    expect((await payoutOf(merchant, id)).is_refunded).to.equal(true);
  });

  it('1004: no callback ever comes; a status query after the grace period finds success (triggered_by SYSTEM)', async () => {
    const id = await paidPayout(merchant, payoutTo('1004'));
    const [accepted] = await dispatch(merchant, id);
    expect(accepted.status).to.equal('PROCESSING');
    await processorSettled(accepted.id);
    // Within the grace period the service does not ask.
    await runDispatchOnce(deps());
    expect((await outflowsOf(merchant, id))[0].status).to.equal('PROCESSING');

    harness().clock.advance(deps().config.OUTFLOW_QUERY_GRACE_MS + 1000);
    await runDispatchOnce(deps());
    const [settled] = await outflowsOf(merchant, id);
    expect(settled).to.include({ id: accepted.id, status: 'SUCCESSFUL' });
    expect((await processorRecord(accepted.id))?.callbacks).to.deep.equal([]);
    const payout = await payoutOf(merchant, id);
    expect(payout.status).to.equal('SUCCESSFUL');
    expect(timelineOf(payout).at(-1)).to.equal('PAYOUT_SUCCEEDED/SYSTEM');
    const open = await deps()
      .orm.em.fork()
      .count(Task, { subjectId: id, kind: 'QUERY_OUTFLOW', doneAt: null });
    expect(open).to.equal(0);
  });

  describe('callback chaos', () => {
    it('absorbs a duplicate success and a failure after success: terminal rows never change', async () => {
      const id = await paidPayout(merchant, payoutTo('5679'));
      const [accepted] = await dispatch(merchant, id);
      await callbacksDelivered(accepted.id);
      const rows = await outflowsOf(merchant, id);
      const payout = await payoutOf(merchant, id);
      const events = await eventTypesOf(id);

      await forceCallback(accepted.id);
      await forceCallback(accepted.id, {
        status: 'FAILED',
        failure_code: 'ACCOUNT_CLOSED',
        retryable: false,
      });
      await forceCallback(accepted.id, { status: 'FAILED', retryable: true });
      await runDispatchOnce(deps());

      expect(await outflowsOf(merchant, id)).to.deep.equal(rows);
      expect(await payoutOf(merchant, id)).to.deep.equal(payout);
      expect(await eventTypesOf(id)).to.deep.equal(events);
    });

    it('ignores late callbacks for an attempt that is over, in any order', async () => {
      const id = await paidPayout(merchant, payoutTo('1002'));
      const [first] = await dispatch(merchant, id);
      await callbacksDelivered(first.id);
      const [, second] = await dispatch(merchant, id);
      await callbacksDelivered(second.id);
      const rows = await outflowsOf(merchant, id);
      const payout = await payoutOf(merchant, id);

      // The failed first attempt "succeeds" late; the successful second one "fails" late.
      await forceCallback(first.id, { status: 'SUCCESSFUL' });
      await forceCallback(second.id, { status: 'FAILED', retryable: true });
      await forceCallback(first.id);
      await runDispatchOnce(deps());

      expect(await outflowsOf(merchant, id)).to.deep.equal(rows);
      expect(await payoutOf(merchant, id)).to.deep.equal(payout);
    });

    it('takes an outcome that overtakes the answer to the submit', async () => {
      const id = await paidPayout(merchant, payoutTo('1002'));
      // The callback (attempt 1 fails retryably) lands before the submit's ACCEPTED is recorded.
      await withSubmit(
        (real) => async (args) => {
          const result = await real(args);
          await forceCallback(args.reference);
          return result;
        },
        async () => {
          await runDispatchOnce(deps());
        },
      );
      const [first] = await outflowsOf(merchant, id);
      expect(first).to.include({ status: 'FAILED', failure_code: 'PROCESSOR_TIMEOUT' });
      expect((await payoutOf(merchant, id)).status).to.equal('PAYMENT_RECEIVED');

      // The same DISPATCH task carries the next attempt after a short backoff.
      harness().clock.advance(2000);
      const rows = await dispatch(merchant, id);
      expect(rows.map((o) => o.attempt_number)).to.deep.equal([1, 2]);
      await callbacksDelivered(rows[1].id);
      await callbacksDelivered(first.id, 2);
      const payout = await payoutOf(merchant, id);
      expect(payout.status).to.equal('SUCCESSFUL');
      const [received, retried, dispatched, succeeded] = timelineOf(payout).slice(-4);
      expect([received, retried]).to.deep.equal([
        'PAYMENT_RECEIVED/SYSTEM',
        'DISPATCH_RETRIED/PROCESSOR_WEBHOOK',
      ]);
      expect(dispatched).to.match(/^DISPATCHED\/(SYSTEM|PROCESSOR_WEBHOOK)$/);
      expect(succeeded).to.equal('PAYOUT_SUCCEEDED/PROCESSOR_WEBHOOK');
    });

    it('answers 204 to a callback for a reference it never issued', async () => {
      const h = harness();
      for (const reference of ['0190b4a0-0000-7000-8000-000000000000', 'not-ours']) {
        const body = JSON.stringify({
          event: 'payout.status',
          reference,
          processor_reference: null,
          status: 'SUCCESSFUL',
          failure_code: null,
          failure_reason: null,
          retryable: false,
          occurred_at: h.clock.now().toISOString(),
        });
        const signature = signCallback(deps().secrets.callbackSecret, body, h.clock.now().getTime() / 1000);
        const res = await call('POST', '/callbacks/processor', {
          rawBody: body,
          headers: { 'content-type': 'application/json', [CALLBACK_SIGNATURE_HEADER]: signature },
          idempotencyKey: null,
        });
        expect(res.status, res.text).to.equal(204);
      }
      const unsigned = await call('POST', '/callbacks/processor', {
        body: { event: 'payout.status' },
        idempotencyKey: null,
      });
      expect(unsigned.status).to.equal(401);
    });
  });

  it('never creates a second row for an attempt whose outcome is unknown: it asks the processor, and resubmits only what it lacks', async () => {
    // 1004 never calls back, so only our own submits and queries can tell the outcome.
    const id = await paidPayout(merchant, payoutTo('1004'));
    const mine = async (reference: string) =>
      (await outflowsOf(merchant, id)).some((o: { id: string }) => o.id === reference);
    // This payout's first submit never reaches the processor; its second reaches it, and the
    // answer is lost on the way back.
    let submits = 0;
    await withSubmit(
      (real) => async (args) => {
        if (!(await mine(args.reference))) return real(args);
        submits++;
        if (submits === 1) throw new ProviderUnavailableError('processor', 'connection refused');
        await real(args);
        throw new ProviderUnavailableError('processor', 'timeout');
      },
      async () => {
        const rows = await dispatch(merchant, id);
        expect(rows.map((o) => o.status)).to.deep.equal(['PENDING']);
        expect(await processorRecord(rows[0].id)).to.equal(undefined);
        expect((await payoutOf(merchant, id)).status).to.equal('PAYMENT_RECEIVED');
        // The processor does not have it: the same reference is submitted again.
        harness().clock.advance(5000);
        expect((await dispatch(merchant, id)).map((o) => o.status)).to.deep.equal(['PENDING']);
      },
    );
    expect(submits).to.equal(2);
    const [pending] = await outflowsOf(merchant, id);
    expect(await processorRecord(pending.id)).to.include({ submissions: 1, attempt: 1 });
    await processorSettled(pending.id);
    // The processor has it: the next pass records its answer and submits nothing.
    harness().clock.advance(5000);
    const rows = await dispatch(merchant, id);
    expect(rows.map((o) => [o.id, o.attempt_number, o.status])).to.deep.equal([
      [pending.id, 1, 'SUCCESSFUL'],
    ]);
    expect(submits).to.equal(2);
    expect(await processorRecord(pending.id)).to.include({ submissions: 1, attempt: 1 });
    const payout = await payoutOf(merchant, id);
    expect(payout.status).to.equal('SUCCESSFUL');
    expect(timelineOf(payout).slice(-2)).to.deep.equal(['DISPATCHED/SYSTEM', 'PAYOUT_SUCCEEDED/SYSTEM']);
  });
});
