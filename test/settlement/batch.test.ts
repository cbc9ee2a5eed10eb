import { expect } from 'chai';
import { toDecimal } from '#src/lib/money.ts';
import { bankCreditBody, creditOfNotice, recordBankCredit } from '#src/settlement/bank-credits.ts';
import { scanChain } from '#src/settlement/chain-scan.ts';
import { matchConfirmedInflows } from '#src/settlement/matching.ts';
import type { Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { needsPostgresServer } from '../skip.ts';
import {
  confirmationsOf,
  creditBody,
  deps,
  getPayout,
  inflowByRef,
  mine,
  payoutWithInstruction,
  sendUsdt,
  settle,
} from './fixtures.ts';

/** Several transfers to one shared address matched together: each sees what the earlier ones left. */
describe('settlement matching in batches', () => {
  let merchant: Merchant;
  beforeEach(async () => {
    merchant = await payoutReadyMerchant();
  });

  const timelineOf = async (payoutId: string) => (await getPayout(merchant, payoutId)).status_timeline;

  it('pays an instruction once when two transfers of its amount arrive in one batch', async () => {
    const first = await payoutWithInstruction(merchant, { destination_amount: 150000 });
    const other = await payoutWithInstruction(merchant, { destination_amount: 100000 });
    const address = first.instruction.account_unique;
    const paying = await sendUsdt('TRON', address, first.instruction.expected);
    const repeated = await sendUsdt('TRON', address, first.instruction.expected);
    const toOther = await sendUsdt('TRON', address, other.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));

    const run = await settle();
    expect(run.matching).to.deep.equal({ matched: 2, held: 0, unmatched: 1, failed: 0, failedInflows: [] });
    expect(await inflowByRef(paying)).to.deep.include({ state: 'MATCHED', isMatched: true });
    expect((await inflowByRef(paying))?.payout?.id).to.equal(first.id);
    // The same amount again: late or repeated money for the paid instruction, never the other payout's.
    expect(await inflowByRef(repeated)).to.deep.include({
      state: 'UNMATCHED',
      isMatched: false,
      payout: null,
    });
    expect((await inflowByRef(toOther))?.payout?.id).to.equal(other.id);
    const received = (await timelineOf(first.id)).filter((t: any) => t.reason_code === 'PAYMENT_RECEIVED');
    expect(received).to.have.length(1);
    expect(received[0].reason_detail).to.include({ inflow_id: (await inflowByRef(paying))!.id });
  });

  it('judges exact, overpaid, underpaid and late money in arrival order within one batch', async () => {
    const late = await payoutWithInstruction(merchant, { destination_amount: 160000 });
    harness().clock.advance(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 60_000);
    const exact = await payoutWithInstruction(merchant, { destination_amount: 100000 });
    const overpaid = await payoutWithInstruction(merchant, { destination_amount: 120000 });
    const spare = await payoutWithInstruction(merchant, { destination_amount: 140000 });
    const address = exact.instruction.account_unique;
    const excess = toDecimal(overpaid.instruction.expected).plus('0.5');
    // Above `overpaid` and below `spare`: once `exact` and `overpaid` are paid, nothing open is below it.
    const secondExcess = toDecimal(overpaid.instruction.expected).plus('0.7');
    const short = toDecimal(exact.instruction.expected).div(2).decimalPlaces(6);

    const refs = {
      exact: await sendUsdt('TRON', address, exact.instruction.expected),
      overpaid: await sendUsdt('TRON', address, excess.toFixed()),
      short: await sendUsdt('TRON', address, short.toFixed()),
      late: await sendUsdt('TRON', address, late.instruction.expected),
      secondExcess: await sendUsdt('TRON', address, secondExcess.toFixed()),
    };
    await mine('TRON', confirmationsOf('TRON'));
    const run = await settle();
    expect(run.matching).to.deep.equal({ matched: 2, held: 2, unmatched: 1, failed: 0, failedInflows: [] });

    expect((await inflowByRef(refs.exact))?.payout?.id).to.equal(exact.id);
    const overpayment = (await inflowByRef(refs.overpaid))!;
    expect(overpayment.payout?.id).to.equal(overpaid.id);
    expect(overpayment.overpaymentAmount.toFixed()).to.equal('0.5');
    expect((await timelineOf(overpaid.id)).at(-1).reason_detail).to.deep.equal({
      inflow_id: overpayment.id,
      match_rule: 'OVERPAYMENT',
      received_total: excess.toFixed(),
      expected_amount: overpaid.instruction.expected,
      overpayment_amount: '0.5',
      currency: 'USDT',
    });
    for (const ref of [refs.short, refs.secondExcess]) {
      expect(await inflowByRef(ref)).to.deep.include({ state: 'HELD', isUnderpaid: true, payout: null });
    }
    expect(await inflowByRef(refs.late)).to.deep.include({ state: 'UNMATCHED', payout: null });
    expect((await getPayout(merchant, spare.id)).status).to.equal('PENDING_PAYMENT');
  });

  it('gives each overpayment of a batch the largest instruction the earlier ones left open', async () => {
    const small = await payoutWithInstruction(merchant, { destination_amount: 100000 });
    const middle = await payoutWithInstruction(merchant, { destination_amount: 120000 });
    const large = await payoutWithInstruction(merchant, { destination_amount: 140000 });
    const address = small.instruction.account_unique;
    const above = (extra: string) => toDecimal(large.instruction.expected).plus(extra).toFixed();
    const refs = [];
    for (const extra of ['0.5', '0.6', '0.7', '0.8'])
      refs.push(await sendUsdt('TRON', address, above(extra)));
    await mine('TRON', confirmationsOf('TRON'));

    const run = await settle();
    expect(run.matching).to.deep.equal({ matched: 3, held: 0, unmatched: 1, failed: 0, failedInflows: [] });
    const payoutOf = async (ref: string) => (await inflowByRef(ref))?.payout?.id ?? null;
    expect(await Promise.all(refs.map(payoutOf))).to.deep.equal([large.id, middle.id, small.id, null]);
    // Nothing was left open for the last one: unmatched, not held.
    expect(await inflowByRef(refs[3]!)).to.deep.include({ state: 'UNMATCHED', isUnderpaid: false });
  });

  it('credits one payout once per batch: a second credit to its virtual account tops it up in the next', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const account = payout.instruction.account_unique;
    const half = toDecimal(payout.instruction.expected).div(2).decimalPlaces(2, 1);
    const rest = toDecimal(payout.instruction.expected).minus(half);
    // Recorded without the callback's own matching: the job finds both in one batch.
    const credits = [half, rest].map((amount) =>
      creditBody({ account_number: account, amount: amount.toFixed() }),
    );
    for (const credit of credits) {
      await recordBankCredit(deps(), creditOfNotice(bankCreditBody.parse(credit)), deps().log);
    }

    expect(await matchConfirmedInflows(deps())).to.deep.equal({
      matched: 1,
      held: 1,
      unmatched: 0,
      failed: 0,
      failedInflows: [],
    });
    const paid = await getPayout(merchant, payout.id);
    expect(paid.status).to.equal('PAYMENT_RECEIVED');
    expect(
      paid.status_timeline.slice(-2).map((t: any) => [t.reason_code, t.reason_detail.received_total]),
    ).to.deep.equal([
      ['SETTLEMENT_UNDERPAID', half.toFixed()],
      ['PAYMENT_RECEIVED', payout.instruction.expected],
    ]);
    for (const credit of credits) {
      expect(await inflowByRef(String(credit.session_id))).to.deep.include({
        state: 'MATCHED',
        isUnderpaid: false,
      });
    }
  });

  it('leaves an inflow whose matching fails CONFIRMED without holding up the rest of its batch', async () => {
    const broken = await payoutWithInstruction(merchant, { destination_amount: 150000 });
    const healthy = await payoutWithInstruction(merchant, { destination_amount: 100000 });
    // Its instruction's snapshot disagrees with its status: the machine refuses to step it.
    await deps()
      .orm.em.fork()
      .execute(
        `update payment_instructions set snapshot = jsonb_set(snapshot, '{value}', '"EXPIRED"') where id = ?`,
        [broken.instruction.id],
      );
    const toBroken = await sendUsdt('TRON', broken.instruction.account_unique, broken.instruction.expected);
    const toHealthy = await sendUsdt(
      'TRON',
      healthy.instruction.account_unique,
      healthy.instruction.expected,
    );
    await mine('TRON', confirmationsOf('TRON'));
    await scanChain(deps(), 'TRON');

    const pass = await matchConfirmedInflows(deps());
    const left = await inflowByRef(toBroken);
    expect(pass).to.deep.equal({ matched: 1, held: 0, unmatched: 0, failed: 1, failedInflows: [left?.id] });
    expect(left?.state).to.equal('CONFIRMED');
    expect((await inflowByRef(toHealthy))?.payout?.id).to.equal(healthy.id);

    // Repaired, it is matched by the next pass like any other.
    await deps()
      .orm.em.fork()
      .execute(
        `update payment_instructions set snapshot = jsonb_set(snapshot, '{value}', '"UNPAID"') where id = ?`,
        [broken.instruction.id],
      );
    expect((await settle()).matching).to.deep.include({ matched: 1, failed: 0 });
    expect((await inflowByRef(toBroken))?.payout?.id).to.equal(broken.id);
  });
});

