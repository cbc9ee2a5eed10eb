import { expect } from 'chai';
import type { Deps } from '#src/deps.ts';
import { accountName } from '#src/ledger/chart.ts';
import { toDecimal } from '#src/lib/money.ts';
import { ProviderUnavailableError } from '#src/providers/providers.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { call, type Merchant } from '../client.ts';
import { eventTypesOf, merchantWith, mine, paidPayout, payoutOf, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { deps, holdings, ledgerOf, movements, paidOut, violationsOf } from '../ledger/fixtures.ts';
import { cliAs, newOperator, refusal, trpcCall } from '../operators/fixtures.ts';
import { admin } from '../settlement/fixtures.ts';

/** Deps whose TRON sends reach the chain but whose answer is lost on the way back. */
function answerLost(real: Deps): Deps {
  const chains = Object.create(real.rails.chains) as Deps['rails']['chains'];
  chains.send = async (...args: Parameters<Deps['rails']['chains']['send']>) => {
    await real.rails.chains.send(...args);
    throw new ProviderUnavailableError('TRON', 'connection reset after the send');
  };
  return { ...real, rails: { ...real.rails, chains } };
}

async function refundsOf(merchant: Merchant, payoutId: string): Promise<any[]> {
  const res = await call('GET', `/v1/payouts/${payoutId}/refunds`, { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  return res.body;
}

/** The payout's merchant-facing movements summed per currency, as `currency sum`, zero sums included. */
async function movementSums(merchant: Merchant, payoutId: string): Promise<string[]> {
  const res = await call('GET', `/v1/payouts/${payoutId}/money-movements`, { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  const by = new Map<string, ReturnType<typeof toDecimal>>();
  for (const m of res.body as { currency: string; amount: string }[])
    by.set(m.currency, (by.get(m.currency) ?? toDecimal(0)).plus(m.amount));
  return [...by].map(([c, s]) => `${c} ${s.toFixed()}`).sort();
}

/** The payout's row in the queue PAYOUTS_OVERPAYMENT_TO_RETURN (`overpayment list`, every page), if there. */
async function owedRow(payoutId: string): Promise<any> {
  let cursor: string | null = null;
  do {
    const page: any = await cliAs()(
      'overpayment',
      'list',
      '--limit',
      '100',
      ...(cursor ? ['--cursor', cursor] : []),
    );
    const row = page.data.find((r: { payout_id: string }) => r.payout_id === payoutId);
    if (row) return row;
    cursor = page.meta.next_cursor;
  } while (cursor);
  return null;
}

/** How many wait in the queue PAYOUTS_OVERPAYMENT_TO_RETURN (`admin.exceptions`). */
async function owedCount(): Promise<number> {
  const res = await trpcCall('admin.exceptions', 'query', undefined, harness().adminToken);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return res.body.result.data.queues.find((q: { code: string }) => q.code === 'PAYOUTS_OVERPAYMENT_TO_RETURN')
    .count;
}

describe('returning a successful payout’s overpayment', () => {
  it('waits in the queue of overpayments to return until its return is raised', async () => {
    const merchant = await merchantWith();
    const before = await owedCount();
    const id = await paidPayout(merchant, payoutTo('5685', 'USDT'), { overpay: '3' });
    expect(await owedRow(id), 'not before it succeeds').to.equal(null);
    expect((await paidOut(merchant, id)).status).to.equal('SUCCESSFUL');
    const row = await owedRow(id);
    expect(row).to.include({
      tenant_id: merchant.tenantId,
      settlement_currency: 'USDT',
      overpayment_amount: 3,
      refund_destination_active: true,
    });
    expect(row.received_amount - row.settlement_amount).to.equal(3);
    expect(await owedCount()).to.equal(before + 1);
    // An exact payout owes nothing back.
    const exact = await paidPayout(merchant, payoutTo('5686', 'USDT'));
    expect((await paidOut(merchant, exact)).status).to.equal('SUCCESSFUL');
    expect(await owedRow(exact)).to.equal(null);

    const { approval } = await cliAs(await newOperator('operator'))(
      'overpayment',
      'return',
      id,
      '--note',
      'owed',
    );
    expect(await owedRow(id), 'still owed while the proposal waits').to.not.equal(null);
    await cliAs(await newOperator('approver'))('approval', 'approve', approval.id);
    expect(await owedRow(id), 'gone once its return is raised').to.equal(null);
    expect(await owedCount()).to.equal(before);
    expect((await ledgerOf(id)).set_aside).to.deep.equal([{ currency: 'USDT', amount: '0' }]);
  });

  it('goes to the merchant’s refund destination under four eyes, once, and the payout’s statement shows it', async () => {
    const merchant = await merchantWith();
    const id = await paidPayout(merchant, payoutTo('5682', 'USDT'), { overpay: '2.5' });
    expect((await paidOut(merchant, id)).status).to.equal('SUCCESSFUL');
    const overpayments = accountName('overpayments', { tenant: merchant.tenantId });
    expect((await ledgerOf(id)).set_aside).to.deep.equal([{ currency: 'USDT', amount: '2.5' }]);

    // One operator proposes; the same operator cannot approve; a second proposal waits for the first.
    const proposer = await newOperator('approver');
    const approver = await newOperator('approver');
    const { approval } = await cliAs(proposer)('overpayment', 'return', id, '--note', 'merchant asked');
    expect(approval).to.include({
      state: 'PENDING',
      action: 'overpayment.return',
      amount: '2.5',
      currency: 'USDT',
      target_state: 'SUCCESSFUL',
    });
    const self = await refusal(cliAs(proposer)('approval', 'approve', approval.id), 'a self-approval');
    expect(self.code).to.equal('SELF_APPROVAL_FORBIDDEN');
    const again = await refusal(
      cliAs(approver)('overpayment', 'return', id, '--note', 'again'),
      'a second proposal',
    );
    expect(again.code).to.equal('APPROVAL_ALREADY_PENDING');
    expect(await refundsOf(merchant, id), 'nothing moves before the approval').to.deep.equal([]);
    expect((await ledgerOf(id)).set_aside).to.deep.equal([{ currency: 'USDT', amount: '2.5' }]);

    const decided = await cliAs(approver)('approval', 'approve', approval.id);
    expect(decided.approval.state).to.equal('APPROVED');
    const raised = decided.approval.result.refund;
    // The TRON refund fee as configured in src/corridors/corridors.json.
    expect(raised).to.include({
      payout_id: id,
      kind: 'OVERPAYMENT',
      status: 'PENDING',
      received_amount: 2.5,
      network_fee_amount: 1,
      refund_amount: 1.5,
    });
    // The excess is the payout's again, to be sent; nothing is owed to the merchant twice.
    const taken = await ledgerOf(id);
    expect(taken.set_aside).to.deep.equal([{ currency: 'USDT', amount: '0' }]);
    expect(holdings(taken)).to.deep.equal(['USDT 2.5']);
    const back = taken.entries.find((e) => e.account === overpayments && e.amount === '-2.5')!;
    expect(back.cause).to.include({ object: 'refund', id: raised.id });
    expect(back.approval_id).to.equal(approval.id);
    expect(await violationsOf(id)).to.deep.equal([]);

    // Once approved, a second proposal is refused: it would return nothing.
    const twice = await refusal(
      cliAs(proposer)('overpayment', 'return', id, '--note', 'once more'),
      'a proposal after the return',
    );
    expect(twice.code).to.equal('VALIDATION_FAILED');
    expect(JSON.stringify(twice.details)).to.include('has its overpayment returned already');

    // The chain takes the send but its answer is lost: the retry sends under the same reference.
    await runRefundsOnce(answerLost(deps()));
    harness().clock.advance(10_000);
    await runRefundsOnce(deps());
    const sends = harness()
      .sandbox.chains.sends('TRON')
      .filter((s) => s.reference === `${raised.id}:1`);
    expect(sends, 'one transfer on the chain').to.have.length(1);
    expect(sends[0]!.amount.toFixed()).to.equal('1.5');
    await mine('TRON');
    harness().clock.advance(10_000);
    await runRefundsOnce(deps());
    const [done] = await refundsOf(merchant, id);
    expect(done).to.include({ id: raised.id, kind: 'OVERPAYMENT', status: 'SUCCESSFUL' });

    const payout = await payoutOf(merchant, id);
    expect(payout).to.include({ status: 'SUCCESSFUL', is_refunded: false });
    const events = await eventTypesOf(id);
    expect(events.slice(events.indexOf('payout.successful') + 1)).to.deep.equal([
      'refund.created',
      'refund.processing',
      'refund.successful',
    ]);

    const final = await ledgerOf(id);
    expect(movements(final)).to.include.members([
      'overpayment_set_aside USDT -2.5',
      'overpayment_set_aside USDT 2.5',
      'refund_fee USDT -1',
      'refunded USDT -1.5',
    ]);
    expect(holdings(final)).to.deep.equal([]);
    expect(final.in_transit.filter((t) => !toDecimal(t.amount).isZero())).to.deep.equal([]);
    expect(await movementSums(merchant, id), 'a final payout’s movements sum to zero').to.deep.equal([
      'NGN 0',
      'USDT 0',
    ]);
    const returned = await admin(
      'ledger',
      'entries',
      '--account',
      `world:merchants:${merchant.tenantId}`,
      '--exact',
    );
    expect(
      returned.data
        .filter((e: { payout_id: string }) => e.payout_id === id)
        .map((e: { amount: string }) => e.amount),
    ).to.deep.equal(['1.5']);
    const owed = await admin('ledger', 'balances', '--prefix', `tenants:${merchant.tenantId}:to_return:`);
    expect(owed.data.map((b: { balance: string }) => toDecimal(b.balance).isZero())).to.deep.equal([true]);
    expect(await violationsOf(id)).to.deep.equal([]);
  });

  it('is refused for a payout that set nothing aside, and for one that is not SUCCESSFUL', async () => {
    const merchant = await merchantWith();
    const exact = await paidPayout(merchant, payoutTo('5683', 'USDT'));
    expect((await paidOut(merchant, exact)).status).to.equal('SUCCESSFUL');
    const nothing = await refusal(
      cliAs()('overpayment', 'return', exact, '--note', 'none'),
      'an exact payout',
    );
    expect(nothing.code).to.equal('VALIDATION_FAILED');
    expect(JSON.stringify(nothing.details)).to.include('set no overpayment aside');

    const waiting = await paidPayout(merchant, payoutTo('5684', 'USDT'), { overpay: '1' });
    const early = await refusal(
      cliAs()('overpayment', 'return', waiting, '--note', 'early'),
      'a paid payout',
    );
    expect(JSON.stringify(early.details)).to.include('only a SUCCESSFUL payout');
    expect(await cliAs()('approval', 'list', '--target', waiting)).to.have.nested.property('data.length', 0);
  });
});
