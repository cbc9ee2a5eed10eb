import { expect } from 'chai';
import { run } from '#src/cli/admin.ts';
import { Task } from '#src/jobs/entities.ts';
import { toDecimal } from '#src/lib/money.ts';
import { ROOT_OPERATOR_ID } from '#src/operators/entities.ts';
import { Inflow } from '#src/settlement/entities.ts';
import type { Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { approvedMove, refusal } from '../operators/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import {
  admin,
  confirmationsOf,
  creditBody,
  deps,
  getPayout,
  inflowByRef,
  lapse,
  merchantInflows,
  mine,
  outboxEventTypes,
  payoutWithInstruction,
  postBankCallback,
  sendUsdt,
  settle,
} from './fixtures.ts';

/** How an admin command was refused (a money move: proposed, then approved by a second operator). */
function refusedCommand(...argv: string[]) {
  const moves = ['inflow attribute', 'inflow return', 'payout fail'];
  return refusal(
    (moves.includes(argv.slice(0, 2).join(' ')) ? approvedMove : admin)(...argv),
    argv.join(' '),
  );
}

/** A signed bank credit straight to the service; returns the recorded inflow. */
async function bankCredit(accountNumber: string, amount: string) {
  const body = creditBody({ account_number: accountNumber, amount });
  const res = await postBankCallback(body);
  expect(res.status, res.text).to.equal(204);
  return (await inflowByRef(String(body.session_id)))!;
}

