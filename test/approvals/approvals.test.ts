import { expect } from 'chai';
import { Approval } from '#src/approvals/entities.ts';
import { runApprovalsOnce } from '#src/approvals/job.ts';
import { proposeMove } from '#src/approvals/service.ts';
import { AuditEntry } from '#src/audit/entities.ts';
import { AuditNote } from '#src/audit/service.ts';
import { StatusLog } from '#src/payouts/entities.ts';
import { Refund } from '#src/refunds/entities.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { settlementMoves } from '#src/settlement/moves.ts';
import type { Merchant } from '../client.ts';
import { payoutOf } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { expectTrpcRefusal, rowCounts } from '../http/hostile.ts';
import { patchConfig } from '../isolation.ts';
import { cliAs, newOperator, refusal, type TestOperator, trpcCall } from '../operators/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { racesOnlyOnPostgres } from '../races.ts';
import { deps, getPayout, handledCredit, payBank, payoutWithInstruction } from '../settlement/fixtures.ts';
import { failedRefund, heldMoney, heldPayout as heldPayoutWithInflow, strayInflow } from './fixtures.ts';

/** A NGN payout held for review: 100 NGN of more arrived, so `payout fail` is possible. */
async function heldPayout(merchant: Merchant): Promise<string> {
  return (await heldPayoutWithInflow(merchant)).payoutId;
}

/** How many payout status changes the service has counted (`payout_transitions_total`). */
async function transitionsCounted(): Promise<number> {
  const { values } = await deps().metrics.payoutTransitions.get();
  return values.reduce((sum, v) => sum + v.value, 0);
}

/** What the tables gained or lost between two counts (tables that did not change left out). */
function rowsChanged(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  return Object.fromEntries(
    Object.keys(after)
      .filter((table) => after[table] !== before[table])
      .map((table) => [table, after[table]! - (before[table] ?? 0)]),
  );
}

/** The payout's timeline rows that name the approval. */
async function rowsOfApproval(payoutId: string, approvalId: string): Promise<StatusLog[]> {
  const rows = await deps().orm.em.fork().find(StatusLog, { payout: payoutId });
  return rows.filter((r) => r.metadata?.approval_id === approvalId);
}

async function auditOf(approvalId: string): Promise<AuditEntry[]> {
  return deps()
    .orm.em.fork()
    .find(
      AuditEntry,
      { targetIds: { $contains: [approvalId] } },
      { orderBy: { createdAt: 'asc', id: 'asc' } },
    );
}

