import { expect } from 'chai';
import { runDispatchOnce } from '#src/dispatch/job.ts';
import { dispatchDue } from '#src/dispatch/service.ts';
import { Task } from '#src/jobs/entities.ts';
import { toDecimal } from '#src/lib/money.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import type { Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { ledgerOf, violationsOf } from '../ledger/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { deps, outflowsOf, paidPayout, payoutOf, payoutTo, processorRecord, withSubmit } from './fixtures.ts';

/** Each ledger transaction of the payout (its cause and transition) sums to zero in every currency. */
async function balancedLedger(payoutId: string): Promise<void> {
  const sums = new Map<string, ReturnType<typeof toDecimal>>();
  for (const e of (await ledgerOf(payoutId)).entries) {
    const key = `${e.cause.object} ${e.cause.id} ${e.cause.transition} ${e.currency}`;
    sums.set(key, (sums.get(key) ?? toDecimal(0)).plus(e.amount));
  }
  for (const [key, sum] of sums) expect(sum.isZero(), `${key} sums to ${sum.toFixed()}`).to.equal(true);
}

describe('dispatch in batches', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  it('records a batch where one submit is refused, one fails on the way and the others are accepted', async () => {
    // 1004 accepts and never calls back; 1001 refuses the account as closed.
    const accepted = [
      await paidPayout(merchant, payoutTo('1004')),
      await paidPayout(merchant, payoutTo('1004')),
    ];
    const refused = await paidPayout(merchant, payoutTo('1001'));
    const lost = await paidPayout(merchant, payoutTo('1004'));
    const submitted: string[] = [];
    await withSubmit(
      (real) => async (args) => {
        submitted.push(args.reference);
        if ((await outflowsOf(merchant, lost)).some((o: { id: string }) => o.id === args.reference)) {
          throw new ProviderUnavailableError('processor', 'connection refused');
        }
        return real(args);
      },
      async () => {
        await runDispatchOnce(deps());
      },
    );

    for (const id of accepted) {
      const [outflow] = await outflowsOf(merchant, id);
      expect(outflow).to.include({ status: 'PROCESSING', attempt_number: 1 });
      expect((await payoutOf(merchant, id)).status).to.equal('PROCESSING');
      expect(await processorRecord(outflow.id)).to.include({ submissions: 1 });
    }
    const [closed] = await outflowsOf(merchant, refused);
    expect(closed).to.include({ status: 'FAILED', failure_code: 'ACCOUNT_CLOSED' });
    expect((await payoutOf(merchant, refused)).status).to.equal('FAILED');
    const [pending] = await outflowsOf(merchant, lost);
    expect(pending).to.include({ status: 'PENDING', attempt_number: 1 });
    expect(await processorRecord(pending.id)).to.equal(undefined);
    expect((await payoutOf(merchant, lost)).status).to.equal('PAYMENT_RECEIVED');
    const task = await deps()
      .orm.em.fork()
      .findOneOrFail(Task, { subjectId: lost, kind: 'DISPATCH', doneAt: null });
    expect(task.lastError).to.include('outcome unknown');

    // The next batch asks the processor, which lacks it, and submits the same reference once.
    harness().clock.advance(5000);
    await runDispatchOnce(deps());
    const after = await outflowsOf(merchant, lost);
    expect(after.map((o) => [o.id, o.status])).to.deep.equal([[pending.id, 'PROCESSING']]);
    expect(await processorRecord(pending.id)).to.include({ submissions: 1, attempt: 1 });
    expect(submitted.filter((r) => r === pending.id)).to.have.length(1);

    // Each accepted attempt moved its money to the processor in one balanced SENT flow; the
    // refused one moved none.
    for (const id of [...accepted, lost]) {
      const sent = (await ledgerOf(id)).entries.filter((e) => e.cause.object === 'outflow');
      expect(sent).to.have.length(6);
      expect(new Set(sent.map((e) => e.cause.transition))).to.deep.equal(
        new Set(['ACCEPTED (PENDING → PROCESSING)']),
      );
    }
    expect((await ledgerOf(refused)).entries.filter((e) => e.cause.object === 'outflow')).to.deep.equal([]);
    for (const id of [...accepted, refused, lost]) await balancedLedger(id);
    expect(await violationsOf(...accepted, refused, lost)).to.deep.equal([]);
  });

  it('records the rest of a batch one at a time when one answer cannot be recorded, and that one later without a second submit', async () => {
    const good = [await paidPayout(merchant, payoutTo('1004')), await paidPayout(merchant, payoutTo('1004'))];
    const bad = await paidPayout(merchant, payoutTo('1004'));
    const em = () => deps().orm.em.fork();
    // Once the processor has the bad payout's attempt, its row disagrees with its machine (a status
    // written around the engine), so recording its answer throws and the batch's transaction with it.
    await withSubmit(
      (real) => async (args) => {
        const answer = await real(args);
        if ((await outflowsOf(merchant, bad)).some((o: { id: string }) => o.id === args.reference)) {
          await em().execute(`update payouts set status = 'SUCCESSFUL' where id = ?`, [bad]);
        }
        return answer;
      },
      async () => {
        await runDispatchOnce(deps());
      },
    );
    for (const id of good) {
      expect((await outflowsOf(merchant, id)).map((o) => o.status)).to.deep.equal(['PROCESSING']);
    }
    const [pending] = await outflowsOf(merchant, bad);
    expect(pending.status).to.equal('PENDING');
    expect(await processorRecord(pending.id)).to.include({ submissions: 1 });
    const task = await em().findOneOrFail(Task, { subjectId: bad, kind: 'DISPATCH', doneAt: null });
    expect(task.lastError).to.include('disagrees with its machine snapshot');

    // Repaired, the payout's next batch asks the processor, which has the attempt: recorded, not sent again.
    await em().execute(`update payouts set status = 'PAYMENT_RECEIVED' where id = ?`, [bad]);
    harness().clock.advance(5000);
    await runDispatchOnce(deps());
    // 1004 settles on its own, without a callback: the processor answers ACCEPTED or SUCCESSFUL.
    const after = await outflowsOf(merchant, bad);
    expect(after.map((o) => o.id)).to.deep.equal([pending.id]);
    expect(after[0].status).to.be.oneOf(['PROCESSING', 'SUCCESSFUL']);
    expect(await processorRecord(pending.id)).to.include({ submissions: 1 });
    expect((await payoutOf(merchant, bad)).status).to.equal(after[0].status);
    for (const id of [...good, bad]) await balancedLedger(id);
  });

  it('submits each payout exactly once when two dispatchers work through the same ready payouts at once', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await paidPayout(merchant, payoutTo('1004')));
    const submitted = new Map<string, number>();
    await withSubmit(
      (real) => async (args) => {
        submitted.set(args.reference, (submitted.get(args.reference) ?? 0) + 1);
        return real(args);
      },
      async () => {
        // Small batches, so that both dispatchers claim some of the payouts, turn by turn.
        await Promise.all([dispatchDue(deps(), { batch: 2 }), dispatchDue(deps(), { batch: 2 })]);
      },
    );
    for (const id of ids) {
      const outflows = await outflowsOf(merchant, id);
      expect(outflows.map((o) => [o.attempt_number, o.status])).to.deep.equal([[1, 'PROCESSING']]);
      expect(submitted.get(outflows[0].id)).to.equal(1);
      expect(await processorRecord(outflows[0].id)).to.include({ submissions: 1, attempt: 1 });
      expect((await payoutOf(merchant, id)).status).to.equal('PROCESSING');
      await balancedLedger(id);
    }
    expect(await violationsOf(...ids)).to.deep.equal([]);
  });
});