describe('operator tools for settlement (admin.settlement.*)', () => {
  let merchant: Merchant;
  beforeEach(async () => {
    merchant = await payoutReadyMerchant();
  });

  it('attributes held crypto money to its payout, holding it, and completes it with a second attribution', async () => {
    const payout = await payoutWithInstruction(merchant);
    const expected = toDecimal(payout.instruction.expected);
    const part = expected.minus(20).toFixed();
    const first = await sendUsdt('TRON', payout.instruction.account_unique, part);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    const held = (await inflowByRef(first))!;
    expect(held).to.include({ state: 'HELD', payout: null });

    const attributed = await approvedMove(
      'inflow',
      'attribute',
      held.id,
      '--payout',
      payout.id,
      '--note',
      'ticket 81',
    );
    expect(attributed.inflow).to.include({
      id: held.id,
      state: 'HELD',
      payout_id: payout.id,
      is_underpaid: true,
    });
    expect(attributed.payout).to.include({ id: payout.id, status: 'PENDING_PAYMENT', received_amount: part });
    const underpaid = await getPayout(merchant, payout.id);
    expect(underpaid.status_timeline.at(-1)).to.deep.include({
      reason_code: 'SETTLEMENT_UNDERPAID',
      triggered_by: 'ADMIN',
    });
    // Who decided: the approver, the proposer (root) and the proposal.
    expect(underpaid.status_timeline.at(-1).metadata).to.include({ proposer_id: ROOT_OPERATOR_ID });
    expect(underpaid.status_timeline.at(-1).metadata).to.have.all.keys(
      'operator_id',
      'proposer_id',
      'approval_id',
    );
    expect(underpaid.status_timeline.at(-1).reason_detail).to.include({
      inflow_id: held.id,
      match_rule: 'OPERATOR',
    });
    expect(JSON.stringify(underpaid.status_timeline), 'operator notes stay internal').to.not.include(
      'ticket 81',
    );
    expect(await outboxEventTypes(payout.id)).to.include('payout.underpaid');

    // The rest is below the open instruction too, so it waits for the operator as well.
    const second = await sendUsdt('TRON', payout.instruction.account_unique, '25');
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    const rest = (await inflowByRef(second))!;
    expect(rest).to.include({ state: 'HELD', payout: null });
    const done = await approvedMove('inflow', 'attribute', rest.id, '--payout', payout.id);
    expect(done.inflow).to.include({ state: 'MATCHED', is_matched: true, overpayment_amount: '5' });
    expect(done.payout).to.include({
      status: 'PAYMENT_RECEIVED',
      received_amount: expected.plus(5).toFixed(),
    });
    expect((await inflowByRef(first))?.state).to.equal('MATCHED');
    const paid = await getPayout(merchant, payout.id);
    expect(paid.payment_instruction.payment_status).to.equal('PAID');
    expect(paid.status_timeline.at(-1)).to.deep.include({
      reason_code: 'PAYMENT_RECEIVED',
      triggered_by: 'ADMIN',
    });
    expect((await admin('inflow', 'list', '--tenant', merchant.tenantId)).data).to.deep.equal([]);
  });

  it('completes a crypto payout held by an attribution when exactly the rest arrives', async () => {
    const payout = await payoutWithInstruction(merchant);
    const expected = toDecimal(payout.instruction.expected);
    const first = await sendUsdt('TRON', payout.instruction.account_unique, '30');
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    await approvedMove('inflow', 'attribute', (await inflowByRef(first))!.id, '--payout', payout.id);

    const rest = await sendUsdt('TRON', payout.instruction.account_unique, expected.minus(30).toFixed());
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    expect(await inflowByRef(rest)).to.include({ state: 'MATCHED', isMatched: true });
    expect((await inflowByRef(first))?.state).to.equal('MATCHED');
    const paid = await getPayout(merchant, payout.id);
    expect(paid.status).to.equal('PAYMENT_RECEIVED');
    expect(paid.status_timeline.at(-1)).to.deep.include({
      triggered_by: 'SYSTEM',
      reason_code: 'PAYMENT_RECEIVED',
    });
    expect(paid.status_timeline.at(-1).reason_detail).to.include({
      match_rule: 'TOP_UP',
      received_total: expected.toFixed(),
      overpayment_amount: '0',
    });
  });

  it('fails a held payout, which makes its refund due and hands its money to the refund, off the list', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const held = await bankCredit(payout.instruction.account_unique, '500.00');
    expect(held.state).to.equal('HELD');
    const second = await bankCredit(payout.instruction.account_unique, '300.00');
    expect(second.state).to.equal('HELD');
    expect(
      (await admin('inflow', 'list', '--tenant', merchant.tenantId, '--state', 'HELD')).data,
    ).to.have.length(2);
    const merchantSaw = await merchantInflows(merchant);

    const failed = await approvedMove('payout', 'fail', payout.id, '--note', 'merchant will not top up');
    expect(failed.payout).to.include({ id: payout.id, status: 'FAILED', received_amount: '800' });
    // In the transaction that failed the payout, through their machine: the money is the refund's.
    for (const inflow of [held, second]) {
      const now = await deps().orm.em.fork().findOneOrFail(Inflow, inflow.id);
      expect([
        now.state,
        now.snapshot['value'],
        now.snapshot['status'],
        now.snapshot['context'],
      ]).to.deep.equal([
        'FOR_REFUND',
        'FOR_REFUND',
        'done',
        { confirmationsRequired: 0, payoutId: payout.id },
      ]);
      expect(now).to.deep.include({ isMatched: false, isUnderpaid: true });
      expect(now.payout?.id).to.equal(payout.id);
    }
    // Merchants see no inflow state: what they see of this money does not change.
    expect(await merchantInflows(merchant)).to.deep.equal(merchantSaw);
    const p = await getPayout(merchant, payout.id);
    expect(p.status_timeline.at(-1)).to.deep.include({
      from_status: 'PENDING_PAYMENT',
      to_status: 'FAILED',
      triggered_by: 'ADMIN',
      reason_code: 'SETTLEMENT_UNDERPAID',
    });
    expect(await outboxEventTypes(payout.id)).to.include('payout.failed');
    const refundTask = await deps()
      .orm.em.fork()
      .findOne(Task, { kind: 'RAISE_REFUND', subjectId: payout.id });
    expect(refundTask, 'RAISE_REFUND due').to.not.equal(null);
    expect((await admin('inflow', 'list', '--tenant', merchant.tenantId)).data).to.deep.equal([]);
    // Nothing is left for the settlement job to hand over.
    expect((await settle()).handedToRefund).to.equal(0);
  });

  it('hands to its refund money still HELD against a payout that failed before failures handed it over', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const held = await bankCredit(payout.instruction.account_unique, '500.00');
    const snapshot = held.snapshot;
    await approvedMove('payout', 'fail', payout.id, '--note', 'merchant will not top up');
    // As a failure written before this rule left it: HELD against the FAILED payout.
    await deps()
      .orm.em.fork()
      .execute(`update inflows set state = 'HELD', snapshot = ?::jsonb where id = ?`, [
        JSON.stringify(snapshot),
        held.id,
      ]);
    expect((await inflowByRef(held.externalRef))?.state).to.equal('HELD');

    expect((await settle()).handedToRefund).to.equal(1);
    const now = (await inflowByRef(held.externalRef))!;
    expect([now.state, now.snapshot['value'], now.snapshot['context']]).to.deep.equal([
      'FOR_REFUND',
      'FOR_REFUND',
      { confirmationsRequired: 0, payoutId: payout.id },
    ]);
    expect((await admin('inflow', 'list', '--tenant', merchant.tenantId)).data).to.deep.equal([]);
    expect((await settle()).handedToRefund).to.equal(0);
  });

  it('pays a held payout whose instruction lapsed when an operator attributes the late top-up', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const expected = toDecimal(payout.instruction.expected);
    await bankCredit(payout.instruction.account_unique, '100.00');
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 60_000);
    const stillHeld = await getPayout(merchant, payout.id);
    expect(stillHeld.status, 'money was received: a held payout does not expire').to.equal('PENDING_PAYMENT');
    expect(stillHeld.payment_instruction.payment_status).to.equal('EXPIRED');

    const late = await bankCredit(payout.instruction.account_unique, expected.minus(100).toFixed(2));
    expect(late).to.include({ state: 'UNMATCHED', payout: null });
    const listed = await admin('inflow', 'list', '--tenant', merchant.tenantId, '--state', 'UNMATCHED');
    expect(listed.data[0]).to.include({ id: late.id, account_payout_id: payout.id });

    const done = await approvedMove('inflow', 'attribute', late.id, '--payout', payout.id);
    expect(done.payout).to.include({ status: 'PAYMENT_RECEIVED', received_amount: expected.toFixed() });
    expect((await getPayout(merchant, payout.id)).payment_instruction.payment_status).to.equal('EXPIRED');
  });

  it('records unattributed money as returned to the merchant, after which nobody can attribute it', async () => {
    const payout = await payoutWithInstruction(merchant);
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 60_000);
    const tx = await sendUsdt('TRON', payout.instruction.account_unique, payout.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    const late = (await inflowByRef(tx))!;
    expect(late.state).to.equal('UNMATCHED');

    const noNote = await admin('inflow', 'return', late.id).then(
      () => null,
      (e: Error) => e,
    );
    expect(noNote?.message).to.equal('--note TEXT is required');
    const noReference = await admin('inflow', 'return', late.id, '--note', 'sent back').then(
      () => null,
      (e: Error) => e,
    );
    expect(noReference?.message).to.equal('--reference REF is required');
    const returned = await approvedMove(
      'inflow',
      'return',
      late.id,
      '--reference',
      '0xfeedbeef',
      '--note',
      'sent back from the hot wallet',
    );
    expect(returned.inflow).to.include({
      id: late.id,
      state: 'RETURNED',
      payout_id: null,
      returned_reference: '0xfeedbeef',
    });
    expect((await admin('inflow', 'list', '--tenant', merchant.tenantId)).data).to.deep.equal([]);
    const open = await payoutWithInstruction(merchant);
    const again = await refusedCommand('inflow', 'attribute', late.id, '--payout', open.id);
    expect(again.code).to.equal('VALIDATION_FAILED');
    expect(again.details).to.deep.equal([
      {
        field: 'inflow_id',
        issue: 'is RETURNED; only UNMATCHED inflows and HELD inflows attributed to no payout can be decided',
      },
    ]);
  });

  it('refuses attribution to another tenant’s payout, another currency, or a payout not waiting for money', async () => {
    const payout = await payoutWithInstruction(merchant);
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 60_000);
    const tx = await sendUsdt('TRON', payout.instruction.account_unique, '3');
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    const stray = (await inflowByRef(tx))!;
    expect(stray.state).to.equal('UNMATCHED');

    const other = await payoutReadyMerchant();
    const theirs = await payoutWithInstruction(other);
    const ngn = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const cases: [string, string][] = [
      [theirs.id, 'belongs to another tenant than the inflow'],
      [ngn.id, 'settles in NGN, the inflow is USDT'],
      [payout.id, 'is EXPIRED; only a PENDING_PAYMENT payout can take money'],
    ];
    for (const [payoutId, issue] of cases) {
      const refused = await refusedCommand('inflow', 'attribute', stray.id, '--payout', payoutId);
      expect(refused.code).to.equal('VALIDATION_FAILED');
      expect(refused.details).to.deep.equal([{ field: 'payout_id', issue }]);
    }
    expect(
      (await refusedCommand('inflow', 'attribute', stray.id, '--payout', crypto.randomUUID())).code,
    ).to.equal('PAYOUT_NOT_FOUND');
    expect(
      (await refusedCommand('inflow', 'attribute', crypto.randomUUID(), '--payout', ngn.id)).code,
    ).to.equal('INFLOW_NOT_FOUND');
    const notHeld = await refusedCommand('payout', 'fail', ngn.id);
    expect(notHeld.details).to.deep.equal([
      { field: 'payout_id', issue: 'is awaiting payment, not held for review' },
    ]);
    expect((await inflowByRef(tx))?.state, 'nothing changed').to.equal('UNMATCHED');
  });

  it('refuses to return or re-attribute money held against a payout: it is that payout’s', async () => {
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const held = await bankCredit(payout.instruction.account_unique, '100.00');
    expect(held).to.deep.include({ state: 'HELD' });
    expect(held.snapshot).to.deep.include({ value: { HELD: 'attributed' } });
    const other = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const issue =
      'is HELD and attributed to payout ' +
      `${payout.id}; only UNMATCHED inflows and HELD inflows attributed to no payout can be decided`;
    for (const argv of [
      ['inflow', 'return', held.id, '--reference', 'FT123', '--note', 'sent back'],
      ['inflow', 'attribute', held.id, '--payout', other.id],
    ]) {
      const refused = await refusedCommand(...argv);
      expect(refused.code).to.equal('VALIDATION_FAILED');
      expect(refused.details).to.deep.equal([{ field: 'inflow_id', issue }]);
    }
    const unchanged = await deps().orm.em.fork().findOneOrFail(Inflow, held.id);
    expect([unchanged.state, unchanged.snapshot]).to.deep.equal([held.state, held.snapshot]);
  });

  it('keeps every inflow’s state its machine’s: the snapshot says where the money is, and for whom', async () => {
    const ngn = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const usdt = await payoutWithInstruction(merchant);
    const short = await bankCredit(ngn.instruction.account_unique, '100.00');
    const below = await sendUsdt('TRON', usdt.instruction.account_unique, '1');
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    const returned = await approvedMove(
      'inflow',
      'return',
      (await inflowByRef(below))!.id,
      '--reference',
      'FT123',
      '--note',
      'sent back',
    );
    const paid = await sendUsdt('TRON', usdt.instruction.account_unique, usdt.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();

    const rows = await deps()
      .orm.em.fork()
      .find(Inflow, { tenant: merchant.tenantId }, { orderBy: { createdAt: 'asc' } });
    expect(rows.map((r) => [r.id, r.state, r.snapshot['value'], r.snapshot['context']])).to.deep.equal([
      [short.id, 'HELD', { HELD: 'attributed' }, { confirmationsRequired: 0, payoutId: ngn.id }],
      [
        returned.inflow.id,
        'RETURNED',
        'RETURNED',
        { confirmationsRequired: confirmationsOf('TRON'), payoutId: null },
      ],
      [
        (await inflowByRef(paid))!.id,
        'MATCHED',
        'MATCHED',
        { confirmationsRequired: confirmationsOf('TRON'), payoutId: usdt.id },
      ],
    ]);
  });

  it('lists exactly the money waiting for a decision, per state filter, oldest first, a page at a time', async () => {
    // HELD against a payout still held for review: that payout's decision, listed.
    const heldPayout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const short = await bankCredit(heldPayout.instruction.account_unique, '100.00');
    // HELD against a payout that has since FAILED: FOR_REFUND, its refund returns the money, nobody decides.
    const failedPayout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const refunded = await bankCredit(failedPayout.instruction.account_unique, '200.00');
    await approvedMove('payout', 'fail', failedPayout.id, '--note', 'merchant will not top up');
    // Below every open instruction (HELD, attributed to nobody), paid in full (MATCHED), and
    // money an operator recorded as returned (RETURNED).
    const usdt = await payoutWithInstruction(merchant);
    const below = await sendUsdt('TRON', usdt.instruction.account_unique, '1');
    const back = await sendUsdt('TRON', usdt.instruction.account_unique, '2');
    const paid = await payoutWithInstruction(merchant);
    const full = await sendUsdt('TRON', paid.instruction.account_unique, paid.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();
    await approvedMove(
      'inflow',
      'return',
      (await inflowByRef(back))!.id,
      '--reference',
      'FT124',
      '--note',
      'sent back',
    );
    // Late money: UNMATCHED.
    const lateFor = await payoutWithInstruction(merchant);
    await lapse(deps().config.PAYMENT_INSTRUCTION_TTL_MS + 60_000);
    const lateTx = await sendUsdt('TRON', lateFor.instruction.account_unique, lateFor.instruction.expected);
    await mine('TRON', confirmationsOf('TRON'));
    await settle();

    const byRef = async (ref: string) => (await inflowByRef(ref))!;
    const [held, refundedHeld, unattributed, late] = [
      await byRef(short.externalRef),
      await byRef(refunded.externalRef),
      await byRef(below),
      await byRef(lateTx),
    ];
    expect([held, unattributed, late].map((i) => i.state)).to.deep.equal(['HELD', 'HELD', 'UNMATCHED']);
    expect([refundedHeld, await byRef(back), await byRef(full)].map((i) => i.state)).to.deep.equal([
      'FOR_REFUND',
      'RETURNED',
      'MATCHED',
    ]);
    expect((await getPayout(merchant, failedPayout.id)).status).to.equal('FAILED');
    // Page order: (created_at, id).
    const inOrder = async (...inflows: Inflow[]) =>
      (
        await deps()
          .orm.em.fork()
          .find(
            Inflow,
            { id: { $in: inflows.map((i) => i.id) } },
            { orderBy: { createdAt: 'asc', id: 'asc' } },
          )
      ).map((i) => i.id);
    const listed = async (...argv: string[]) =>
      ((await admin('inflow', 'list', '--tenant', merchant.tenantId, ...argv)).data as { id: string }[]).map(
        (i) => i.id,
      );
    expect(await listed()).to.deep.equal(await inOrder(held, unattributed, late));
    expect(await listed('--state', 'HELD')).to.deep.equal(await inOrder(held, unattributed));
    expect(await listed('--state', 'UNMATCHED')).to.deep.equal([late.id]);
    // The INFLOWS_UNMATCHED queue: the money no payout took.
    expect(await listed('--unattributed')).to.deep.equal(await inOrder(unattributed, late));
    expect(await listed('--state', 'HELD', '--unattributed')).to.deep.equal([unattributed.id]);

    // A page at a time: the same rows, each once.
    const walked: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await admin(
        'inflow',
        'list',
        '--tenant',
        merchant.tenantId,
        '--limit',
        '1',
        ...(cursor ? ['--cursor', cursor] : []),
      );
      walked.push(...page.data.map((i: { id: string }) => i.id));
      cursor = page.meta.next_cursor ?? undefined;
    } while (cursor);
    expect(walked).to.deep.equal(await inOrder(held, unattributed, late));
  });

  it('is closed to callers without the admin token', async () => {
    const err = await run(['inflow', 'list'], {
      serviceUrl: harness().url,
      token: 'not-the-admin-token',
    }).then(
      () => null,
      (e: Error) => e,
    );
    expect(err?.message).to.match(/admin bearer token/);
  });
});
