import path from 'node:path';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { harness } from '../harness.ts';
import { failedTwoWays } from '../ledger/fixtures.ts';
import { SHOTS, viewerConsole } from './fixtures.ts';

/**
 * The console's Machines page in Chromium, as a compliance officer reads it: a failed payout's
 * money is told apart by the ledger and each case counted apart, live; the colours are explained
 * on the page; nothing widens it past the window. Screenshot: test/artifacts/console/machines-cases.png.
 */

describe("the console's Machines page in Chromium", function () {
  this.timeout(120_000);
  const opened = viewerConsole("the Machines page's browser test");
  let page: Page;
  before(() => {
    page = opened.page();
  });

  /** The Machines page as it reads now: the count of each case of a failed payout's money. */
  async function failedCases(): Promise<Record<string, number>> {
    await page.goto(`${harness().url}/console/machines`);
    const rows = page.locator('section[data-machine="payout"] tr[data-case-of="FAILED"]');
    await rows.first().waitFor();
    const counts: Record<string, number> = {};
    for (const row of await rows.all()) {
      const code = (await row.getAttribute('data-case'))!;
      counts[code] = Number((await row.locator('td.count').textContent())!.replace(/,/g, ''));
    }
    return counts;
  }

  it('counts failed payouts apart by where their money is, and follows one as its refund arrives', async () => {
    const deps = harness().service.deps;
    await runRefundsOnce(deps);
    const before = await failedCases();
    expect(Object.keys(before)).to.deep.equal([
      'AWAITING_REFUND',
      'REFUND_ON_ITS_WAY',
      'RETURNED_TO_MERCHANT',
      'KEPT_AS_REFUND_FEE',
      'NOTHING_RECEIVED',
    ]);
    await failedTwoWays();

    const failed = await failedCases();
    expect(failed['NOTHING_RECEIVED']! - before['NOTHING_RECEIVED']!).to.equal(1);
    expect(failed['AWAITING_REFUND']! - before['AWAITING_REFUND']!).to.equal(1);
    // The state row no longer says "with us" for them all: it points at its cases.
    const money = page.locator('section[data-machine="payout"] tr[data-state="FAILED"] td:nth-child(3)');
    expect(await money.textContent()).to.equal('as the ledger says (cases below)');
    const returned = page.locator('section[data-machine="payout"] tr[data-case="RETURNED_TO_MERCHANT"]');
    expect(await returned.textContent())
      .to.include('refund fee')
      .and.include('50.00 NGN on the bank')
      .and.include('world:merchants:<tenant>');

    await runRefundsOnce(deps);
    const refunded = await failedCases();
    expect(refunded['AWAITING_REFUND']! - before['AWAITING_REFUND']!).to.equal(0);
    expect(refunded['RETURNED_TO_MERCHANT']! - before['RETURNED_TO_MERCHANT']!).to.equal(1);
    await page.screenshot({ path: path.join(SHOTS, 'machines-cases.png'), fullPage: true });
  });

  it('explains every colour, four eyes in its own, names the fees, and shows no backticks', async () => {
    await page.goto(`${harness().url}/console/machines`);
    const legend = page.locator('.machines-legend');
    await legend.waitFor();
    const colour = async (actor: string) =>
      legend
        .locator(`li[data-actor="${actor}"] .actor-line`)
        .evaluate((el) => getComputedStyle(el).backgroundColor);
    expect(await colour('OPERATOR_FOUR_EYES')).to.not.equal(await colour('OPERATOR'));
    for (const fee of ['platform', 'network', 'refund']) {
      expect(await legend.locator(`li[data-fee="${fee}"]`).textContent()).to.include(`${fee} fee`);
    }
    // The diagram carries the same legend, four eyes included.
    const svg = page.locator('section[data-machine="payout"] svg');
    await svg.waitFor();
    expect(await svg.textContent())
      .to.include('Who acts (arrow colours)')
      .and.include('an operator, with four eyes');
    const text = await page.locator('main').textContent();
    expect(text).to.not.include('`');
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    expect(width, 'the page stays within the window').to.be.at.most(1400);
  });
});
