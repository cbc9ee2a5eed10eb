import { expect } from 'chai';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { toDecimal } from '#src/lib/money.ts';
import type { Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  admin,
  confirmationsOf,
  deps,
  getPayout,
  inflowByRef,
  lapse,
  merchantInflows,
  mine,
  outboxEventTypes,
  payoutWithInstruction,
  sendUsdt,
  settle,
} from './fixtures.ts';

describe('settlement on the crypto rail', () => {
  let merchant: Merchant;
  beforeEach(async () => {
    // A merchant per test: its own deposit address, so no other test's instructions are open on it.
    merchant = await payoutReadyMerchant();
  });

  it('moves a payout to PAYMENT_RECEIVED only once the transfer has the network’s confirmations @smoke', async () => {
    const required = confirmationsOf('TRON');
    const payout = await payoutWithInstruction(merchant);
    const tx = await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected);

    await settle();
    expect(await merchantInflows(merchant), 'not mined yet').to.deep.equal([]);

    const seen: number[] = [];
    for (const step of [1, 10, required - 12]) {
      await mine('TRON', step);
      await settle();
      const [inflow] = await merchantInflows(merchant);
      seen.push(inflow.confirmations_received);
      expect(inflow).to.include({ is_matched: false, payout_id: null, is_underpaid: false });
      expect((await getPayout(merchant, payout.id)).status).to.equal('PENDING_PAYMENT');
    }
    expect(seen).to.deep.equal([1, 11, required - 1]);

    await mine('TRON', 1);
    await settle();
    const [inflow] = await merchantInflows(merchant);
    expect(inflow).to.include({
      rail: 'CRYPTO',
      network: 'TRON',
      currency: 'USDT',
      confirmations_received: required,
      is_matched: true,
      payout_id: payout.id,
      is_underpaid: false,
      overpayment_amount: 0,
      overpayment_currency: 'USDT',
    });
    expect(inflow.amount).to.equal(Number(payout.instruction.expected));
    expect(inflow.matched_at).to.equal(harness().clock.now().toISOString());
    expect(Object.keys(inflow)).to.not.include.members(['payer_name', 'payer_account', 'from_address']);

    const paid = await getPayout(merchant, payout.id);
    expect(paid.status).to.equal('PAYMENT_RECEIVED');
    expect(paid.payment_instruction).to.include({ payment_status: 'PAID', paid_at: inflow.matched_at });
    expect(paid.status_timeline.at(-1)).to.deep.include({
      from_status: 'PENDING_PAYMENT',
      to_status: 'PAYMENT_RECEIVED',
      triggered_by: 'SYSTEM',
      reason_code: 'PAYMENT_RECEIVED',
    });
    expect(paid.status_timeline.at(-1).reason_detail).to.include({
      inflow_id: inflow.id,
      match_rule: 'EXACT',
      overpayment_amount: '0',
    });
    expect(await outboxEventTypes(payout.id)).to.include('payout.payment_received');
    expect((await inflowByRef(tx))?.payerAccount, 'payer kept for operators').to.be.a('string');
  });

  it('takes an overpayment to the open instruction just below it and records the excess', async () => {
    const payout = await payoutWithInstruction(merchant);
    const sent = toDecimal(payout.instruction.expected).plus('5.5');
    await sendUsdt('TRON', payout.instruction.account_unique, sent.toFixed());
    await mine('TRON', confirmationsOf('TRON'));
    await settle();

    const [inflow] = await merchantInflows(merchant);
    expect(inflow).to.include({ is_matched: true, payout_id: payout.id, overpayment_amount: 5.5 });
    const paid = await getPayout(merchant, payout.id);
    expect(paid.status).to.equal('PAYMENT_RECEIVED');
    expect(paid.status_timeline.at(-1).reason_detail).to.deep.equal({
      inflow_id: inflow.id,
      match_rule: 'OVERPAYMENT',
      received_total: sent.toFixed(),
      expected_amount: payout.instruction.expected,
      overpayment_amount: '5.5',
      currency: 'USDT',
    });
  });

  it('holds a payment below every open instruction, attributed to no payout', async () => {
    const payout = await payoutWithInstruction(merchant);
    const half = toDecimal(payout.instruction.expected).div(2).decimalPlaces(6).toFixed();
    const tx = await sendUsdt('TRON', payout.instruction.account_unique, half);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();

    const [inflow] = await merchantInflows(merchant);
    expect(inflow).to.include({ is_matched: false, is_underpaid: true, payout_id: null, matched_at: null });
    const waiting = await getPayout(merchant, payout.id);
    expect(waiting.status).to.equal('PENDING_PAYMENT');
    expect(waiting.status_timeline.map((t: any) => t.reason_code)).to.not.include('SETTLEMENT_UNDERPAID');
    expect(await outboxEventTypes(payout.id)).to.not.include('payout.underpaid');

    const listed = await admin('inflow', 'list', '--tenant', merchant.tenantId);
    expect(listed.data).to.have.length(1);
    expect(listed.data[0]).to.include({
      id: inflow.id,
      state: 'HELD',
      external_ref: tx,
      amount: half,
      payout_id: null,
      is_underpaid: true,
    });
    expect(listed.data[0].payer_account, 'operators see the payer').to.be.a('string').and.not.empty;
  });

  it('tells two open instructions on one address apart by their amounts', async () => {
    const large = await payoutWithInstruction(merchant, { destination_amount: 150000 });
    const small = await payoutWithInstruction(merchant, { destination_amount: 100000 });
    expect(large.instruction.account_unique).to.equal(small.instruction.account_unique);
    // The larger amount first: an exact match wins over the overpayment rule.
    const toLarge = await sendUsdt('TRON', large.instruction.account_unique, large.instruction.expected);
    const toSmall = await sendUsdt('TRON', small.instruction.account_unique, small.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();

    expect((await inflowByRef(toLarge))?.payout?.id).to.equal(large.id);
    expect((await inflowByRef(toSmall))?.payout?.id).to.equal(small.id);
    for (const p of [large, small]) {
      const paid = await getPayout(merchant, p.id);
      expect(paid.status).to.equal('PAYMENT_RECEIVED');
      expect(paid.status_timeline.at(-1).reason_detail).to.include({
        match_rule: 'EXACT',
        overpayment_amount: '0',
      });
    }
  });

  it('settles USDT on BSC after BSC’s own confirmations', async () => {
    const required = confirmationsOf('BSC');
    const payout = await payoutWithInstruction(merchant, { settlement_network: 'BSC' });
    await sendUsdt('BSC', payout.instruction.account_unique, payout.instruction.expected);
    await mine('BSC', required - 1);
    await settle();
    expect((await getPayout(merchant, payout.id)).status).to.equal('PENDING_PAYMENT');
    await mine('BSC', 1);
    await settle();
    const [inflow] = await merchantInflows(merchant);
    expect(inflow).to.include({ network: 'BSC', confirmations_received: required, is_matched: true });
    expect((await getPayout(merchant, payout.id)).status).to.equal('PAYMENT_RECEIVED');
  });

  it('keeps money that arrives after expiry UNMATCHED, even when another instruction is open', async () => {
    const late = await payoutWithInstruction(merchant, { destination_amount: 150000 });
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 60_000);
    expect((await getPayout(merchant, late.id)).status).to.equal('EXPIRED');
    // A smaller open instruction the late amount would overpay: still not a reason to take it.
    const open = await payoutWithInstruction(merchant, { destination_amount: 100000 });

    const tx = await sendUsdt('TRON', late.instruction.account_unique, late.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();

    const inflow = await inflowByRef(tx);
    expect(inflow).to.include({ state: 'UNMATCHED', isMatched: false, isUnderpaid: false, payout: null });
    const expired = await getPayout(merchant, late.id);
    expect(expired.status).to.equal('EXPIRED');
    expect(expired.payment_instruction.payment_status).to.equal('EXPIRED');
    expect((await getPayout(merchant, open.id)).status).to.equal('PENDING_PAYMENT');

    const listed = await admin('inflow', 'list', '--tenant', merchant.tenantId, '--state', 'UNMATCHED');
    expect(listed.data.map((i: any) => i.id)).to.deep.equal([inflow!.id]);
  });

  it('records each transfer once, however often the chain is read', async () => {
    const payout = await payoutWithInstruction(merchant);
    await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    expect(await merchantInflows(merchant)).to.have.length(1);

    // Forget how far the chains were read: the next run reads everything again.
    await deps().orm.em.fork().execute("update rail_cursors set cursor = null where source <> 'BANK'");
    const rescan = await settle();
    expect(rescan.scans.map((s) => s.recorded)).to.deep.equal([0, 0]);
    expect(rescan.matching).to.deep.include({ matched: 0, held: 0 });
    expect(await merchantInflows(merchant)).to.have.length(1);
    const paid = await getPayout(merchant, payout.id);
    expect(paid.status_timeline.filter((t: any) => t.reason_code === 'PAYMENT_RECEIVED')).to.have.length(1);
  });

  describe('money that arrived in time is never judged late because it was found late', () => {
    /** Moves the clock to `offsetMs` from the instruction's expires_at. */
    const at = (instruction: { expires_at: string }, offsetMs: number) =>
      harness().clock.set(new Date(new Date(instruction.expires_at).getTime() + offsetMs));

    it('pays with a transfer mined a second before expiry whose confirmations finish after it', async () => {
      const payout = await payoutWithInstruction(merchant);
      at(payout.instruction, -1000);
      const tx = await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected);
      await mine('TRON', 1);
      await settle();
      at(payout.instruction, 60_000);
      await mine('TRON', 1);
      await settle();
      await runInstructionsOnce(deps());
      expect((await getPayout(merchant, payout.id)).status, 'still confirming').to.equal('PENDING_PAYMENT');

      await mine('TRON', confirmationsOf('TRON') - 2);
      await settle();
      expect(await inflowByRef(tx)).to.deep.include({ state: 'MATCHED' });
      expect((await getPayout(merchant, payout.id)).status).to.equal('PAYMENT_RECEIVED');
    });

    it('pays with a transfer mined a second before expiry that the chain scan found only after it', async () => {
      const payout = await payoutWithInstruction(merchant);
      at(payout.instruction, -1000);
      const tx = await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected);
      await mine('TRON', confirmationsOf('TRON'));
      // The service was down: the chain went on, the expiry sweep runs before the chain is read.
      at(payout.instruction, 600_000);
      await mine('TRON', 1);
      await runInstructionsOnce(deps());
      expect((await getPayout(merchant, payout.id)).status, 'the chain is not read past expiry').to.equal(
        'PENDING_PAYMENT',
      );

      await settle();
      await runInstructionsOnce(deps());
      expect((await inflowByRef(tx))?.arrivedAt.getTime()).to.equal(
        new Date(payout.instruction.expires_at).getTime() - 1000,
      );
      expect(await inflowByRef(tx)).to.deep.include({ state: 'MATCHED' });
      expect((await getPayout(merchant, payout.id)).status).to.equal('PAYMENT_RECEIVED');
    });

    it('keeps a transfer mined a second after expiry unmatched, and the payout expires', async () => {
      const payout = await payoutWithInstruction(merchant);
      at(payout.instruction, 1000);
      const tx = await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected);
      await mine('TRON', confirmationsOf('TRON'));
      await settle();
      await runInstructionsOnce(deps());
      expect(await inflowByRef(tx)).to.deep.include({ state: 'UNMATCHED', payout: null });
      expect((await getPayout(merchant, payout.id)).status).to.equal('EXPIRED');
    });
  });
});
