import { expect } from 'chai';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { type RunningService, startService } from '#src/service.ts';
import { pullBankStatement } from '#src/settlement/bank-statement.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { runSettlementOnce } from '#src/settlement/job.ts';
import { call, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  admin,
  deps,
  getPayout,
  inflowByRef,
  lapse,
  payBank,
  payoutWithInstruction,
  settle,
} from './fixtures.ts';

/** Another instance of the service on the harness's database and sandbox, as a second process would be. */
async function instance(): Promise<RunningService> {
  const { service, sandboxUrl, databaseUrl, clock } = harness();
  return startService({
    config: { ...service.deps.config, CALLBACK_BASE_URL: undefined },
    databaseUrl,
    providersUrl: sandboxUrl,
    secrets: service.deps.secrets,
    log: service.deps.log,
    clock,
    corridors: service.deps.corridors,
  });
}

/** Lets the bank statement's interval pass, so that the next settlement run reads it. */
function statementInterval(): void {
  harness().clock.advance(deps().config.BANK_STATEMENT_INTERVAL_MS);
}

describe('settlement from the bank statement (the pull behind the bank’s notifications)', () => {
  let merchant: Merchant;
  beforeEach(async () => {
    merchant = await payoutReadyMerchant();
  });

  it('matches a credit the bank never notified within the statement interval @smoke', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const credit = await payBank(payout.instruction.account_unique, payout.instruction.expected, {
      callback: false,
    });
    expect(credit.callback).to.equal(false);
    expect(
      harness()
        .sandbox.bank.credits()
        .find((c) => c.sessionId === credit.session_id)?.notification,
    ).to.equal(null);

    statementInterval();
    const run = await settle();
    expect(run.statement).to.include({ read: true, recorded: 1 });
    expect(run.matching.matched).to.equal(1);
    expect(await inflowByRef(credit.session_id)).to.deep.include({
      state: 'MATCHED',
      payerName: credit.payer_name,
      payerAccount: credit.payer_account,
    });
    expect((await inflowByRef(credit.session_id))?.arrivedAt.toISOString()).to.equal(credit.occurred_at);
    const paid = await getPayout(merchant, payout.id);
    expect(paid.status).to.equal('PAYMENT_RECEIVED');
    expect(paid.status_timeline.at(-1).reason_detail).to.include({ match_rule: 'ACCOUNT' });
  });

  it('records a credit once whether the notification, the statement or both report it', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const half = (Number(payout.instruction.expected) / 2).toFixed(2);
    const notified = await payBank(payout.instruction.account_unique, half);
    const silent = await payBank(payout.instruction.account_unique, half, { callback: false });
    const notice = harness()
      .sandbox.bank.credits()
      .find((c) => c.sessionId === notified.session_id);
    expect((await notice?.notification?.done)?.status).to.equal('DELIVERED');

    statementInterval();
    const first = await settle();
    expect(first.statement?.recorded, 'only the credit no notification brought').to.equal(1);
    // Read the whole statement again: nothing is recorded twice.
    await deps().orm.em.fork().execute("update rail_cursors set cursor = null where source = 'BANK'");
    statementInterval();
    expect((await settle()).statement).to.include({ read: true, recorded: 0 });

    const rows = await deps()
      .orm.em.fork()
      .find(Inflow, { externalRef: { $in: [notified.session_id, silent.session_id] } });
    expect(rows.map((r) => r.state).sort()).to.deep.equal(['MATCHED', 'MATCHED']);
    const paid = await getPayout(merchant, payout.id);
    expect(paid.status).to.equal('PAYMENT_RECEIVED');
    expect(paid.status_timeline.filter((t: any) => t.reason_code === 'PAYMENT_RECEIVED')).to.have.length(1);
  });

  it('reads the statement once per interval, and never in two places at once', async () => {
    statementInterval();
    expect((await pullBankStatement(deps())).read).to.equal(true);
    expect((await pullBankStatement(deps())).read, 'not due again yet').to.equal(false);
    harness().clock.advance(deps().config.BANK_STATEMENT_INTERVAL_MS - 1);
    expect((await pullBankStatement(deps())).read).to.equal(false);
    harness().clock.advance(1);
    // Another instance is reading the statement: it holds an unexpired lease on the cursor.
    await deps()
      .orm.em.fork()
      .execute(
        "update rail_cursors set lease_token = gen_random_uuid(), lease_until = ? where source = 'BANK'",
        [new Date(harness().clock.now().getTime() + 60_000)],
      );
    expect((await pullBankStatement(deps())).read).to.equal(false);
    // A lease whose holder died lapses, and the statement is read again.
    harness().clock.advance(60_001);
    expect((await pullBankStatement(deps())).read).to.equal(true);
  });

  describe('money that arrived in time is never judged late because it was found late', () => {
    it('pays a bank instruction with a credit made a second before expiry and found after it', async () => {
      const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
      const expiresAt = new Date(payout.instruction.expires_at).getTime();
      harness().clock.set(new Date(expiresAt - 1000));
      const credit = await payBank(payout.instruction.account_unique, payout.instruction.expected, {
        callback: false,
      });
      // The statement was last read before expires_at: the instruction waits for it.
      harness().clock.set(new Date(expiresAt + 30_000));
      await runInstructionsOnce(deps());
      expect((await getPayout(merchant, payout.id)).status).to.equal('PENDING_PAYMENT');

      await lapse(deps().config.BANK_STATEMENT_INTERVAL_MS);
      expect(await inflowByRef(credit.session_id)).to.deep.include({ state: 'MATCHED' });
      const paid = await getPayout(merchant, payout.id);
      expect(paid.status).to.equal('PAYMENT_RECEIVED');
      expect(paid.payment_instruction.payment_status).to.equal('PAID');
    });

    it('keeps a credit made a second after expiry unmatched for operators, and the payout expires', async () => {
      const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
      const expiresAt = new Date(payout.instruction.expires_at).getTime();
      harness().clock.set(new Date(expiresAt + 1000));
      const credit = await payBank(payout.instruction.account_unique, payout.instruction.expected, {
        callback: false,
      });
      await lapse(deps().config.BANK_STATEMENT_INTERVAL_MS);

      const late = (await inflowByRef(credit.session_id))!;
      expect(late).to.deep.include({ state: 'UNMATCHED', isMatched: false, payout: null });
      expect((await getPayout(merchant, payout.id)).status).to.equal('EXPIRED');
      const listed = await admin('inflow', 'list', '--tenant', merchant.tenantId, '--state', 'UNMATCHED');
      expect(listed.data.map((i: any) => [i.id, i.account_payout_id])).to.deep.equal([[late.id, payout.id]]);
    });
  });

  describe('an outage longer than the bank’s notification retries', () => {
    let down: RunningService | undefined;
    let restarted: RunningService | undefined;
    afterEach(async () => {
      await down?.close();
      await restarted?.close();
      down = restarted = undefined;
    });

    it('loses no credit: each is matched from the statement after the restart, late money held for operators', async () => {
      // The instance that generated the instructions gave the bank its own callback URL.
      down = await instance();
      const ids: string[] = [];
      for (let i = 0; i < 15; i++) {
        const created = await call('POST', '/v1/payouts', {
          key: merchant.key,
          body: bankPayout({ settlement_currency: 'NGN', destination_amount: 10_000 + i }),
        });
        expect(created.status, created.text).to.equal(201);
        ids.push(created.body.id);
      }
      await runInstructionsOnce(down.deps);
      const payouts = await Promise.all(ids.map((id) => getPayout(merchant, id)));
      for (const p of payouts) {
        expect(
          harness().sandbox.bank.virtualAccount(p.payment_instruction.account_unique)?.callbackUrl,
        ).to.equal(`${down.url}/callbacks/bank`);
      }

      // kill -9 right after the transfers: the bank calls an address nobody answers, and gives up.
      await down.close();
      down = undefined;
      const credits = [];
      for (const p of payouts.slice(0, 14)) {
        credits.push(
          await payBank(p.payment_instruction.account_unique, String(p.payment_instruction.expected_amount)),
        );
      }
      // The service stays down past every instruction's expiry; one merchant pays only then.
      const lastExpiry = Math.max(
        ...payouts.map((p) => new Date(p.payment_instruction.expires_at).getTime()),
      );
      harness().clock.set(new Date(lastExpiry + 3_600_000));
      const late = payouts[14]!;
      credits.push(
        await payBank(
          late.payment_instruction.account_unique,
          String(late.payment_instruction.expected_amount),
        ),
      );
      for (const credit of credits) {
        const delivery = await harness()
          .sandbox.bank.credits()
          .find((c) => c.sessionId === credit.session_id)!.notification!.done;
        expect(delivery).to.include({ status: 'FAILED', attempts: 5, lastResponseStatus: null });
      }
      for (const credit of credits) expect(await inflowByRef(credit.session_id)).to.equal(null);

      // The restart: the instructions job's sweep finds every instruction lapsed, but the bank's
      // statement has not been read past them, so none expires.
      restarted = await instance();
      await runInstructionsOnce(restarted.deps);
      for (const id of ids) expect((await getPayout(merchant, id)).status).to.equal('PENDING_PAYMENT');

      // Within one statement interval, one settlement run finds and matches every credit.
      harness().clock.advance(deps().config.BANK_STATEMENT_INTERVAL_MS);
      const run = await runSettlementOnce(restarted.deps);
      expect(run.failedScans).to.deep.equal([]);
      expect(run.statement?.recorded).to.equal(15);
      expect(run.matching).to.deep.include({ matched: 14, unmatched: 1, failed: 0 });
      await runInstructionsOnce(restarted.deps);

      for (const p of payouts.slice(0, 14)) {
        const paid = await getPayout(merchant, p.id);
        expect(paid.status).to.equal('PAYMENT_RECEIVED');
        expect(paid.payment_instruction.payment_status).to.equal('PAID');
      }
      expect((await getPayout(merchant, late.id)).status).to.equal('EXPIRED');
      const held = await inflowByRef(credits[14]!.session_id);
      expect(held).to.deep.include({ state: 'UNMATCHED', payout: null });
      const listed = await admin('inflow', 'list', '--tenant', merchant.tenantId);
      expect(listed.data.map((i: any) => [i.id, i.state, i.account_payout_id])).to.deep.equal([
        [held!.id, 'UNMATCHED', late.id],
      ]);
    });
  });
});
