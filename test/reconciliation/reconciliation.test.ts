import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import { AuditEntry } from '#src/audit/entities.ts';
import { statement } from '#src/db/sql.ts';
import { Outflow } from '#src/dispatch/entities.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { accountName } from '#src/ledger/chart.ts';
import { LedgerEntry } from '#src/ledger/entities.ts';
import { dayOf } from '#src/lib/days.ts';
import { toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import { ReconRun } from '#src/reconciliation/entities.ts';
import { runReconciliationOnce } from '#src/reconciliation/job.ts';
import { dayLineCount, pullSettlementChanges } from '#src/reconciliation/records.ts';
import { runDueReconciliations } from '#src/reconciliation/service.ts';
import { Refund } from '#src/refunds/entities.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { Inflow } from '#src/settlement/entities.ts';
import type { Merchant } from '../client.ts';
import { call } from '../client.ts';
import {
  callbacksDelivered,
  deps,
  dispatch,
  eventually,
  failedPayoutWithRefund,
  merchantWith,
  mine,
  paidPayout,
  payoutTo,
} from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import {
  holdings,
  ledgerOf,
  movements,
  perCurrency,
  priceOf,
  statementOf,
  violationsOf,
} from '../ledger/fixtures.ts';
import { cliAs, newOperator, refusal, type TestOperator } from '../operators/fixtures.ts';
import { payBank, sandbox } from '../settlement/fixtures.ts';

/** The payout's one outflow, once the processor's callback made it final. */
async function paidOut(
  merchant: Merchant,
  suffix: string,
  options: { settlement?: 'NGN' | 'USDT'; overpay?: string } = {},
): Promise<{ payoutId: string; outflowId: string }> {
  const payoutId = await paidPayout(merchant, payoutTo(suffix, options.settlement ?? 'NGN'), {
    overpay: options.overpay,
  });
  const [outflow] = await dispatch(merchant, payoutId);
  await callbacksDelivered(outflow.id);
  await eventually('the payout to succeed', async () => {
    const payout = await deps().orm.em.fork().findOneOrFail(Payout, payoutId);
    return payout.status === 'SUCCESSFUL';
  });
  return { payoutId, outflowId: outflow.id };
}

const today = () => dayOf(harness().clock.now());

/** Three days on, the processor's report says the payout (a `1005`) was returned: its open break's id. */
async function returnedByProcessor(payoutId: string): Promise<string> {
  harness().clock.advance(3 * 86_400_000 + 1000);
  await cliAs()('recon', 'run', '--date', today(), '--rail', 'PROCESSOR');
  const open = await cliAs()('recon', 'breaks', '--open', '--limit', '100');
  const found = open.data.filter((b: any) => b.payout_id === payoutId);
  expect(found, 'one break for the payout').to.have.length(1);
  expect(found[0]).to.include({ kind: 'STATE_DIFFERS', rail_state: 'RETURNED' });
  return found[0].id;
}

/** Sends the payout's refund (on TRON) and confirms it. */
async function refundDelivered(payoutId: string): Promise<void> {
  await runRefundsOnce(deps());
  await mine('TRON', deps().config.CONFIRMATIONS_TRON);
  harness().clock.advance(10_000);
  await runRefundsOnce(deps());
  const refund = await deps().orm.em.fork().findOneOrFail(Refund, { payout: payoutId });
  expect(refund.status).to.equal('SUCCESSFUL');
}

const processorLine = statement(
  'test_recon_processor_line',
  'select status, returned_at from recon_processor_lines where reference = $1',
);
const processorKept = statement(
  'test_recon_processor_kept',
  'select count(*)::int as n from recon_processor_lines where reference = any($1::text[])',
);
const processorCursor = statement(
  'test_recon_processor_cursor',
  "select cursor from rail_cursors where source = 'RECON_PROCESSOR'",
);

describe('reconciliation against the rails (recon run, recon list, recon breaks)', () => {
  let merchant: Merchant;
  let operator: TestOperator;
  let approver: TestOperator;
  before(async () => {
    merchant = await merchantWith();
    operator = await newOperator('operator');
    approver = await newOperator('approver');
  });

  it('finds a payout the processor returned days after its success, and refunds it under four eyes', async () => {
    const { payoutId, outflowId } = await paidOut(merchant, '1005');
    const settledOn = today();
    const first = await cliAs(operator)('recon', 'run', '--date', settledOn, '--rail', 'PROCESSOR');
    expect(first.busy).to.deep.equal([]);
    expect(first.runs).to.have.length(1);
    expect(first.runs[0]).to.include({
      day: settledOn,
      rail: 'PROCESSOR',
      state: 'DONE',
      rail_complete: false,
    });
    const account = first.runs[0].accounts.find(
      (a: any) => a.account === 'transit:processor:payout-processor',
    );
    expect(account.matched_count).to.be.greaterThan(0);
    const before = await cliAs(operator)('recon', 'breaks', '--limit', '100');
    expect(before.data.filter((b: any) => b.reference === outflowId)).to.deep.equal([]);

    // Three days later the processor's report says RETURNED; the books still say paid.
    harness().clock.advance(3 * 86_400_000 + 1000);
    const returnedOn = today();
    const run = await cliAs(operator)('recon', 'run', '--date', returnedOn, '--rail', 'PROCESSOR');
    expect(run.runs[0]).to.include({ day: returnedOn, state: 'DONE' });
    const open = await cliAs(operator)('recon', 'breaks', '--open', '--limit', '100');
    const found = open.data.filter((b: any) => b.reference === outflowId);
    expect(found).to.have.length(1);
    expect(found[0]).to.include({
      kind: 'STATE_DIFFERS',
      rail: 'PROCESSOR',
      ledger_state: 'SUCCESSFUL',
      rail_state: 'RETURNED',
      payout_id: payoutId,
      outflow_id: outflowId,
      currency: 'NGN',
      ledger_amount: '150000',
      rail_amount: '150000',
      status: 'OPEN',
    });
    // The settling day, run again, finds the same difference: one break, not two.
    const again = await cliAs(operator)('recon', 'run', '--date', settledOn, '--rail', 'PROCESSOR');
    expect(again.runs[0]).to.include({ id: first.runs[0].id, attempts: first.runs[0].attempts + 1 });
    const still = await cliAs(operator)('recon', 'breaks', '--open', '--limit', '100');
    expect(still.data.filter((b: any) => b.reference === outflowId)).to.have.length(1);

    const breakId = found[0].id;
    // Money moves only under four eyes: explaining it away alone is refused for no reason of
    // the break's, but a refund is a proposal.
    const proposed = await cliAs(operator)(
      'recon',
      'propose',
      breakId,
      '--resolution',
      'REFUNDED_RETURN',
      '--note',
      'GTBank returned it: account closed after payment',
    );
    expect(proposed.approval).to.include({ action: 'recon.resolve', state: 'PENDING' });
    expect(proposed.approval.target_ids).to.deep.equal([breakId]);
    expect(
      (await cliAs(operator)('recon', 'breaks', '--open', '--limit', '100')).data.map((b: any) => b.id),
    ).to.include(breakId);
    const own = await refusal(cliAs(operator)('approval', 'approve', proposed.approval.id));
    expect(own.code).to.be.oneOf(['APPROVER_ROLE_REQUIRED', 'SELF_APPROVAL_FORBIDDEN']);

    const approved = await cliAs(approver)('approval', 'approve', proposed.approval.id);
    expect(approved.approval).to.include({ state: 'APPROVED', decided_by_id: approver.id });
    expect(approved.approval.result).to.include({
      break_id: breakId,
      status: 'RESOLVED',
      resolution: 'REFUNDED_RETURN',
    });
    const resolved = await cliAs(operator)('recon', 'breaks', '--limit', '100');
    expect(resolved.data.find((b: any) => b.id === breakId)).to.include({
      status: 'RESOLVED',
      resolution: 'REFUNDED_RETURN',
      resolution_note: 'GTBank returned it: account closed after payment',
      resolved_by: approver.id,
      approval_id: proposed.approval.id,
    });
    await runRefundsOnce(deps());
    await runRefundsOnce(deps());
    // The returned money came back into the payout and left again as its refund: in balance.
    const statement = await cliAs(operator)('ledger', 'payout', payoutId);
    expect(
      statement.entries.filter((e: any) => e.movement === 'returned').map((e: any) => e.amount),
    ).to.deep.equal(['150000']);
    // The merchant sees it too, named after the payout (the approval behind it is the operators').
    const moves = await call('GET', `/v1/payouts/${payoutId}/money-movements`, { key: merchant.key });
    expect(moves.status, moves.text).to.equal(200);
    expect(moves.body.filter((m: any) => m.type === 'returned').map((m: any) => m.source)).to.deep.equal([
      { object: 'payout', id: payoutId },
    ]);
    const checked = await cliAs(operator)('ledger', 'check', '--all');
    expect(checked.violations.filter((v: any) => v.subject === payoutId)).to.deep.equal([]);
    const refund = await deps().orm.em.fork().findOneOrFail(Refund, { payout: payoutId });
    expect(approved.approval.result.refund_id).to.equal(refund.id);
    expect(refund.status).to.be.oneOf(['PENDING', 'PROCESSING', 'SUCCESSFUL']);
    const audited = await deps()
      .orm.em.fork()
      .find(AuditEntry, { targetIds: { $contains: [breakId] } }, { orderBy: { createdAt: 'asc' } });
    expect(audited.map((a) => a.action)).to.deep.equal(['admin.recon.propose', 'admin.approvals.approve']);
  });

  it('refunds an overpaid payout the processor returned with its set-aside overpayment, owed no more', async () => {
    const payer = await merchantWith();
    const { payoutId } = await paidOut(payer, '1005', { settlement: 'USDT', overpay: '2.5' });
    expect((await ledgerOf(payoutId)).set_aside).to.deep.equal([{ currency: 'USDT', amount: '2.5' }]);
    const breakId = await returnedByProcessor(payoutId);
    const proposed = await cliAs(operator)(
      'recon',
      'propose',
      breakId,
      '--resolution',
      'REFUNDED_RETURN',
      '--note',
      'returned: account closed',
    );
    const approved = await cliAs(approver)('approval', 'approve', proposed.approval.id);
    expect(approved.approval.result).to.include({ status: 'RESOLVED', resolution: 'REFUNDED_RETURN' });

    const price = await priceOf(payoutId);
    const refund = await deps().orm.em.fork().findOneOrFail(Refund, { payout: payoutId });
    expect(refund.kind).to.equal('SETTLEMENT');
    expect(refund.receivedAmount.toFixed()).to.equal(toDecimal(price.settlement).plus('2.5').toFixed());
    // The excess comes back from the merchant's overpayments account, in the resolution's
    // transaction: it is refunded with the rest, and owed no more.
    const taken = await ledgerOf(payoutId);
    expect(taken.set_aside).to.deep.equal([{ currency: 'USDT', amount: '0' }]);
    const back = taken.entries.filter(
      (e) => e.account === accountName('overpayments', { tenant: payer.tenantId }) && e.amount === '-2.5',
    );
    expect(back).to.have.length(1);
    expect(back[0]!.cause).to.include({ object: 'approval', id: proposed.approval.id });
    expect(back[0]!.cause.transition).to.include('RESOLVE');
    expect(movements(taken)).to.include.members([
      'returned NGN 150000',
      'conversion NGN -150000',
      `conversion USDT ${price.settlement}`,
      'overpayment_set_aside USDT 2.5',
    ]);
    // The conversion account carries the fees the service kept, not the excess.
    expect(
      perCurrency(taken.entries.filter((e) => e.account === accountName('conversion', {}))),
    ).to.deep.equal({
      USDT: toDecimal(price.platform).plus(price.network).negated().toFixed(),
    });
    expect(await violationsOf(payoutId)).to.deep.equal([]);

    await refundDelivered(payoutId);
    const final = await ledgerOf(payoutId);
    expect(holdings(final)).to.deep.equal([]);
    expect(perCurrency(await statementOf(payer, payoutId)), 'its statement sums to zero').to.deep.equal({});
    const owed = await cliAs(operator)(
      'ledger',
      'balances',
      '--prefix',
      `tenants:${payer.tenantId}:to_return:`,
    );
    expect(owed.data.every((b: { balance: string }) => toDecimal(b.balance).isZero())).to.equal(true);
    expect(await violationsOf(payoutId)).to.deep.equal([]);
    // No second return of the overpayment: the payout has its refund.
    const twice = await refusal(cliAs(operator)('overpayment', 'return', payoutId, '--note', 'again'));
    expect(JSON.stringify(twice.details)).to.include('has a refund already');
  });

  it('refuses to refund a returned payout whose overpayment went back first, keeping the books whole', async () => {
    const payer = await merchantWith();
    const { payoutId } = await paidOut(payer, '1005', { settlement: 'USDT', overpay: '2.5' });
    const proposed = await cliAs(operator)('overpayment', 'return', payoutId, '--note', 'merchant asked');
    await cliAs(approver)('approval', 'approve', proposed.approval.id);
    await refundDelivered(payoutId);

    const breakId = await returnedByProcessor(payoutId);
    const refused = await refusal(
      cliAs(operator)('recon', 'propose', breakId, '--resolution', 'REFUNDED_RETURN', '--note', 'returned'),
      'a refund of a payout whose overpayment went back',
    );
    expect(refused.code).to.equal('VALIDATION_FAILED');
    expect(JSON.stringify(refused.details)).to.include('overpayment went back already');
    const open = await cliAs(operator)('recon', 'breaks', '--open', '--limit', '100');
    expect(
      open.data.map((b: any) => b.id),
      'the break waits for an operator',
    ).to.include(breakId);

    // Nothing moved: the payout is as it was once its overpayment went back, in balance.
    const ledger = await ledgerOf(payoutId);
    expect(ledger.set_aside).to.deep.equal([{ currency: 'USDT', amount: '0' }]);
    expect(movements(ledger).filter((m) => m.startsWith('returned'))).to.deep.equal([]);
    expect(holdings(ledger)).to.deep.equal([]);
    expect(perCurrency(await statementOf(payer, payoutId))).to.deep.equal({});
    expect(await violationsOf(payoutId)).to.deep.equal([]);

    // Explained by one operator once handled by hand, it leaves the queue; the books stay as they are.
    await cliAs(operator)('recon', 'resolve', breakId, '--note', 'processor re-sent it to the beneficiary');
    const after = await cliAs(operator)('recon', 'breaks', '--open', '--limit', '100');
    expect(after.data.map((b: any) => b.id)).to.not.include(breakId);
    expect(await violationsOf(payoutId)).to.deep.equal([]);
  });

  it('finds a payout missing from the processor’s report, which one operator explains with a note', async () => {
    const { outflowId } = await paidOut(merchant, '1006');
    await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'PROCESSOR');
    const open = await cliAs(operator)('recon', 'breaks', '--open', '--limit', '100');
    const found = open.data.find((b: any) => b.reference === outflowId);
    expect(found).to.include({
      kind: 'MISSING_ON_RAIL',
      ledger_state: 'SUCCESSFUL',
      rail_state: null,
      rail_amount: null,
    });
    const resolved = await cliAs(operator)(
      'recon',
      'resolve',
      found.id,
      '--note',
      'processor re-issued its report',
    );
    expect(resolved).to.include({
      status: 'RESOLVED',
      resolution: 'EXPLAINED',
      resolved_by: operator.id,
      approval_id: null,
    });
    const twice = await refusal(cliAs(operator)('recon', 'resolve', found.id, '--note', 'again'));
    expect(twice.code).to.equal('VALIDATION_FAILED');
    // A run that finds it again leaves it resolved.
    await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'PROCESSOR');
    const after = await cliAs(operator)('recon', 'breaks', '--limit', '100');
    expect(after.data.filter((b: any) => b.reference === outflowId).map((b: any) => b.status)).to.deep.equal([
      'RESOLVED',
    ]);
  });

  it('finds a statement amount that differs from the notification, and a credit the bank reversed', async () => {
    const created = await call('POST', '/v1/payouts', { key: merchant.key, body: payoutTo('4321', 'NGN') });
    expect(created.status, created.text).to.equal(201);
    await runInstructionsOnce(deps());
    const instruction = await deps()
      .orm.em.fork()
      .findOneOrFail(PaymentInstruction, { payout: created.body.id });
    const short = await sandbox('/sandbox/bank/transfers', {
      account_number: instruction.accountUnique,
      amount: '100.00',
      statement_amount: '90.00',
      currency: 'NGN',
    });
    expect(short.status, short.text).to.equal(201);
    const paid = await payBank(instruction.accountUnique, '200.00');
    // Recorded and matched to the payout: the reversal's break names the payout its credit went to.
    await eventually('both credits to be recorded against the payout', async () => {
      const n = await deps()
        .orm.em.fork()
        .count(Inflow, {
          externalRef: { $in: [short.body.session_id, paid.session_id] },
          payout: created.body.id,
        });
      return n === 2;
    });
    const reversed = await sandbox(`/sandbox/bank/credits/${paid.session_id}/reversal`, {});
    expect(reversed.status).to.equal(201);

    const run = await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'BANK_TRANSFER');
    expect(run.runs[0]).to.include({ rail: 'BANK_TRANSFER', state: 'DONE' });
    const breaks = (await cliAs(operator)('recon', 'breaks', '--open', '--limit', '100')).data;
    expect(breaks.find((b: any) => b.reference === short.body.session_id)).to.include({
      kind: 'AMOUNT_DIFFERS',
      account: `collection:bank:${instruction.accountUnique}`,
      ledger_amount: '100',
      rail_amount: '90',
    });
    const reversal = breaks.find((b: any) => b.reference === paid.session_id);
    expect(reversal).to.include({
      kind: 'STATE_DIFFERS',
      account: `collection:bank:${instruction.accountUnique}`,
      ledger_state: 'CREDITED',
      rail_state: 'REVERSED',
    });

    // The books follow the rail, under four eyes: the reversed money is booked as missing.
    const proposed = await cliAs(operator)(
      'recon',
      'propose',
      reversal.id,
      '--resolution',
      'BOOKED_RAIL',
      '--note',
      'payer bank recalled the credit',
    );
    const approved = await cliAs(approver)('approval', 'approve', proposed.approval.id);
    expect(approved.approval.result).to.include({ status: 'RESOLVED', resolution: 'BOOKED_RAIL' });
    const entries = await deps()
      .orm.em.fork()
      .find(LedgerEntry, { causeId: proposed.approval.id }, { orderBy: { amount: 'asc' } });
    // The credit was the payout's: its statement shows the reversal, and the service advances it,
    // so the payout keeps what it received and the difference is the service's.
    const payoutAccount = `tenants:${merchant.tenantId}:payouts:${created.body.id}`;
    expect(reversal.payout_id).to.equal(created.body.id);
    expect(
      entries
        .map((e) => `${e.account} ${e.currency} ${e.amount.toFixed()} ${e.movement} ${e.payoutId}`)
        .sort(),
    ).to.deep.equal(
      [
        `adjustments:rails:BANK_TRANSFER NGN -200 null ${created.body.id}`,
        `collection:bank:${instruction.accountUnique} NGN 200 null ${created.body.id}`,
        `${payoutAccount} NGN -200 reversed ${created.body.id}`,
        `${payoutAccount} NGN 200 reversal_covered ${created.body.id}`,
      ].sort(),
    );
    expect(new Set(entries.map((e) => e.approvalId))).to.deep.equal(new Set([proposed.approval.id]));
    const statement = await call('GET', `/v1/payouts/${created.body.id}/money-movements`, {
      key: merchant.key,
    });
    expect(statement.status, statement.text).to.equal(200);
    const reversedMoves = statement.body.filter((m: any) => m.type.startsWith('revers'));
    expect(reversedMoves.map((m: any) => `${m.type} ${m.amount} ${m.currency}`)).to.deep.equal([
      'reversed -200 NGN',
      'reversal_covered 200 NGN',
    ]);
    for (const m of reversedMoves) expect(m.source).to.deep.equal({ object: 'payout', id: created.body.id });
    const byType = await call('GET', `/v1/money-movements?type=reversed&payout_id=${created.body.id}`, {
      key: merchant.key,
    });
    expect(byType.body.data.map((m: any) => m.amount)).to.deep.equal(['-200']);
    // The statement's amount still differs from the books: the ledger's check finds the bank's
    // collection out of step with its rail, as the run read them.
    const checked = await cliAs(operator)('ledger', 'check');
    const off = checked.violations.find(
      (v: any) => v.check === 'COLLECTION_MATCHES_RAIL' && v.subject === 'collection:bank:NGN',
    );
    expect(off.detail).to.include({ reconciliation_run: run.runs[0].id });
    expect(off.detail.rail_shows).to.not.equal(off.detail.ledger_shows);
    // The payout holds what its state says, reversal and all.
    expect(checked.violations.filter((v: any) => v.subject === created.body.id)).to.deep.equal([]);
    // A processor's break is not booked this way.
    const processor = (await cliAs(operator)('recon', 'breaks', '--open', '--limit', '100')).data.find(
      (b: any) => b.rail === 'PROCESSOR',
    );
    if (processor) {
      const refused = await refusal(
        cliAs(operator)('recon', 'propose', processor.id, '--resolution', 'BOOKED_RAIL', '--note', 'no'),
      );
      expect(refused.code).to.equal('VALIDATION_FAILED');
    }
  });

  it('matches the chains’ transfers with the books, and runs every rail when none is named', async () => {
    const usdt = await paidPayout(merchant, payoutTo('7788', 'USDT'));
    const inflow = await deps().orm.em.fork().find(Inflow, { payout: usdt });
    const all = await cliAs(operator)('recon', 'run', '--date', today());
    expect(all.runs.map((r: any) => r.rail).sort()).to.deep.equal(['BANK_TRANSFER', 'CRYPTO', 'PROCESSOR']);
    const crypto = all.runs.find((r: any) => r.rail === 'CRYPTO');
    const address = inflow[0]!.toAccount;
    const line = crypto.accounts.find((a: any) => a.account === `collection:crypto:TRON:${address}`);
    expect(line.matched_count).to.be.greaterThan(0);
    // Everything the chain ever showed arriving on the address: the inflows recorded for it.
    const received = await deps().orm.em.fork().find(Inflow, { toAccount: address, rail: 'CRYPTO' });
    expect(line.rail_balance).to.equal(
      received.reduce((sum, i) => sum.plus(i.amount), toDecimal(0)).toFixed(),
    );
    // The ledger received on the address exactly what the chain shows.
    expect(line.ledger_balance).to.equal(line.rail_balance);
    const bank = all.runs.find((r: any) => r.rail === 'BANK_TRANSFER');
    expect(bank.accounts.find((a: any) => a.account === 'collection:bank').rail_balance).to.be.a('string');
    const processor = all.runs.find((r: any) => r.rail === 'PROCESSOR');
    expect(processor.accounts.every((a: any) => a.rail_balance === null)).to.equal(true);
    const breaks = (await cliAs(operator)('recon', 'breaks', '--limit', '100')).data;
    expect(breaks.filter((b: any) => b.reference === inflow[0]!.externalRef)).to.deep.equal([]);
    const list = await cliAs(operator)('recon', 'list', '--limit', '5');
    expect(list.data.map((r: any) => r.id)).to.include(crypto.id);
  });

  it('matches a refund the bank sent with the debit on its statement, and finds a debit the books lack', async () => {
    const { refund } = await failedPayoutWithRefund(await merchantWith(), 'NGN');
    expect(refund.status).to.equal('SUCCESSFUL');
    const reference = `${refund.id}:${refund.attemptNumber}`;
    // Money the bank sent under a reference the service never used.
    const stray = `${randomUUID()}:1`;
    const sent = await sandbox('/bank/transfers', {
      reference: stray,
      bank_code: '058',
      account_number: '0123456789',
      account_name: 'Ada Obi',
      amount: '2500.00',
      narration: 'not ours',
    });
    expect(sent.status, sent.text).to.equal(201);

    const run = await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'BANK_TRANSFER');
    const refunds = run.runs[0].accounts.find((a: any) => a.account === 'transit:refunds:BANK');
    expect(refunds.matched_count).to.be.greaterThan(0);
    expect(refunds.rail_balance, 'money sent is no collection balance').to.equal(null);
    const breaks = (await cliAs(operator)('recon', 'breaks', '--limit', '100')).data;
    expect(breaks.filter((b: any) => b.reference === reference)).to.deep.equal([]);
    expect(breaks.find((b: any) => b.reference === stray)).to.include({
      kind: 'MISSING_IN_LEDGER',
      rail: 'BANK_TRANSFER',
      account: 'transit:refunds:BANK',
      rail_amount: '2500',
      rail_state: 'SUCCESSFUL',
    });
  });

  it('finds a refund the bank sent with another amount than the ledger’s', async () => {
    const ngn = await merchantWith();
    const { payoutId, refund: raised } = await failedPayoutWithRefund(ngn, 'NGN', { send: false });
    const reference = `${raised.id}:${raised.attemptNumber}`;
    // The bank already holds a transfer under the refund's reference, for 1,000 NGN less: the
    // service's send finds it (sends are idempotent on the reference), and the money that left is
    // not what the ledger says left.
    const wrong = raised.refundAmount.minus(1000).toFixed();
    const sent = await sandbox('/bank/transfers', {
      reference,
      bank_code: raised.destinationBankCode,
      account_number: raised.destinationAccount,
      account_name: raised.destinationAccountName ?? 'Ada Obi',
      amount: wrong,
      narration: 'refund',
    });
    expect(sent.status, sent.text).to.equal(201);
    await runRefundsOnce(deps());
    const refund = await deps().orm.em.fork().findOneOrFail(Refund, raised.id);
    expect(refund.status).to.equal('SUCCESSFUL');
    const delivered = await deps()
      .orm.em.fork()
      .find(LedgerEntry, { causeId: refund.id, account: `world:merchants:${ngn.tenantId}` });
    expect(delivered.map((e) => e.amount.toFixed())).to.deep.equal([refund.refundAmount.toFixed()]);
    // A refund row that says what the bank moved hides nothing: the ledger says otherwise.
    await deps()
      .orm.em.fork()
      .nativeUpdate(Refund, { id: refund.id }, { refundAmount: toDecimal(wrong) });

    await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'BANK_TRANSFER');
    const breaks = (await cliAs(operator)('recon', 'breaks', '--open', '--limit', '100')).data;
    expect(breaks.filter((b: any) => b.reference === reference)).to.have.length(1);
    expect(breaks.find((b: any) => b.reference === reference)).to.include({
      kind: 'AMOUNT_DIFFERS',
      rail: 'BANK_TRANSFER',
      account: 'transit:refunds:BANK',
      ledger_amount: refund.refundAmount.toFixed(),
      rail_amount: wrong,
      ledger_state: 'SUCCESSFUL',
      rail_state: 'SUCCESSFUL',
      payout_id: payoutId,
    });
  });

  it('reconciles the refunds sent on a chain with the ledger, and finds one sent with another amount', async () => {
    const usdt = await merchantWith();
    const address = `0x${randomBytes(20).toString('hex')}`;
    const set = await call('PUT', '/v1/refund-destinations', {
      key: usdt.key,
      body: { currency: 'USDT', type: 'CRYPTO_ADDRESS', network: 'BSC', address },
    });
    expect(set.status, set.text).to.equal(200);
    const raised = async (): Promise<Refund> =>
      (await failedPayoutWithRefund(usdt, 'USDT', { send: false })).refund;
    const right = await raised();
    const wrong = await raised();
    const rightRef = `${right.id}:${right.attemptNumber}`;
    const wrongRef = `${wrong.id}:${wrong.attemptNumber}`;
    // The hot wallet already sent under the second refund's reference, 1 USDT less: the service's
    // send finds it, and the money that left is not what the ledger says left.
    const short = wrong.refundAmount.minus(1).toFixed();
    const sent = await sandbox('/chains/BSC/sends', {
      reference: wrongRef,
      to_address: address,
      amount: short,
    });
    expect(sent.status, sent.text).to.equal(201);
    await runRefundsOnce(deps());
    await mine('BSC', 1);
    harness().clock.advance(10_000);
    await runRefundsOnce(deps());
    const refunds = await deps()
      .orm.em.fork()
      .find(Refund, { id: { $in: [right.id, wrong.id] } });
    expect(refunds.map((r) => r.status)).to.deep.equal(['SUCCESSFUL', 'SUCCESSFUL']);

    const run = await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'CRYPTO');
    const sends = run.runs[0].accounts.find((a: any) => a.account === 'transit:refunds:BSC');
    expect(sends.matched_count, 'the refund sent as the ledger says matches').to.be.greaterThan(0);
    expect(sends.rail_balance, 'money sent is no collection balance').to.equal(null);
    const breaks = (await cliAs(operator)('recon', 'breaks', '--limit', '100')).data;
    expect(breaks.filter((b: any) => b.reference === rightRef)).to.deep.equal([]);
    expect(breaks.find((b: any) => b.reference === wrongRef)).to.include({
      kind: 'AMOUNT_DIFFERS',
      rail: 'CRYPTO',
      account: 'transit:refunds:BSC',
      ledger_amount: wrong.refundAmount.toFixed(),
      rail_amount: short,
      ledger_state: 'SUCCESSFUL',
      rail_state: 'SUCCESSFUL',
      status: 'OPEN',
    });
  });

  it('compares the rails with the ledger’s entries, not with the inflow and outflow rows', async () => {
    const ngn = await merchantWith();
    const { payoutId, outflowId } = await paidOut(ngn, '4410');
    const [inflow] = await deps().orm.em.fork().find(Inflow, { payout: payoutId });
    // Rows that say something else than the ledger and the rails: the ledger's entries, which
    // agree with the rails, are what a run compares.
    await deps()
      .orm.em.fork()
      .nativeUpdate(Inflow, { id: inflow!.id }, { amount: inflow!.amount.plus(7) });
    await deps()
      .orm.em.fork()
      .nativeUpdate(Outflow, { id: outflowId }, { destinationAmount: toDecimal('1') });
    await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'BANK_TRANSFER');
    await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'PROCESSOR');
    const breaks = (await cliAs(operator)('recon', 'breaks', '--limit', '100')).data;
    expect(
      breaks.filter((b: any) => [inflow!.externalRef, outflowId].includes(b.reference)),
      'rows that differ from the ledger are no break with a rail that agrees with the ledger',
    ).to.deep.equal([]);
  });

  it('asks the bank only for what its statement added since the last read, and keeps the lines it read', async () => {
    const bank = deps().rails.bank;
    const listed = sinon.spy(bank, 'listCredits');
    try {
      const first = await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'BANK_TRANSFER');
      const creditsOf = (r: any) => r.runs[0].accounts.find((a: any) => a.account === 'collection:bank');
      const [cursor] = await deps().sql.rows<{ cursor: string }>(
        statement('test_recon_cursor', "select cursor from rail_cursors where source = 'RECON_BANK'"),
      );
      expect(cursor?.cursor).to.be.a('string');

      const created = await call('POST', '/v1/payouts', { key: merchant.key, body: payoutTo('4322', 'NGN') });
      expect(created.status, created.text).to.equal(201);
      await runInstructionsOnce(deps());
      const instruction = await deps()
        .orm.em.fork()
        .findOneOrFail(PaymentInstruction, { payout: created.body.id });
      await payBank(instruction.accountUnique, '300.00');
      listed.resetHistory();

      const second = await cliAs(operator)('recon', 'run', '--date', today(), '--rail', 'BANK_TRANSFER');
      expect(listed.firstCall.args[0].cursor, 'the read resumes where the last one ended').to.equal(
        cursor!.cursor,
      );
      const pages = await Promise.all(listed.returnValues);
      expect(
        pages.reduce((n, p) => n + p.lines, 0),
        'only the new credit is read',
      ).to.equal(1);
      // The day still counts every credit it had, from the lines kept.
      expect(creditsOf(second).rail_count).to.equal(creditsOf(first).rail_count + 1);
    } finally {
      listed.restore();
    }
  });

  it('keeps the processor’s report ahead of the runs, and a later run of a past day sees a return made since', async () => {
    const { payoutId, outflowId } = await paidOut(merchant, '4466');
    const settledOn = today();
    const lineOf = async () =>
      (await deps().sql.rows<{ status: string; returned_at: Date | null }>(processorLine, [outflowId]))[0];
    // The job's pass pulls the report's changes before any run: the payout's line is kept.
    const pass = await runReconciliationOnce(deps());
    expect(pass.pulled).to.be.at.least(1);
    expect(await lineOf()).to.deep.equal({ status: 'SUCCESSFUL', returned_at: null });
    const first = await cliAs(operator)('recon', 'run', '--date', settledOn, '--rail', 'PROCESSOR');
    expect(first.runs[0]).to.include({ state: 'DONE', rail_complete: false });
    const breaksOf = async () =>
      (await cliAs(operator)('recon', 'breaks', '--limit', '100')).data.filter(
        (b: any) => b.reference === outflowId,
      );
    expect(await breaksOf()).to.deep.equal([]);
    // What a run on a replica is checked against: the primary's kept lines of the day.
    const linesOfDay = () => dayLineCount(deps().sql, 'PROCESSOR', settledOn, deps().rails.processor.name);
    const before = await linesOfDay();
    expect(before.lines).to.be.at.least(1);

    // Two days later the beneficiary's bank sends the money back: the processor's listing of
    // changes says so, and the settling day's kept line is replaced by the return.
    harness().clock.advance(2 * 86_400_000);
    const returned = await sandbox(`/sandbox/processor/payouts/${outflowId}/return`, {});
    expect(returned.status, returned.text).to.equal(200);
    const again = await cliAs(operator)('recon', 'run', '--date', settledOn, '--rail', 'PROCESSOR');
    expect(again.runs[0]).to.include({ id: first.runs[0].id, state: 'DONE', rail_complete: true });
    expect(await lineOf()).to.deep.include({ status: 'RETURNED' });
    // The settling day still lists the payout, now as returned.
    expect(await linesOfDay()).to.deep.equal({ ...before, returned: before.returned + 1 });
    const found = await breaksOf();
    expect(found).to.have.length(1);
    expect(found[0]).to.include({
      kind: 'STATE_DIFFERS',
      day: settledOn,
      ledger_state: 'SUCCESSFUL',
      rail_state: 'RETURNED',
      payout_id: payoutId,
      status: 'OPEN',
    });
  });

  it('pulls only the processor’s report changes since its cursor, and two pullers at once keep each line once', async () => {
    const processor = harness().sandbox.processor;
    const paid = (tag: string, n: number) =>
      Array.from({ length: n }, (_, i) => ({
        reference: `pull-${tag}-${randomUUID()}`,
        amount: toDecimal(100 + i),
        currency: 'NGN',
        // Long past: no run of the suite's days counts them.
        settledAt: new Date(Date.UTC(1999, 0, 2, i)),
      }));
    const keptOf = async (refs: string[]) =>
      (await deps().sql.rows<{ n: number }>(processorKept, [refs]))[0]!.n;
    const cursorNow = async () =>
      (await deps().sql.rows<{ cursor: string | null }>(processorCursor))[0]?.cursor;
    await pullSettlementChanges(deps());
    const cursor = await cursorNow();
    expect(cursor).to.be.a('string');
    const listed = sinon.spy(deps().rails.processor, 'settlementChanges');
    try {
      const newer = paid('new', 3);
      processor.recordPaid(newer);
      const read = await pullSettlementChanges(deps());
      expect(listed.firstCall.args[0].cursor, 'the pull resumes where the last one ended').to.equal(cursor);
      const pages = await Promise.all(listed.returnValues);
      expect(pages.flatMap((p) => p.payouts.map((c) => c.reference))).to.deep.equal(
        newer.map((p) => p.reference),
      );
      expect(read.recorded).to.equal(3);
      expect(await keptOf(newer.map((p) => p.reference))).to.equal(3);

      // Two pullers at once (two instances' jobs, or a run and a job): one reads, the other waits
      // and then finds nothing new; no change is read twice, each line is kept once.
      listed.resetHistory();
      const both = paid('both', 5);
      processor.recordPaid(both);
      const [a, b] = await Promise.all([pullSettlementChanges(deps()), pullSettlementChanges(deps())]);
      expect(a.read && b.read).to.equal(true);
      expect(a.recorded + b.recorded).to.equal(5);
      const read2 = (await Promise.all(listed.returnValues)).flatMap((p) =>
        p.payouts.map((c) => c.reference),
      );
      expect(read2).to.deep.equal(both.map((p) => p.reference));
      expect(await keptOf(both.map((p) => p.reference))).to.equal(5);
    } finally {
      listed.restore();
    }
  });

  it('refuses a day that is not one, or has not begun, writing nothing', async () => {
    for (const date of ['2026-02-30', 'yesterday']) {
      const refused = await refusal(cliAs(operator)('recon', 'run', '--date', date));
      expect(refused.code).to.equal('VALIDATION_FAILED');
    }
    const future = dayOf(new Date(harness().clock.now().getTime() + 2 * 86_400_000));
    const refused = await refusal(cliAs(operator)('recon', 'run', '--date', future));
    expect(refused.code).to.equal('VALIDATION_FAILED');
    const runs = await deps()
      .orm.em.fork()
      .count(ReconRun, { day: { $in: ['2026-02-30', 'yesterday', future] } });
    expect(runs).to.equal(0);
  });

  it('runs yesterday once RECON_RUN_AT has passed, once per day and rail', async () => {
    const now = harness().clock.now();
    const [h, m] = deps().config.RECON_RUN_AT.split(':').map(Number) as [number, number];
    // The day after tomorrow: yesterday then has no run yet.
    const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 2);
    harness().clock.set(new Date(midnight + (h * 60 + m) * 60_000 - 1000));
    expect((await runDueReconciliations(deps())).ran).to.deep.equal([]);
    harness().clock.advance(2000);
    const due = await runDueReconciliations(deps());
    expect(due.ran.map((r) => r.rail).sort()).to.deep.equal(['BANK_TRANSFER', 'CRYPTO', 'PROCESSOR']);
    expect(new Set(due.ran.map((r) => r.day))).to.deep.equal(new Set([dayOf(new Date(midnight - 1))]));
    expect((await runDueReconciliations(deps())).ran).to.deep.equal([]);
  });
});
