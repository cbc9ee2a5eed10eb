import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { REPO_ROOT } from '#src/docs/generate.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { strayInflow } from '../approvals/fixtures.ts';
import { CHROMIUM, CHROMIUM_FLAGS, requireChromium } from '../browser.ts';
import { callbacksDelivered, dispatch, merchantWith, paidPayout, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { newOperator, type TestOperator, trpcCall } from '../operators/fixtures.ts';
import { payeeHeldPayout } from '../payees/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { deps, handledCredit, payBank, payoutWithInstruction } from '../settlement/fixtures.ts';

/**
 * The operations console in a real browser (Debian's Chromium through playwright-core), as
 * operators use it: each operator in a browser context of their own, against the running test
 * service and sandbox. Nothing leaves the service's origin. Screenshots of every page go to
 * test/artifacts/console/ (not committed; CI keeps the folder).
 */
const SHOTS = path.join(REPO_ROOT, 'test/artifacts/console');
/** Generous for a loaded machine, bounded so that a broken page fails rather than hangs. */
const WAIT = 15_000;

/**
 * The row `selector` of the queue `queue`, asking for more pages ("Show more") until it is there:
 * the suite's earlier tests leave rows of their own in the same queues, older than this one.
 */
async function queueRow(page: Page, queue: string, selector: string, hasText?: string): Promise<Locator> {
  const section = page.locator(`[data-queue="${queue}"]`);
  const row = section.locator(`tr${selector}`, hasText === undefined ? {} : { hasText });
  const more = section.locator('button.more:not([disabled])');
  const deadline = Date.now() + 4 * WAIT;
  for (;;) {
    await row.or(more).first().waitFor();
    if ((await row.count()) > 0) return row;
    if (Date.now() > deadline) throw new Error(`no row ${selector} in the queue ${queue}, page after page`);
    // The button can go between the look and the click (the page refreshes its queues, and the row
    // may come with the refresh): look again rather than wait for a button that is gone.
    await more.click({ timeout: 2_000 }).catch(() => undefined);
  }
}

describe('operations console in Chromium', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];
  const foreign: string[] = [];

  before(async function () {
    requireChromium(this, "the console's browser test");
    await mkdir(SHOTS, { recursive: true });
    console.log(`    console screenshots: ${SHOTS}`);
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  });

  after(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
  });

  afterEach(() => {
    expect(foreign, 'requests to other origins').to.deep.equal([]);
    expect(problems, 'errors in the page').to.deep.equal([]);
  });

  /** A browser context of its own (cookies, sessionStorage): one operator's browser. */
  async function browserOf(label: string): Promise<Page> {
    const context = await browser!.newContext({ viewport: { width: 1400, height: 900 } });
    contexts.push(context);
    context.setDefaultTimeout(WAIT);
    const own = new URL(harness().url).origin;
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('data:') || new URL(url).origin === own) return route.continue();
      foreign.push(url);
      return route.abort();
    });
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`${label}: ${error.message}`));
    page.on('console', (message) => {
      // A refused call (403, 401) is logged by the browser as a failed resource: expected here.
      if (message.type() === 'error' && !/status of 40[13]/.test(message.text()))
        problems.push(`${label}: console: ${message.text()}`);
    });
    return page;
  }

  async function signIn(page: Page, operator: TestOperator): Promise<void> {
    const response = await page.goto(`${harness().url}/console`);
    expect(response?.status()).to.equal(200);
    await page.fill('input[name="token"]', operator.token);
    await page.click('button[type="submit"]');
    await page.waitForSelector(`[data-testid="operator"]:has-text("${operator.name}")`);
    expect(page.url(), 'the token never goes into the URL').to.not.include(operator.token);
  }

  const shot = (page: Page, name: string) =>
    page.screenshot({ path: path.join(SHOTS, `${name}.png`), fullPage: true });

  /** A payout of the sandbox merchant paid short through the sandbox bank: held for review. */
  async function heldPayout(): Promise<{ id: string }> {
    const merchant = await payoutReadyMerchant();
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const credit = await payBank(payout.instruction.account_unique, '500.00');
    const inflow = await handledCredit(credit.session_id);
    expect(inflow.state).to.equal('HELD');
    return { id: payout.id };
  }

  it('puts queues with overdue items first, and marks their overdue rows, first in the queue', async () => {
    const payout = await heldPayout();
    // A day and an hour later: past the held queue's overdue age (24 h by default).
    harness().clock.advance(25 * 3_600_000);
    const page = await browserOf('overdue');
    await signIn(page, await newOperator('viewer'));
    const row = await queueRow(page, 'held', `[data-payout="${payout.id}"]`);
    expect(await row.getAttribute('class')).to.include('overdue');
    expect(await row.locator('[data-testid="overdue"]').textContent()).to.equal('overdue');
    expect(await page.locator('[data-queue="held"] tbody tr').first().getAttribute('class')).to.include(
      'overdue',
    );
    expect(await page.locator('[data-testid="overdue-held"]').textContent()).to.match(
      /^[1-9][\d,]* overdue \(over 24 h\)$/,
    );
    // Every queue with overdue items comes before every queue without.
    const order = await page.$$eval('section.queue', (sections) =>
      sections.map((s) => !!s.querySelector('h2 .overdue-count:not(.none)')),
    );
    expect(
      order.indexOf(false) === -1 || order.lastIndexOf(true) < order.indexOf(false),
      String(order),
    ).to.equal(true);
    await shot(page, 'exceptions-overdue');
  });

  it('takes a held payout from Exceptions to FAILED with four eyes and its refund, naming both operators; a viewer only reads', async () => {
    const stamp = Date.now() % 100000;
    const a = await newOperator('approver', `Ada Proposer ${stamp}`);
    const b = await newOperator('approver', `Bola Approver ${stamp}`);
    const viewer = await newOperator('viewer', `Vic Viewer ${stamp}`);
    const payout = await heldPayout();

    const pageA = await browserOf('A');
    await signIn(pageA, a);
    const row = await queueRow(pageA, 'held', `[data-payout="${payout.id}"]`);

    // A viewer sees the same queue without a single action button, and the server refuses the action.
    const pageV = await browserOf('viewer');
    await signIn(pageV, viewer);
    await queueRow(pageV, 'held', `[data-payout="${payout.id}"]`);
    expect(await pageV.locator('main button.action').count(), 'action buttons for a viewer').to.equal(0);
    const refused = await trpcCall(
      'admin.settlement.failPayout',
      'mutation',
      { payout_id: payout.id, note: 'viewer tries' },
      viewer.token,
    );
    expect(refused.status).to.equal(403);
    expect(refused.body.error.data.app_code).to.equal('OPERATOR_ROLE_REQUIRED');

    // A proposes to fail it, with a note: a proposal, nothing moves yet.
    await row.locator('[data-testid="propose-fail"]').click();
    await row.locator('input').fill('merchant will not top up: ticket 4411');
    await row.locator('button[type="submit"]').click();
    await row.locator('.outcome.done').waitFor();
    const proposal = await queueRow(pageA, 'proposals', '', a.name);
    const approvalId = (await proposal.getAttribute('data-approval'))!;
    // A's own proposal offers A no approval, and the server refuses it anyway.
    expect(await proposal.locator('[data-testid="approve"]').count()).to.equal(0);
    expect(await proposal.textContent()).to.include('your proposal');
    const self = await trpcCall('admin.approvals.approve', 'mutation', { approval_id: approvalId }, a.token);
    expect(self.status).to.equal(403);
    await shot(pageA, 'exceptions');

    // B, in a browser of their own, approves it: the payout fails and its refund is due.
    const pageB = await browserOf('B');
    await signIn(pageB, b);
    const toDecide = await queueRow(pageB, 'proposals', `[data-approval="${approvalId}"]`);
    await toDecide.locator('[data-testid="approve"]').click();
    await toDecide.locator('input').fill('checked with the merchant');
    await toDecide.locator('button[type="submit"]').click();
    const outcome = await pageB.waitForFunction((id) => {
      const tr = document.querySelector(`[data-queue="proposals"] tr[data-approval="${id}"]`);
      if (!tr) return 'gone';
      const shown = tr.querySelector('.outcome.done, .outcome.failed');
      return shown ? `${shown.className}: ${shown.textContent}` : null;
    }, approvalId);
    expect(await outcome.jsonValue()).to.not.match(/failed/);
    await runRefundsOnce(deps());

    // The payout's page: the new timeline row names both, the refund followed, the path is drawn.
    await pageA.goto(`${harness().url}/console/payouts/${payout.id}`);
    const failedRow = pageA.locator('[data-testid="timeline"] tr', { hasText: '→ FAILED' });
    await failedRow.waitFor();
    const decided = (await failedRow.locator('.who-decided').textContent())!;
    expect(decided).to.include(`proposed by ${a.name}`);
    expect(decided).to.include(`approved by ${b.name}`);
    await pageA.locator('[data-testid="refund"] dd').first().waitFor();
    expect(await pageA.locator('[data-testid="refund"]').textContent()).to.match(
      /PENDING|PROCESSING|SUCCESSFUL/,
    );
    await pageA.locator('[data-testid="diagram"] svg').waitFor();
    const taken = await pageA.$$eval('[data-testid="diagram"] .taken', (els) =>
      els.sort((x, y) => Number(x.dataset.step) - Number(y.dataset.step)).map((e) => e.id),
    );
    expect(taken, 'arrows in the order taken').to.deep.equal([
      'payout/t1',
      'payout/t2',
      'payout/t9',
      'payout/t13',
    ]);
    const current = await pageA.$$eval('[data-testid="diagram"] .current', (els) => els.map((e) => e.id));
    expect(current).to.deep.equal(['payout/FAILED']);
    await pageA.locator('[data-testid="payout-audit"] .operator', { hasText: b.name }).waitFor();
    await shot(pageA, 'payout-detail');

    // The audit page shows both actions: A's proposal and B's approval.
    await pageA.click('header.bar a[href="/console/audit"]');
    await pageA.fill('input[name="target_id"]', payout.id);
    await pageA.locator('[data-testid="audit"] tbody tr', { hasText: a.name }).waitFor();
    await pageA.locator('[data-testid="audit"] tbody tr', { hasText: b.name }).waitFor();
    await shot(pageA, 'audit');

    // Approvals: decided, with both names.
    await pageB.click('header.bar a[href="/console/approvals"]');
    await pageB.click('.tabs button:has-text("Decided")');
    const decidedRow = pageB.locator(`[data-testid="approvals"] tr[data-approval="${approvalId}"]`);
    await decidedRow.waitFor();
    expect(await decidedRow.getAttribute('data-state')).to.equal('APPROVED');
    await shot(pageB, 'approvals');

    // The machines with their live counts, and tenants and keys: a key issued is shown once.
    await pageA.click('header.bar a[href="/console/machines"]');
    await pageA.locator('section[data-machine="payout"] tr[data-state="FAILED"] td.count').waitFor();
    expect(
      Number(
        (await pageA
          .locator('section[data-machine="payout"] tr[data-state="FAILED"] td.count')
          .textContent())!.replace(/,/g, ''),
      ),
    ).to.be.above(0);
    await shot(pageA, 'machines');
    await pageA.click('header.bar a[href="/console/tenants"]');
    await pageA.locator('tr[data-tenant] button', { hasText: 'Issue API key' }).first().click();
    const issued = pageA.locator('[data-testid="issued-key"] code.secret');
    await issued.waitFor();
    // A key is `sk_` and base64url: `-` may break any run of word characters.
    expect(await issued.textContent()).to.match(/sk_[\w-]{20,}/);
    // The tenant's keys list it (never the key itself) with a Revoke button: no id to type in.
    const keyId = (await pageA.locator('[data-testid="issued-key"] code.id').nth(1).getAttribute('title'))!;
    const tenantId = (await pageA
      .locator('[data-testid="issued-key"] code.id')
      .first()
      .getAttribute('title'))!;
    await pageA.locator(`tr[data-tenant="${tenantId}"] button`, { hasText: 'Keys' }).click();
    const keyRow = pageA.locator(`tr[data-keys-of="${tenantId}"] tr[data-key="${keyId}"]`);
    await keyRow.waitFor();
    expect(await keyRow.textContent())
      .to.include('not revoked')
      .and.not.include((await issued.textContent())!);
    await shot(pageA, 'tenants');
    // Revoking asks first.
    await keyRow.locator('button', { hasText: 'Revoke' }).click();
    await keyRow.locator('button', { hasText: 'Yes, revoke it' }).click();
    await keyRow.locator('td', { hasText: 'not revoked' }).waitFor({ state: 'detached' });
    expect(await keyRow.locator('button.action').count(), 'no Revoke on a revoked key').to.equal(0);
    const keys = await trpcCall('admin.key.list', 'query', { tenant_id: tenantId }, a.token);
    expect(keys.body.result.data.data[0])
      .to.include({ id: keyId })
      .and.have.property('revoked_at')
      .that.is.a('string');

    // Approvals, Mine: A's own proposal, read with A's id as the server's filter.
    await pageA.click('header.bar a[href="/console/approvals"]');
    await pageA.click('.tabs button:has-text("Mine")');
    await pageA.locator(`[data-testid="approvals"] tr[data-approval="${approvalId}"]`).waitFor();
    for (const row of await pageA.locator('[data-testid="approvals"] tbody tr').all())
      expect(await row.textContent()).to.include(a.name);

    // A revoked token ends the session at the next call.
    await trpcCall('admin.operators.revoke', 'mutation', { operator_id: viewer.id }, harness().adminToken);
    await pageV.reload();
    await pageV.waitForSelector('input[name="token"]');
    expect(await pageV.locator('.notice').textContent()).to.include('no longer valid');
  });

  it('holds a payout whose payee name does not match, and lets it go on under four eyes, in words', async () => {
    const stamp = Date.now() % 100000;
    const a = await newOperator('operator', `Ife Payee ${stamp}`);
    const b = await newOperator('approver', `Kemi Approver ${stamp}`);
    const { payoutId } = await payeeHeldPayout();

    const pageA = await browserOf('A');
    await signIn(pageA, a);
    const row = await queueRow(pageA, 'payee', `[data-payout="${payoutId}"]`);
    expect(await row.textContent()).to.include('ADAEZE OKONKWO');
    await row.locator('[data-testid="propose-accept-payee"]').click();
    await row.locator('input').fill('merchant confirmed the beneficiary by phone');
    await row.locator('button[type="submit"]').click();
    await row.locator('.outcome.done').waitFor();
    await shot(pageA, 'exceptions-payee');

    // The payout's page says it is held, and why, in words.
    await pageA.goto(`${harness().url}/console/payouts/${payoutId}`);
    expect(await pageA.locator('[data-testid="substate"]').textContent()).to.equal('held: payee name');
    expect(await pageA.locator('[data-field="payee_name_check"] dd').textContent()).to.match(/^NO MATCH: /);
    expect(await pageA.locator('[data-field="payee_name_check"] dt').textContent()).to.equal(
      'Payee name check',
    );
    await pageA
      .locator('[data-testid="timeline"] tr[data-reason="PAYEE_NAME_HELD"]', {
        hasText: 'does not match',
      })
      .waitFor();

    const pageB = await browserOf('B');
    await signIn(pageB, b);
    const proposal = await queueRow(pageB, 'proposals', '', a.name);
    await proposal.locator('[data-testid="approve"]').click();
    await proposal.locator('input').fill('');
    await proposal.locator('button[type="submit"]').click();
    await proposal.waitFor({ state: 'detached' });
    await pageB.goto(`${harness().url}/console/payouts/${payoutId}`);
    await pageB.locator('[data-testid="timeline"] tr[data-reason="PAYEE_NAME_ACCEPTED"]').waitFor();
    expect(await pageB.locator('[data-testid="substate"]').count()).to.equal(0);
  });

  it('attributes unmatched money from the console, and keeps a failed approval inside its row, in words', async () => {
    const stamp = Date.now() % 100000;
    const a = await newOperator('operator', `Uche Attributor ${stamp}`);
    const b = await newOperator('approver', `Tayo Approver ${stamp}`);
    const merchant = await payoutReadyMerchant();
    const stray = await strayInflow(merchant);
    const other = await strayInflow(merchant);

    const pageA = await browserOf('A');
    await signIn(pageA, a);
    for (const inflow of [stray, other]) {
      const row = pageA.locator('[data-queue="unmatched"] tr', {
        has: pageA.locator(`code[title="${inflow.inflowId}"]`),
      });
      await row.waitFor();
      // The row says whose money it is and where it came from.
      expect(await row.locator(`code[title="${merchant.tenantId}"]`).count()).to.equal(1);
      expect(await row.textContent()).to.match(/on TRC20|on TRON/);
      await row.locator('[data-testid="propose-attribute"]').click();
      await row.locator('[data-testid="attribute-payout"]').fill(inflow.payoutId);
      await row.locator('input').nth(1).fill('the merchant sent it for this payout');
      await row.locator('button[type="submit"]').click();
      await row.locator('.outcome.done').waitFor();
    }
    await shot(pageA, 'exceptions-attribute');

    // The first proposal is approved by B: the money is the payout's now.
    const approvals = await trpcCall(
      'admin.approvals.list',
      'query',
      { state: 'PENDING', proposer_id: a.id },
      b.token,
    );
    const byInflow = new Map(
      approvals.body.result.data.data.map((p: { id: string; args: { inflow_id: string } }) => [
        p.args.inflow_id,
        p.id,
      ]),
    );
    const first = await trpcCall(
      'admin.approvals.approve',
      'mutation',
      { approval_id: byInflow.get(stray.inflowId) },
      b.token,
    );
    expect(first.status, JSON.stringify(first.body)).to.equal(200);
    // The second inflow is recorded returned meanwhile: attributing it can no longer run.
    const returned = await trpcCall(
      'admin.settlement.returnInflow',
      'mutation',
      { inflow_id: other.inflowId, reference: 'FT1', note: 'sent back by hand' },
      harness().adminToken,
    );
    await trpcCall(
      'admin.approvals.approve',
      'mutation',
      { approval_id: returned.body.result.data.approval.id },
      b.token,
    );

    const pageB = await browserOf('B');
    await signIn(pageB, b);
    const width = await pageB.evaluate(() => document.documentElement.scrollWidth);
    const failing = pageB.locator(
      `[data-queue="proposals"] tr[data-approval="${byInflow.get(other.inflowId)}"]`,
    );
    await failing.locator('[data-testid="approve"]').click();
    await failing.locator('button[type="submit"]').click();
    await pageB.locator('[data-testid="approvals"], [data-queue="proposals"]').first().waitFor();
    // The proposal is FAILED now, with its reason in words, and the page did not grow.
    await pageB.click('header.bar a[href="/console/approvals"]');
    await pageB.click('.tabs button:has-text("Decided")');
    const decided = pageB.locator(
      `[data-testid="approvals"] tr[data-approval="${byInflow.get(other.inflowId)}"]`,
    );
    await decided.waitFor();
    expect(await decided.getAttribute('data-state')).to.equal('FAILED');
    const reason = (await decided.locator('.failure-reason').textContent())!;
    expect(reason).to.match(/^Did not run: /);
    expect(reason).to.not.include('VALIDATION_FAILED');
    expect(await pageB.evaluate(() => document.documentElement.scrollWidth)).to.be.at.most(
      Math.max(width, 1400),
    );
    await shot(pageB, 'approvals-failed');
    // The browser logs the refused approval (409) as a failed resource: that refusal is the point here.
    const refusedApproval = problems.filter((p) => /^B: console: .*status of 409/.test(p));
    expect(refusedApproval).to.have.length(1);
    problems.splice(0, problems.length, ...problems.filter((p) => !refusedApproval.includes(p)));
  });

  it('walks a payout the processor returned after success from the sandbox to its refund, under four eyes, on the Reconciliation page', async () => {
    const stamp = Date.now() % 100000;
    const a = await newOperator('operator', `Ama Reconciler ${stamp}`);
    const b = await newOperator('approver', `Bayo Approver ${stamp}`);
    const merchant = await merchantWith();
    const payoutId = await paidPayout(merchant, payoutTo('4455', 'NGN'));
    const [outflow] = await dispatch(merchant, payoutId);
    await callbacksDelivered(outflow.id);
    // The beneficiary's bank sends the money back after the processor reported success.
    const returned = await fetch(`${harness().sandboxUrl}/sandbox/processor/payouts/${outflow.id}/return`, {
      method: 'POST',
    });
    expect(returned.status).to.equal(200);
    const day = harness().clock.now().toISOString().slice(0, 10);

    const pageA = await browserOf('A');
    await signIn(pageA, a);
    await pageA.click('header.bar a[href="/console/reconciliation"]');
    await pageA.fill('input[name="date"]', day);
    await pageA.selectOption('select[name="rail"]', 'PROCESSOR');
    await pageA.click('[data-testid="recon-run"] button[type="submit"]');
    await pageA.locator('[data-testid="recon-run"] .outcome.done').waitFor();
    const row = pageA.locator(`[data-testid="open-breaks"] tr[data-reference="${outflow.id}"]`);
    await row.waitFor();
    expect(await row.getAttribute('data-kind')).to.equal('STATE_DIFFERS');
    expect(await row.textContent()).to.include('Outcomes differ');
    await pageA.locator(`[data-testid="recon-runs"] tr[data-run]`, { hasText: day }).first().waitFor();

    // A proposes to send the returned money back to the merchant: a proposal, nothing moves yet.
    await row.locator('[data-testid="propose-refund"]').click();
    await row.locator('input').fill('GTBank returned it: account closed after payment');
    await row.locator('button[type="submit"]').click();
    await row.locator('.outcome.done').waitFor();
    const proposal = row.locator('[data-testid="break-proposals"] li[data-state="PENDING"]');
    await proposal.waitFor();
    expect(await proposal.textContent()).to.include('your proposal');
    await shot(pageA, 'reconciliation');

    // B approves it in a browser of their own: the break is resolved and the refund raised.
    const pageB = await browserOf('B');
    await signIn(pageB, b);
    await pageB.click('header.bar a[href="/console/reconciliation"]');
    const toDecide = pageB.locator(`[data-testid="open-breaks"] tr[data-reference="${outflow.id}"]`);
    await toDecide.locator('[data-testid="approve"]').click();
    await toDecide.locator('[data-testid="break-proposals"] input').fill('return confirmed on the report');
    await toDecide.locator('[data-testid="break-proposals"] button[type="submit"]').click();
    const resolved = pageB.locator(`[data-testid="resolved-breaks"] tr[data-reference="${outflow.id}"]`);
    await resolved.waitFor();
    const text = (await resolved.textContent())!;
    expect(text).to.include('Returned money refunded to the merchant');
    expect(text).to.include(b.name);
    expect(text).to.include(a.name);
    expect(
      await pageB.locator(`[data-testid="open-breaks"] tr[data-reference="${outflow.id}"]`).count(),
    ).to.equal(0);
    const payout = await trpcCall('admin.payouts.get', 'query', { payout_id: payoutId }, b.token);
    expect(payout.body.result.data.payout).to.include({ status: 'SUCCESSFUL', is_refunded: true });
    await shot(pageB, 'reconciliation-resolved');

    // Money: where the money is, from the ledger; the merchant's payouts line opens onto the
    // entries of this payout, which lead to its page.
    await pageB.click('header.bar a[href="/console/money"]');
    await pageB
      .locator('[data-testid="balances-world"] tr[data-account="world:beneficiaries"]')
      .first()
      .waitFor();
    const line = pageB.locator(
      `[data-testid="balances-tenant"] tr[data-account="tenants:${merchant.tenantId}:payouts"]`,
    );
    await line.first().waitFor();
    expect(await line.first().textContent()).to.include("merchant's money for that payout");
    await line.first().locator('[data-testid="drill"]').click();
    const entry = pageB.locator(`[data-entries-of="tenants:${merchant.tenantId}:payouts"] tr[data-entry]`, {
      hasText: 'payout',
    });
    await entry.first().waitFor();
    await shot(pageB, 'money');
    await entry.first().locator(`a[href="/console/payouts/${payoutId}"]`).click();
    await pageB.waitForURL(`**/console/payouts/${payoutId}`);
  });

  it('lists an overpayment owed among the exceptions, and returns it from the payout page under four eyes', async () => {
    const stamp = Date.now() % 100000;
    const a = await newOperator('operator', `Ayo Returner ${stamp}`);
    const b = await newOperator('approver', `Bisi Approver ${stamp}`);
    const merchant = await merchantWith();
    const payoutId = await paidPayout(merchant, payoutTo('4456', 'USDT'), { overpay: '2.5' });
    const [outflow] = await dispatch(merchant, payoutId);
    await callbacksDelivered(outflow.id);

    // The Exceptions page lists it among the overpayments to return, linked to the payout's page.
    const pageA = await browserOf('A');
    await signIn(pageA, a);
    const row = await queueRow(pageA, 'overpayments', `[data-payout="${payoutId}"]`);
    expect(await row.textContent()).to.match(/2\.5/);
    await shot(pageA, 'exceptions-overpayments');
    await row.locator(`a[href="/console/payouts/${payoutId}"]`).first().click();
    await pageA.waitForURL(`**/console/payouts/${payoutId}`);
    const owed = pageA.locator('[data-testid="overpayment"]');
    await owed.waitFor();
    expect(await owed.textContent()).to.match(/2\.5/);
    await owed.locator('[data-testid="propose-return-overpayment"]').click();
    await owed.locator('input').fill('the merchant asked for its excess back');
    await owed.locator('button[type="submit"]').click();
    await owed.locator('.outcome.done').waitFor();
    await shot(pageA, 'payout-overpayment');

    // Nothing moved: a proposal waits for B, who approves it (A may not).
    const pending = await trpcCall(
      'admin.approvals.list',
      'query',
      { state: 'PENDING', action: 'overpayment.return', target_id: payoutId },
      a.token,
    );
    const [proposal] = pending.body.result.data.data;
    expect(proposal).to.include({ proposer_id: a.id, amount: '2.5', currency: 'USDT' });
    const self = await trpcCall('admin.approvals.approve', 'mutation', { approval_id: proposal.id }, a.token);
    expect(self.status).to.equal(403);
    const approved = await trpcCall(
      'admin.approvals.approve',
      'mutation',
      { approval_id: proposal.id },
      b.token,
    );
    expect(approved.status).to.equal(200);
    expect(approved.body.result.data.state).to.equal('APPROVED');
    const refundId = approved.body.result.data.result.refund.id;

    // The page shows the refund that returns it, and nothing set aside any more.
    await pageA.reload();
    await pageA.locator(`[data-testid="refund"] [data-id="${refundId}"]`).waitFor();
    expect(await pageA.locator('[data-testid="overpayment"]').count()).to.equal(0);
  });
});