describe('four eyes on money moves (admin.approvals.*)', () => {
  let merchant: Merchant;
  let proposer: TestOperator;
  let approver: TestOperator;
  let secondApprover: TestOperator;
  before(async () => {
    merchant = await payoutReadyMerchant();
    proposer = await newOperator('operator');
    approver = await newOperator('approver');
    secondApprover = await newOperator('admin');
  });

  it('turns a money move into a PENDING proposal that moves nothing until a second operator approves it', async () => {
    const payoutId = await heldPayout(merchant);
    const as = cliAs(proposer);
    const proposed = await as('payout', 'fail', payoutId, '--note', 'merchant will not top up');
    expect(Object.keys(proposed)).to.deep.equal(['approval']);
    expect(proposed.approval).to.include({
      action: 'payout.fail',
      state: 'PENDING',
      note: 'merchant will not top up',
      proposer_id: proposer.id,
      proposer_name: proposer.name,
      decided_by_id: null,
      result: null,
    });
    expect(proposed.approval.args).to.deep.equal({ payout_id: payoutId });
    // What is at stake: whose money, how much, and where the payout stands.
    expect(proposed.approval).to.include({
      tenant_id: merchant.tenantId,
      currency: 'NGN',
      target_state: 'PENDING_PAYMENT.held',
    });
    expect(Number(proposed.approval.amount)).to.equal(100);
    expect(proposed.approval.target_ids).to.deep.equal([payoutId]);
    expect((await getPayout(merchant, payoutId)).status, 'nothing moved').to.equal('PENDING_PAYMENT');

    const pending = await as('approval', 'list', '--state', 'PENDING', '--limit', '100');
    expect(pending.data.map((a: { id: string }) => a.id)).to.include(proposed.approval.id);

    // The proposer cannot approve its own proposal, whatever its role; an operator cannot approve at all.
    const own = await refusal(cliAs(proposer)('approval', 'approve', proposed.approval.id));
    expect(own.code).to.equal('APPROVER_ROLE_REQUIRED');
    const rootProposal = await cliAs()(
      'payout',
      'fail',
      await heldPayout(merchant),
      '--note',
      'root proposes',
    );
    const self = await trpcCall(
      'admin.approvals.approve',
      'mutation',
      { approval_id: rootProposal.approval.id },
      harness().adminToken,
    );
    expect(self.status).to.equal(403);
    expect(self.body.error.data.app_code).to.equal('SELF_APPROVAL_FORBIDDEN');
    expect((await cliAs()('approval', 'show', rootProposal.approval.id)).state).to.equal('PENDING');

    const { approval } = await cliAs(approver)(
      'approval',
      'approve',
      proposed.approval.id,
      '--note',
      'checked',
    );
    expect(approval).to.include({
      state: 'APPROVED',
      decided_by_id: approver.id,
      decided_by_name: approver.name,
      decision_note: 'checked',
      failure_code: null,
    });
    expect(approval.decided_at).to.be.a('string');
    expect(approval.result.payout).to.include({ id: payoutId, status: 'FAILED' });

    // The payout's own history says who decided, and through which proposal.
    const timeline = (await getPayout(merchant, payoutId)).status_timeline;
    expect(timeline.at(-1)).to.deep.include({ to_status: 'FAILED', triggered_by: 'ADMIN' });
    expect(timeline.at(-1).metadata).to.deep.equal({
      operator_id: approver.id,
      proposer_id: proposer.id,
      approval_id: approval.id,
    });

    // The trail: the proposal and the approval, each with the proposal and the payout as targets.
    const trail = await auditOf(approval.id);
    expect(trail.map((r) => [r.action, r.outcome, r.operatorId])).to.deep.equal([
      ['admin.settlement.failPayout', 'PENDING', proposer.id],
      ['admin.approvals.approve', 'APPROVED', approver.id],
    ]);
    for (const row of trail) expect(row.targetIds).to.include.members([approval.id, payoutId]);
  });

  it('fails a stale proposal cleanly: the world changed, nothing moves, the reason stays', async () => {
    // Held, then the merchant pays the rest while a proposal to fail it waits.
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const payoutId = payout.id;
    await handledCredit((await payBank(payout.instruction.account_unique, '100.00')).session_id);
    const as = cliAs(proposer);
    const second = await as('payout', 'fail', payoutId, '--note', 'merchant will not top up');
    const rest = (Number(payout.instruction.expected) - 100).toFixed(2);
    await handledCredit((await payBank(payout.instruction.account_unique, rest)).session_id);
    expect((await getPayout(merchant, payoutId)).status).to.equal('PAYMENT_RECEIVED');
    const rowsBefore = await deps().orm.em.fork().count(StatusLog, { payout: payoutId });

    const stale = await refusal(cliAs(approver)('approval', 'approve', second.approval.id));
    expect(stale.code).to.equal('APPROVAL_ACTION_FAILED');
    expect(stale.details).to.deep.equal([
      { field: 'payout_id', issue: 'is PAYMENT_RECEIVED, not held for review' },
    ]);
    const failed = await as('approval', 'show', second.approval.id);
    expect(failed).to.include({
      state: 'FAILED',
      failure_code: 'VALIDATION_FAILED',
      failure_reason: 'payout_id is PAYMENT_RECEIVED, not held for review',
      decided_by_id: approver.id,
      result: null,
    });
    expect(await deps().orm.em.fork().count(StatusLog, { payout: payoutId })).to.equal(rowsBefore);
    expect((await auditOf(second.approval.id)).map((r) => r.outcome)).to.deep.equal(['PENDING', 'FAILED']);
    // Decided is decided.
    expect((await refusal(cliAs(secondApprover)('approval', 'approve', second.approval.id))).code).to.equal(
      'APPROVAL_NOT_PENDING',
    );
  });

  it('runs the move once when two approvers approve at the same moment: one refund, one transfer', async function () {
    racesOnlyOnPostgres(this);
    for (let round = 0; round < 3; round++) {
      const payoutId = await heldPayout(merchant);
      const { approval } = await cliAs(proposer)('payout', 'fail', payoutId, '--note', 'race');
      const outcomes = await Promise.allSettled([
        cliAs(approver)('approval', 'approve', approval.id),
        cliAs(secondApprover)('approval', 'approve', approval.id),
      ]);
      const won = outcomes.filter((o) => o.status === 'fulfilled');
      const lost = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected');
      expect(won).to.have.length(1);
      expect(lost).to.have.length(1);
      expect(lost[0]!.reason.data.app_code).to.equal('APPROVAL_NOT_PENDING');
      expect(await rowsOfApproval(payoutId, approval.id)).to.have.length(1);
      expect((await auditOf(approval.id)).map((r) => r.outcome)).to.deep.equal(['PENDING', 'APPROVED']);
      // The money the payout held goes back once: one refund, sent to the bank once. 100.00 NGN
      // arrived; the NGN refund fee is 50.00 (src/corridors/corridors.json).
      await runRefundsOnce(deps());
      const refunds = await deps().orm.em.fork().find(Refund, { payout: payoutId });
      expect(refunds).to.have.length(1);
      expect(refunds[0]!.refundAmount.toFixed()).to.equal('50');
      const transfers = harness()
        .sandbox.bank.transfers()
        .filter((t) => t.reference.startsWith(`${refunds[0]!.id}:`));
      expect(transfers.map((t) => [t.reference, t.amount.toFixed()])).to.deep.equal([
        [`${refunds[0]!.id}:1`, '50'],
      ]);
    }
  });

  it('rejects a proposal with a note, after which nothing can approve it', async () => {
    const payoutId = await heldPayout(merchant);
    const { approval } = await cliAs(proposer)('payout', 'fail', payoutId, '--note', 'too early?');
    expect((await refusal(cliAs(approver)('approval', 'reject', approval.id))).code).to.equal('USAGE');
    const noNote = await trpcCall(
      'admin.approvals.reject',
      'mutation',
      { approval_id: approval.id, note: '  ' },
      approver.token,
    );
    expect(noNote.body.error.data.app_code).to.equal('VALIDATION_FAILED');

    const rejected = await cliAs(approver)('approval', 'reject', approval.id, '--note', 'give them a day');
    expect(rejected.approval).to.include({
      state: 'REJECTED',
      decided_by_id: approver.id,
      decision_note: 'give them a day',
    });
    expect((await refusal(cliAs(secondApprover)('approval', 'approve', approval.id))).code).to.equal(
      'APPROVAL_NOT_PENDING',
    );
    expect((await getPayout(merchant, payoutId)).status).to.equal('PENDING_PAYMENT');
    expect((await auditOf(approval.id)).map((r) => r.outcome)).to.deep.equal(['PENDING', 'REJECTED']);
  });

  it('lets its proposer withdraw a proposal, and nobody else below approver reject it', async () => {
    const payoutId = await heldPayout(merchant);
    const { approval } = await cliAs(proposer)('payout', 'fail', payoutId, '--note', 'wrong payout');
    const bystander = await newOperator('operator');
    expect(
      (await refusal(cliAs(bystander)('approval', 'reject', approval.id, '--note', 'not mine'))).code,
    ).to.equal('APPROVER_ROLE_REQUIRED');
    const withdrawn = await cliAs(proposer)('approval', 'reject', approval.id, '--note', 'my mistake');
    expect(withdrawn.approval).to.include({ state: 'REJECTED', decided_by_id: proposer.id });
    expect((await getPayout(merchant, payoutId)).status).to.equal('PENDING_PAYMENT');
    expect((await auditOf(approval.id)).map((r) => r.outcome)).to.deep.equal(['PENDING', 'WITHDRAWN']);
  });

  it('refuses a second PENDING proposal of the same action on the same target, naming the open one', async () => {
    const payoutId = await heldPayout(merchant);
    const { approval } = await cliAs(proposer)('payout', 'fail', payoutId, '--note', 'first');
    const second = await refusal(cliAs(approver)('payout', 'fail', payoutId, '--note', 'second'));
    expect(second.code).to.equal('APPROVAL_ALREADY_PENDING');
    expect(second.message).to.include(approval.id);
    expect(JSON.stringify(second.details)).to.include(approval.id);

    // Many at once on another payout: one proposal.
    const other = await heldPayout(merchant);
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        trpcCall(
          'admin.settlement.failPayout',
          'mutation',
          { payout_id: other, note: `try ${i}` },
          proposer.token,
        ),
      ),
    );
    expect(results.filter((r) => r.status === 200)).to.have.length(1);
    for (const r of results.filter((r) => r.status !== 200)) {
      expect(r.body.error.data.app_code).to.equal('APPROVAL_ALREADY_PENDING');
    }

    // Once decided, the target may be proposed again.
    await cliAs(proposer)('approval', 'reject', approval.id, '--note', 'withdrawn');
    expect((await cliAs(proposer)('payout', 'fail', payoutId, '--note', 'again')).approval.state).to.equal(
      'PENDING',
    );
  });

  it('applies the strictest approval rule: above 1,500 NGN a held payout needs two approvers; a rule changes by a second admin, for later proposals only', async () => {
    const admin = cliAs(secondApprover);
    // Held with 2,000 NGN (above the threshold) and with 100 NGN (below).
    /** Root proposes the rule of this test: payout.fail above 1,500 NGN needs `approvers`. */
    const proposeRule = (approvers: number) =>
      cliAs()(
        'approval-rule',
        'propose',
        '--action',
        'payout.fail',
        '--above',
        '1500',
        '--currency',
        'NGN',
        '--approvers',
        String(approvers),
      );
    const big = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    await handledCredit((await payBank(big.instruction.account_unique, '2000.00')).session_id);
    const small = await heldPayout(merchant);
    const before = await cliAs(proposer)('payout', 'fail', big.id, '--note', 'proposed before the rule');

    const proposedRule = await proposeRule(2);
    expect(proposedRule.approval).to.include({
      action: 'approval_rule.set',
      state: 'PENDING',
      target_state: 'no such rule yet',
    });
    expect(proposedRule.approval.approver_roles).to.deep.equal(['admin']);
    expect((await refusal(cliAs(approver)('approval', 'approve', proposedRule.approval.id))).code).to.equal(
      'ADMIN_ROLE_REQUIRED',
    );
    await admin('approval', 'approve', proposedRule.approval.id);
    const rules = (await cliAs(proposer)('approval-rule', 'list', '--action', 'payout.fail')).data;
    expect(rules[0]).to.include({ id: null, approvers: 1 });
    expect(rules.find((r: { above: string | null }) => r.above === '1500')).to.include({
      currency: 'NGN',
      approvers: 2,
      approval_id: proposedRule.approval.id,
    });

    // Made before the rule: one approval, as then.
    expect(before.approval.required_approvers).to.equal(1);
    await cliAs()('approval', 'reject', before.approval.id, '--note', 'again under the rule');

    const needsTwo = (await cliAs(proposer)('payout', 'fail', big.id, '--note', 'under the rule')).approval;
    expect(needsTwo).to.include({ required_approvers: 2 });
    expect(needsTwo.rule_id).to.be.a('string');
    const needsOne = (await cliAs(proposer)('payout', 'fail', small, '--note', 'below the threshold'))
      .approval;
    expect(needsOne).to.include({ required_approvers: 1, rule_id: null });

    const first = (await cliAs(approver)('approval', 'approve', needsTwo.id)).approval;
    expect(first).to.include({ state: 'PENDING' });
    expect(first.approved_by_ids).to.deep.equal([approver.id]);
    expect((await getPayout(merchant, big.id)).status, 'one approval of two moves nothing').to.equal(
      'PENDING_PAYMENT',
    );
    expect((await refusal(cliAs(approver)('approval', 'approve', needsTwo.id))).code).to.equal(
      'SELF_APPROVAL_FORBIDDEN',
    );
    const second = (await admin('approval', 'approve', needsTwo.id)).approval;
    expect(second).to.include({ state: 'APPROVED', decided_by_id: secondApprover.id });
    expect((await getPayout(merchant, big.id)).status).to.equal('FAILED');
    expect((await auditOf(needsTwo.id)).map((r) => r.outcome)).to.deep.equal([
      'PENDING',
      'APPROVED_1_OF_2',
      'APPROVED',
    ]);

    // Changed back by another proposal: proposals made after need one approver again.
    const back = await proposeRule(1);
    expect(back.approval.target_state).to.equal('in force: 2 approvers (approver, admin)');
    await admin('approval', 'approve', back.approval.id);
    await cliAs()('approval', 'reject', needsOne.id, '--note', 'done with it');
    const another = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    await handledCredit((await payBank(another.instruction.account_unique, '2000.00')).session_id);
    expect(
      (await cliAs(proposer)('payout', 'fail', another.id, '--note', 'x')).approval.required_approvers,
    ).to.equal(1);
  });

  it("lists one operator's proposals and the decided ones on the server, a full page at a time", async () => {
    const mine = await newOperator('operator');
    const other = await newOperator('operator');
    const ids: string[] = [];
    for (const who of [mine, other, mine, mine]) {
      const payoutId = await heldPayout(merchant);
      ids.push((await cliAs(who)('payout', 'fail', payoutId, '--note', 'short, no top-up')).approval.id);
    }
    await cliAs(approver)('approval', 'reject', ids[2]!, '--note', 'wait for the top-up');
    const viewer = await newOperator('viewer');
    const list = async (input: Record<string, unknown>) => {
      const res = await trpcCall('admin.approvals.list', 'query', input, viewer.token);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      return res.body.result.data as {
        data: { id: string; state: string; proposer_id: string }[];
        meta: { next_cursor: string | null; has_more: boolean };
      };
    };
    // A page of one operator's proposals is full of them, newest first, and its cursor pages on.
    const first = await list({ proposer_id: mine.id, limit: 2 });
    expect(first.data.map((a) => a.id)).to.deep.equal([ids[3], ids[2]]);
    expect(first.meta.has_more).to.equal(true);
    const second = await list({ proposer_id: mine.id, limit: 2, cursor: first.meta.next_cursor });
    expect(second.data.map((a) => a.id)).to.deep.equal([ids[0]]);
    expect(second.meta.has_more).to.equal(false);
    // The cursor belongs to its filter.
    const foreign = await trpcCall(
      'admin.approvals.list',
      'query',
      { proposer_id: other.id, limit: 2, cursor: first.meta.next_cursor },
      viewer.token,
    );
    expect(foreign.body.error.data.app_code).to.equal('INVALID_CURSOR');
    // Decided: every state but PENDING; and one operator's decided ones.
    const decided = await list({ decided: true, limit: 100 });
    expect(decided.data.map((a) => a.state)).to.not.include('PENDING');
    expect(decided.data.map((a) => a.id))
      .to.include(ids[2])
      .and.not.include(ids[3]);
    const mineDecided = await list({ decided: true, proposer_id: mine.id });
    expect(mineDecided.data.map((a) => a.id)).to.deep.equal([ids[2]]);
    const minePending = await list({ decided: false, proposer_id: mine.id });
    expect(minePending.data.map((a) => a.id)).to.deep.equal([ids[3], ids[0]]);
    expect((await trpcCall('admin.approvals.list', 'query', { proposer_id: mine.id }, null)).status).to.equal(
      401,
    );
  });

  it('expires proposals nobody decided within APPROVAL_TTL_HOURS, through the approvals job', async () => {
    // One hour instead of 72: the clock is the whole run's, and other tests' rails read up to it.
    patchConfig({ APPROVAL_TTL_HOURS: 1 });
    const payoutId = await heldPayout(merchant);
    const early = await cliAs(proposer)('payout', 'fail', payoutId, '--note', 'will lapse');
    expect(new Date(early.approval.expires_at).getTime() - Date.parse(early.approval.created_at)).to.equal(
      3_600_000,
    );
    harness().clock.advance(3_600_000 - 1000);
    await runApprovalsOnce(deps());
    expect((await cliAs()('approval', 'show', early.approval.id)).state, 'not yet').to.equal('PENDING');

    // Lapsed, but the job has not come by yet: the approval is refused and records it EXPIRED.
    const late = await cliAs(proposer)('payout', 'fail', await heldPayout(merchant), '--note', 'lapses too');
    harness().clock.advance(1000);
    expect((await runApprovalsOnce(deps())).expired).to.be.greaterThan(0);
    const expired = await cliAs()('approval', 'show', early.approval.id);
    expect(expired).to.include({ state: 'EXPIRED', decided_by_id: null });
    expect((await refusal(cliAs(approver)('approval', 'approve', early.approval.id))).code).to.equal(
      'APPROVAL_NOT_PENDING',
    );

    harness().clock.advance(3_600_000);
    const refused = await refusal(cliAs(approver)('approval', 'approve', late.approval.id));
    expect(refused.code).to.equal('APPROVAL_NOT_PENDING');
    expect(refused.message).to.match(/expired/);
    expect((await cliAs()('approval', 'show', late.approval.id)).state).to.equal('EXPIRED');
    expect((await getPayout(merchant, payoutId)).status).to.equal('PENDING_PAYMENT');
  });

  it('requires a note on every proposal', async () => {
    const res = await trpcCall(
      'admin.settlement.failPayout',
      'mutation',
      { payout_id: crypto.randomUUID() },
      proposer.token,
    );
    expect(res.status).to.equal(400);
    // Required by the procedure's input type too, so that a tool written against AppRouter cannot
    // forget it (the console once did).
    expect(res.body.error.data.details).to.deep.equal([{ field: 'note', issue: 'is required' }]);
  });

  it('refuses a proposal whose target is not a UUID, before anything is written', async () => {
    const before = await deps().orm.em.fork().count(Approval, {});
    const proposals = [
      ['admin.settlement.attribute', { inflow_id: 'abc', payout_id: crypto.randomUUID() }, 'inflow_id'],
      ['admin.settlement.failPayout', { payout_id: "' OR 1=1 --" }, 'payout_id'],
      ['admin.settlement.returnInflow', { inflow_id: '0', reference: 'FT1' }, 'inflow_id'],
      ['admin.refunds.retry', { refund_id: `${crypto.randomUUID()}x` }, 'refund_id'],
    ] as const;
    for (const [path, input, field] of proposals) {
      const res = await trpcCall(path, 'mutation', { ...input, note: 'a typo' }, proposer.token);
      expect(res.status, path).to.equal(400);
      expect(res.body.error.data.details, path).to.deep.equal([{ field, issue: 'must be a UUID' }]);
    }
    expect(await deps().orm.em.fork().count(Approval, {})).to.equal(before);
  });

  it('refuses a proposal that its move would refuse now, with the move’s own error, and writes nothing', async () => {
    const held = await heldPayoutWithInflow(merchant);
    const stray = await strayInflow(merchant);
    const open = await payoutWithInstruction(merchant);
    const refund = await failedRefund({ corrected: false });
    const money = await heldMoney({ destination: false });
    const none = crypto.randomUUID();
    const heldInflowIssue =
      `is HELD and attributed to payout ${held.payoutId}; ` +
      'only UNMATCHED inflows and HELD inflows attributed to no payout can be decided';
    // [procedure, input, code, details (when the move gives some)]
    const cases: [string, Record<string, string>, string, unknown?][] = [
      ['admin.settlement.failPayout', { payout_id: none }, 'PAYOUT_NOT_FOUND'],
      [
        'admin.settlement.failPayout',
        { payout_id: open.id },
        'VALIDATION_FAILED',
        [{ field: 'payout_id', issue: 'is awaiting payment, not held for review' }],
      ],
      ['admin.settlement.attribute', { inflow_id: none, payout_id: stray.payoutId }, 'INFLOW_NOT_FOUND'],
      ['admin.settlement.attribute', { inflow_id: stray.inflowId, payout_id: none }, 'PAYOUT_NOT_FOUND'],
      [
        'admin.settlement.attribute',
        { inflow_id: stray.inflowId, payout_id: held.payoutId },
        'VALIDATION_FAILED',
        [{ field: 'payout_id', issue: 'settles in NGN, the inflow is USDT' }],
      ],
      [
        'admin.settlement.attribute',
        { inflow_id: held.inflowId, payout_id: open.id },
        'VALIDATION_FAILED',
        [{ field: 'inflow_id', issue: heldInflowIssue }],
      ],
      ['admin.settlement.returnInflow', { inflow_id: none, reference: 'FT1' }, 'INFLOW_NOT_FOUND'],
      [
        'admin.settlement.returnInflow',
        { inflow_id: held.inflowId, reference: 'FT1' },
        'VALIDATION_FAILED',
        [{ field: 'inflow_id', issue: heldInflowIssue }],
      ],
      ['admin.refunds.retry', { refund_id: none }, 'REFUND_NOT_FOUND'],
      [
        'admin.refunds.retry',
        { refund_id: refund.refundId },
        'VALIDATION_FAILED',
        [
          {
            field: 'refund_id',
            issue: 'the tenant’s active destination is the one that failed; it must be corrected first',
          },
        ],
      ],
      ['admin.refunds.raise', { payout_id: none }, 'PAYOUT_NOT_FOUND'],
      [
        'admin.refunds.raise',
        { payout_id: held.payoutId },
        'VALIDATION_FAILED',
        [{ field: 'payout_id', issue: 'is PENDING_PAYMENT; only a FAILED payout is refunded' }],
      ],
      [
        'admin.refunds.raise',
        { payout_id: money.payoutId },
        'VALIDATION_FAILED',
        [
          {
            field: 'payout_id',
            issue:
              'belongs to a tenant with no active NGN refund destination; raise it once the merchant has registered one',
          },
        ],
      ],
      [
        'admin.refunds.raise',
        { payout_id: refund.payoutId },
        'VALIDATION_FAILED',
        [
          {
            field: 'payout_id',
            issue: `has its refund already (${refund.refundId}); a payout is refunded once`,
          },
        ],
      ],
    ];
    const before = await rowCounts();
    const counted = await transitionsCounted();
    for (const [path, input, code, details] of cases) {
      const label = `${path} ${JSON.stringify(input)}`;
      const res = await trpcCall(path, 'mutation', { ...input, note: 'never possible' }, proposer.token);
      expectTrpcRefusal(res.status, JSON.stringify(res.body), label);
      expect(res.body.error.data.app_code, label).to.equal(code);
      if (details) expect(res.body.error.data.details, label).to.deep.equal(details);
    }
    // No proposal, no audit row (a refused call changes nothing), nothing of the rehearsals.
    expect(rowsChanged(before, await rowCounts())).to.deep.equal({});
    expect(await transitionsCounted(), 'no transition counted').to.equal(counted);
  });

  it('keeps a proposal that would run PENDING, writing the proposal alone, and runs it once approved', async () => {
    const held = await heldPayoutWithInflow(merchant);
    const attributable = await strayInflow(merchant);
    const returnable = await strayInflow(merchant);
    const refund = await failedRefund({ corrected: true });
    const money = await heldMoney({ destination: true });
    const em = () => deps().orm.em.fork();
    const states = async () => ({
      held: (await getPayout(merchant, held.payoutId)).status,
      attributed: (await em().findOneOrFail(Inflow, attributable.inflowId)).snapshot,
      open: (await getPayout(merchant, attributable.payoutId)).status_timeline.length,
      returned: (await em().findOneOrFail(Inflow, returnable.inflowId)).snapshot,
      refund: await em()
        .findOneOrFail(Refund, refund.refundId)
        .then((r) => [r.status, r.attemptNumber]),
      money: (await payoutOf(money.merchant, money.payoutId)).is_refunded,
    });
    const proposals: [string, Record<string, string>][] = [
      ['admin.settlement.failPayout', { payout_id: held.payoutId }],
      ['admin.settlement.attribute', { inflow_id: attributable.inflowId, payout_id: attributable.payoutId }],
      ['admin.settlement.returnInflow', { inflow_id: returnable.inflowId, reference: 'FT1' }],
      ['admin.refunds.retry', { refund_id: refund.refundId }],
      ['admin.refunds.raise', { payout_id: money.payoutId }],
    ];
    const unchanged = await states();
    const before = await rowCounts();
    const counted = await transitionsCounted();
    const ids: string[] = [];
    for (const [path, input] of proposals) {
      const res = await trpcCall(path, 'mutation', { ...input, note: 'possible now' }, proposer.token);
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).to.equal(200);
      expect(res.body.result.data.approval, path).to.include({ state: 'PENDING', result: null });
      ids.push(res.body.result.data.approval.id);
    }
    // The proposals and their audit rows, and nothing else: the rehearsals left no trace.
    expect(rowsChanged(before, await rowCounts())).to.deep.equal({ approvals: 5, audit: 5 });
    expect(await states()).to.deep.equal(unchanged);
    expect(await transitionsCounted(), 'no transition counted').to.equal(counted);

    // Each runs once approved, named on the rows it writes by the very proposal id it was rehearsed under.
    const results = [];
    for (const id of ids) {
      const { approval } = await cliAs(approver)('approval', 'approve', id);
      expect(approval, approval.action).to.include({ state: 'APPROVED', id });
      results.push(approval.result);
    }
    expect(results[0].payout).to.include({ id: held.payoutId, status: 'FAILED' });
    expect((await rowsOfApproval(held.payoutId, ids[0]!))[0]?.metadata).to.include({
      proposer_id: proposer.id,
    });
    expect(results[1].inflow).to.include({ id: attributable.inflowId, payout_id: attributable.payoutId });
    expect(results[2].inflow).to.include({ id: returnable.inflowId, state: 'RETURNED' });
    expect(results[3].refund).to.include({ id: refund.refundId, status: 'PENDING', attempt_number: 2 });
    expect(results[4].refund).to.include({ payout_id: money.payoutId, status: 'PENDING' });
    expect(await transitionsCounted()).to.be.greaterThan(counted);
  });

  it('rehearses a move on an EntityManager of its own: the proposal’s holds the proposal alone', async () => {
    const payoutId = await heldPayout(merchant);
    const em = deps().orm.em.fork();
    const approval = await proposeMove(
      {
        deps: deps(),
        operator: { id: proposer.id, name: proposer.name, role: proposer.role },
        audit: new AuditNote(),
        commit: (work) => em.transactional(work),
      },
      settlementMoves['payout.fail'],
      { payout_id: payoutId },
      'straight to the service',
    );
    expect(approval.status).to.equal('PENDING');
    const managed = em
      .getUnitOfWork()
      .getIdentityMap()
      .values()
      .map((e) => e.constructor.name);
    expect([...new Set(managed)]).to.deep.equal(['Approval']);
    expect((await getPayout(merchant, payoutId)).status).to.equal('PENDING_PAYMENT');
  });

  it('with FOUR_EYES=false, runs the move at once and records it as approved by its proposer', async () => {
    const payoutId = await heldPayout(merchant);
    patchConfig({ FOUR_EYES: false });
    const { approval } = await cliAs(proposer)('payout', 'fail', payoutId, '--note', 'alone on shift');
    expect(approval).to.include({
      state: 'APPROVED',
      proposer_id: proposer.id,
      decided_by_id: proposer.id,
    });
    expect(approval.result.payout).to.include({ id: payoutId, status: 'FAILED' });
    expect((await rowsOfApproval(payoutId, approval.id))[0]?.metadata).to.deep.include({
      operator_id: proposer.id,
    });
    expect((await auditOf(approval.id)).map((r) => r.outcome)).to.deep.equal(['APPROVED']);
    // A refused move leaves no proposal behind.
    const refused = await refusal(cliAs(proposer)('payout', 'fail', payoutId, '--note', 'again'));
    expect(refused.code).to.equal('VALIDATION_FAILED');
  });
});