/** Two instances matching the same rows at once: needs real sessions, which the embedded database has not. */
describe('settlement matching with two instances racing', () => {
  before(function () {
    needsPostgresServer(this, 'two sessions racing');
  });

  it('pays every payout exactly once when two instances match the same inflows at once', async () => {
    const merchants = [await payoutReadyMerchant(), await payoutReadyMerchant()];
    const payouts: { id: string; ref: string; merchant: Merchant }[] = [];
    const repeats: string[] = [];
    for (const merchant of merchants) {
      for (let n = 0; n < 6; n++) {
        const payout = await payoutWithInstruction(merchant, { destination_amount: 100000 + n * 7000 });
        const ref = await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected);
        payouts.push({ id: payout.id, ref, merchant });
        if (n % 3 === 0) {
          repeats.push(
            await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected),
          );
        }
      }
    }
    await mine('TRON', confirmationsOf('TRON'));
    await scanChain(deps(), 'TRON');

    // Small batches, so that the two instances interleave on the same addresses.
    const runs = await Promise.all([
      matchConfirmedInflows(deps(), { batchSize: 3 }),
      matchConfirmedInflows(deps(), { batchSize: 3 }),
    ]);
    const total = (key: 'matched' | 'unmatched' | 'failed') => runs.reduce((sum, r) => sum + r[key], 0);
    expect(total('failed')).to.equal(0);
    expect(total('matched')).to.equal(payouts.length);
    expect(total('unmatched')).to.equal(repeats.length);

    for (const p of payouts) {
      expect((await inflowByRef(p.ref))?.payout?.id).to.equal(p.id);
      const paid = await getPayout(p.merchant, p.id);
      expect(paid.status).to.equal('PAYMENT_RECEIVED');
      expect(paid.status_timeline.filter((t: any) => t.reason_code === 'PAYMENT_RECEIVED')).to.have.length(1);
    }
    for (const ref of repeats) {
      expect(await inflowByRef(ref)).to.deep.include({ state: 'UNMATCHED', payout: null });
    }
  });
});