describe('the console served by the service', () => {
  it('serves its page on every /console path and its assets from the process, under a CSP of its own origin', async () => {
    for (const route of ['/console', '/console/payouts/anything', '/console/audit']) {
      const res = await fetch(`${harness().url}${route}`);
      expect(res.status, route).to.equal(200);
      expect(await res.text()).to.include('<script src="/console/assets/console.js"></script>');
      expect(res.headers.get('content-security-policy')).to.include("default-src 'none'");
      expect(res.headers.get('content-security-policy')).to.include("connect-src 'self'");
    }
    const script = await fetch(`${harness().url}/console/assets/console.js`);
    expect(script.status).to.equal(200);
    expect(script.headers.get('content-type')).to.include('javascript');
    // The committed bundle, not a build made on the fly: the same bytes as the file.
    const { readFile } = await import('node:fs/promises');
    expect(await script.text()).to.equal(
      await readFile(path.join(REPO_ROOT, 'src/console/dist/console.js'), 'utf8'),
    );
    expect((await fetch(`${harness().url}/console/assets/console.css`)).status).to.equal(200);
    expect((await fetch(`${harness().url}/console/assets/nothing.js`)).status).to.equal(404);
    expect(
      (await fetch(`${harness().url}/console/assets/console.js`, { method: 'POST' })).status,
    ).to.not.equal(200);
  });

  it('answers every method but GET and HEAD on /console with 405 and Allow', async () => {
    for (const route of ['/console', '/console/approvals', '/console/assets/console.js']) {
      for (const method of ['POST', 'PUT', 'PATCH', 'DELETE']) {
        const res = await fetch(`${harness().url}${route}`, { method });
        expect(res.status, `${method} ${route}`).to.equal(405);
        expect(res.headers.get('allow'), `${method} ${route}`).to.equal('GET, HEAD, OPTIONS');
        expect(((await res.json()) as { error: { code: string } }).error.code).to.equal('METHOD_NOT_ALLOWED');
      }
      expect((await fetch(`${harness().url}${route}`, { method: 'HEAD' })).status, `HEAD ${route}`).to.equal(
        200,
      );
    }
  });
});
