import path from 'node:path';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { accountName } from '#src/ledger/chart.ts';
import { toDecimal } from '#src/lib/money.ts';
import { Payout } from '#src/payouts/entities.ts';
import { Refund } from '#src/refunds/entities.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { failedPayoutWithRefund, merchantWith, paidPayout, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { deps, failedTwoWays, paidOut } from '../ledger/fixtures.ts';
import { SHOTS, viewerConsole } from './fixtures.ts';

/**
 * The payout page's money statement in Chromium, as a compliance officer reads it: the movements
 * from the ledger with their sum and the fees kept by kind, where the money is now, and for a
 * failed payout which of its money cases the ledger tells (nothing received, awaiting its refund,
 * refund on its way, returned). Screenshots: test/artifacts/console/statement-*.png.
 */

describe("the payout page's money statement in Chromium", function () {
  this.timeout(180_000);
  const opened = viewerConsole("the payout statement's browser test");
  let page: Page;
  before(() => {
    page = opened.page();
  });

  /** The payout's page once its statement is read: what it says, in the page's words. */
  async function statementOf(payoutId: string, shot?: string) {
    await page.goto(`${harness().url}/console/payouts/${payoutId}`);
    const section = page.locator('[data-testid="statement"]');
    await section.locator('[data-testid="statement-sum"]').waitFor();
    const rows = section.locator('[data-testid="movements"] tbody tr');
    const movements: string[] = [];
    for (const row of await rows.all()) {
      const cells = await row.locator('td').allTextContents();
      movements.push(`${cells[1]} ${cells[2]}`);
    }
    const now: string[] = [];
    for (const row of await section.locator('[data-testid="money-now"] tbody tr').all()) {
      const cells = await row.locator('td').allTextContents();
      now.push(`${cells[0]} ${cells[1]}`);
    }
    const moneyCase = section.locator('[data-testid="money-case"]');
    const result = {
      movements,
      now,
      sum: (await section.locator('[data-testid="statement-sum"] dd').textContent())!,
      fees: (await section.locator('[data-testid="fees-kept"] dd').textContent())!,
      caseCode: (await moneyCase.count()) > 0 ? await moneyCase.getAttribute('data-case') : null,
      caseText: (await moneyCase.count()) > 0 ? (await moneyCase.textContent())! : null,
      badge:
        (await page.locator('[data-testid="case-badge"]').count()) > 0
          ? await page.locator('[data-testid="case-badge"]').textContent()
          : null,
      text: (await section.textContent())!,
    };
    if (shot) await section.screenshot({ path: path.join(SHOTS, `statement-${shot}.png`) });
    return result;
  }

  const settlementOf = async (id: string) =>
    (await deps().orm.em.fork().findOneOrFail(Payout, id)).settlementAmount.toFixed();

  it('tells a failed payout with nothing received from one awaiting its refund and one whose money was returned', async () => {
    const { merchant, never, paid } = await failedTwoWays();

    const nothing = await statementOf(never, 'nothing-received');
    expect(nothing.caseCode).to.equal('NOTHING_RECEIVED');
    expect(nothing.badge).to.equal('nothing ever arrived');
    expect(nothing.text).to.include('No money has moved for this payout.');
    expect(nothing.now).to.deep.equal([]);
    expect(nothing.fees).to.equal('platform fee: none · network fee: none · refund fee: none');

    const received = await settlementOf(paid);
    const waiting = await statementOf(paid, 'awaiting-refund');
    expect(waiting.caseCode).to.equal('AWAITING_REFUND');
    expect(waiting.badge).to.equal('with us, awaiting its refund');
    expect(waiting.caseText).to.include('No fee has been kept');
    expect(waiting.movements).to.deep.equal([`Money received +${received} NGN`]);
    expect(waiting.sum).to.include(`+${received} NGN`).and.include('what the payout holds now');
    expect(waiting.now).to.deep.equal([
      `${accountName('payout', { tenant: merchant.tenantId, payout: paid })} ${received} NGN`,
    ]);
    expect(waiting.fees).to.equal('platform fee: none · network fee: none · refund fee: none');

    await runRefundsOnce(deps());
    const refund = await deps().orm.em.fork().findOneOrFail(Refund, { payout: paid });
    const fee = refund.networkFeeAmount.toFixed();
    const back = toDecimal(received).minus(fee).toFixed();
    const returned = await statementOf(paid, 'returned');
    expect(returned.caseCode).to.equal('RETURNED_TO_MERCHANT');
    expect(returned.badge).to.equal('returned to the merchant');
    expect(returned.caseText).to.include('less the refund fee').and.include('50.00 NGN on the bank');
    expect(returned.movements).to.deep.equal([
      `Money received +${received} NGN`,
      `Refund fee -${fee} NGN`,
      `Refunded -${back} NGN`,
    ]);
    expect(returned.sum).to.include('0 NGN').and.include('zero in every currency');
    expect(returned.fees).to.equal(`platform fee: none · network fee: none · refund fee: ${fee} NGN`);
    expect(returned.now).to.have.members([
      `${accountName('merchant', { tenant: merchant.tenantId })} ${back} NGN`,
      `fees:refund ${fee} NGN`,
    ]);
  });

  it('shows a failed payout whose refund is on its way on a chain, less the refund fee', async () => {
    const merchant = await merchantWith();
    const { payoutId, refund } = await failedPayoutWithRefund(merchant, 'USDT');
    expect(refund.status).to.equal('PROCESSING');
    const received = await settlementOf(payoutId);
    const fee = refund.networkFeeAmount.toFixed();
    const onItsWay = await statementOf(payoutId, 'refund-on-its-way');
    expect(onItsWay.caseCode).to.equal('REFUND_ON_ITS_WAY');
    expect(onItsWay.badge).to.equal('refund on its way');
    expect(onItsWay.movements).to.deep.equal([`Money received +${received} USDT`, `Refund fee -${fee} USDT`]);
    expect(onItsWay.sum).to.include('on its way');
    expect(onItsWay.fees).to.include(`refund fee: ${fee} USDT`);
    expect(onItsWay.now.some((line) => line.startsWith('transit:refunds:'))).to.equal(true);
  });

  it('shows a succeeded overpaid payout: every fee by name, the excess set aside for the merchant, nothing left', async () => {
    const merchant = await merchantWith();
    const id = await paidPayout(merchant, payoutTo('5679', 'USDT'), { overpay: '2.5' });
    expect((await paidOut(merchant, id)).status).to.equal('SUCCESSFUL');
    const p = await deps().orm.em.fork().findOneOrFail(Payout, id);
    const done = await statementOf(id, 'overpaid');
    expect(done.caseCode, 'a successful payout has no cases').to.equal(null);
    expect(done.badge).to.equal(null);
    const converted = p.settlementAmount.minus(p.totalFeeAmount).toFixed();
    expect(done.movements).to.include.members([
      `Money received +${p.settlementAmount.plus('2.5').toFixed()} USDT`,
      `Conversion -${converted} USDT`,
      `Conversion +${p.destinationAmount.toFixed()} ${p.destinationCurrency}`,
      `Paid out -${p.destinationAmount.toFixed()} ${p.destinationCurrency}`,
      'Overpayment set aside -2.5 USDT',
    ]);
    expect(done.sum).to.include('0 USDT').and.include('zero in every currency');
    const kept = (fee: typeof p.platformFeeAmount) => (fee.isZero() ? 'none' : `${fee.toFixed()} USDT`);
    expect(done.fees).to.equal(
      `platform fee: ${kept(p.platformFeeAmount)} · network fee: ${kept(p.networkFeeAmount)} · refund fee: none`,
    );
    expect(done.now).to.include(`${accountName('overpayments', { tenant: merchant.tenantId })} 2.5 USDT`);
    expect(done.now).to.include(
      `world:beneficiaries ${p.destinationAmount.toFixed()} ${p.destinationCurrency}`,
    );
    const overpayments = page.locator(
      `[data-testid="money-now"] tr[data-account="${accountName('overpayments', { tenant: merchant.tenantId })}"]`,
    );
    expect(await overpayments.textContent()).to.include('owed back to the merchant');
  });
});
