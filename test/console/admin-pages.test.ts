import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { type Browser, type BrowserContext, chromium, type Locator, type Page } from 'playwright-core';
import { REPO_ROOT } from '#src/docs/generate.ts';
import { CHROMIUM, CHROMIUM_FLAGS, requireChromium } from '../browser.ts';
import { uniqueName } from '../client.ts';
import { merchantWith } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { cliAs, newOperator, type TestOperator, trpcCall } from '../operators/fixtures.ts';
import {
  confirmationsOf,
  inflowByRef,
  mine,
  payoutWithInstruction,
  sendUsdt,
  settle,
} from '../settlement/fixtures.ts';

/**
 * The console's pages for what only the CLI did before (approval rules, operators, a tenant's
 * payee policy), and its notices and words (issue 25 §4), in Chromium as operators use it.
 */
const WAIT = 15_000;
/** Screenshots, next to those of console.test.ts (not committed; docs/console/ keeps chosen ones). */
const SHOTS = path.join(REPO_ROOT, 'test/artifacts/console');

describe('console: approval rules, operators, tenants and the audit in words, in Chromium', function () {
  this.timeout(120_000);
  let browser: Browser | undefined;
  const contexts: BrowserContext[] = [];
  const problems: string[] = [];

  before(async function () {
    requireChromium(this, "the console's browser test");
    await mkdir(SHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
  });

  after(async () => {
    for (const c of contexts) await c.close().catch(() => {});
    await browser?.close();
  });

  afterEach(() => {
    expect(problems, 'errors in the page').to.deep.equal([]);
  });

  async function browserOf(label: string): Promise<Page> {
    const context = await browser!.newContext({
      viewport: { width: 1400, height: 900 },
      timezoneId: 'Africa/Lagos',
    });
    contexts.push(context);
    context.setDefaultTimeout(WAIT);
    const page = await context.newPage();
    page.on('pageerror', (error) => problems.push(`${label}: ${error.message}`));
    page.on('console', (message) => {
      if (message.type() === 'error' && !/status of 40[139]/.test(message.text()))
        problems.push(`${label}: console: ${message.text()}`);
    });
    return page;
  }

  async function signIn(page: Page, operator: TestOperator): Promise<void> {
    await page.goto(`${harness().url}/console`);
    await page.fill('input[name="token"]', operator.token);
    await page.click('button[type="submit"]');
    await page.waitForSelector(`[data-testid="operator"]:has-text("${operator.name}")`);
  }

  /** Approves the proposal in `row` with a note, as the Approve button asks. */
  async function approve(row: Locator, note: string): Promise<void> {
    await row.locator('[data-testid="approve"]').click();
    await row.locator('input').fill(note);
    await row.locator('button[type="submit"]').click();
  }

  /** The rule of this suite, set back to one approver by root and a second admin whatever happens. */
  async function resetRule(secondAdmin: TestOperator): Promise<void> {
    const back = await cliAs()(
      'approval-rule',
      'propose',
      '--action',
      'inflow.return',
      '--above',
      '1000',
      '--currency',
      'USDT',
      '--approvers',
      '1',
    ).catch(() => null);
    if (back?.approval?.state === 'PENDING')
      await cliAs(secondAdmin)('approval', 'approve', back.approval.id).catch(() => {});
  }

  it('makes "inflow.return above 1,000 USDT needs two approvers" with a second admin; a matching return then waits for two approvers, never its proposer, and runs once', async () => {
    const [adminA, adminB] = [await newOperator('admin'), await newOperator('admin')];
    // An approver: what stops them approving their own proposal is four eyes, not their role.
    const proposer = await newOperator('approver', uniqueName('Pat Proposer'));
    const first = await newOperator('approver', uniqueName('Ama First'));
    const second = await newOperator('approver', uniqueName('Bayo Second'));
    try {
      // Admin A proposes the rule on the Approval rules page; the form clears once it is proposed.
      const pageA = await browserOf('admin A');
      await signIn(pageA, adminA);
      await pageA.click('header.bar a[href="/console/rules"]');
      const form = pageA.locator('[data-testid="propose-rule"]');
      await form.locator('select[name="action"]').selectOption('inflow.return');
      await form.locator('input[name="above"]').fill('1000');
      await form.locator('input[name="currency"]').fill('usdt');
      await form.locator('select[name="approvers"]').selectOption('2');
      await form.locator('input[name="note"]').fill('large returns need two people');
      await form.locator('button[type="submit"]').click();
      await form.locator('.outcome.done').waitFor();
      expect(await form.locator('input[name="above"]').inputValue(), 'the form clears').to.equal('');
      const proposed = pageA
        .locator('[data-queue="rule-proposals"] tr[data-approval]')
        .filter({ hasText: 'inflow.return above 1000 USDT needs 2' });
      await proposed.waitFor();
      expect(await proposed.textContent()).to.include('your proposal');
      const ruleApproval = (await proposed.getAttribute('data-approval'))!;

      // Admin B approves it there; the rules table then shows it in force.
      const pageB = await browserOf('admin B');
      await signIn(pageB, adminB);
      await pageB.click('header.bar a[href="/console/rules"]');
      await approve(
        pageB.locator(`[data-queue="rule-proposals"] tr[data-approval="${ruleApproval}"]`),
        'agreed',
      );
      const rule = pageB.locator('[data-testid="rules"] tr[data-action="inflow.return"]', {
        hasText: 'above 1,000 USDT',
      });
      await rule.waitFor();
      expect(await rule.locator('td.count').textContent()).to.equal('2');
      await pageB.screenshot({ path: path.join(SHOTS, 'rules.png'), fullPage: true });
      const audit = await cliAs()('audit', 'list', '--target', ruleApproval);
      expect(audit.data.map((r: { outcome: string }) => r.outcome)).to.have.members(['PENDING', 'APPROVED']);

      // 1,500 USDT below every open instruction of its address: held, attributed to nobody.
      const merchant = await merchantWith();
      const payout = await payoutWithInstruction(merchant, { destination_amount: 9_000_000 });
      expect(Number(payout.instruction.expected)).to.be.above(1500);
      const tx = await sendUsdt('TRON', payout.instruction.account_unique, '1500');
      await mine('TRON', confirmationsOf('TRON'));
      await settle();
      const inflow = (await inflowByRef(tx))!;
      expect(inflow).to.include({ state: 'HELD', payout: null });

      // The operator proposes its return from the Exceptions page.
      const pageP = await browserOf('proposer');
      await signIn(pageP, proposer);
      const section = pageP.locator('[data-queue="unmatched"]');
      const row = section.locator(`tr[data-inflow="${inflow.id}"]`);
      for (;;) {
        await row.or(section.locator('button.more:not([disabled])')).first().waitFor();
        if ((await row.count()) > 0) break;
        await section.locator('button.more').click();
      }
      await row.locator('button', { hasText: 'Propose return' }).click();
      await row.locator('[data-testid="return-reference"]').fill('FT-RETURN-7781');
      await row.locator('input[aria-label^="Note for"]').fill('sent back by hand: ticket 7781');
      await row.locator('button[type="submit"]').click();
      await row.locator('.outcome.done').waitFor();
      const { data: proposals } = await cliAs()(
        'approval',
        'list',
        '--target',
        inflow.id,
        '--state',
        'PENDING',
      );
      expect(proposals).to.have.length(1);
      const moveId = proposals[0].id as string;
      expect(proposals[0]).to.include({ required_approvers: 2, action: 'inflow.return' });

      // Its proposer sees 0 of 2 and no Approve; the server refuses them anyway.
      await pageP.click('header.bar a[href="/console/approvals"]');
      await pageP.click('.tabs button:has-text("Mine")');
      const mineRow = pageP.locator(`[data-testid="approvals"] tr[data-approval="${moveId}"]`);
      await mineRow.waitFor();
      expect(await mineRow.locator('[data-testid="approvals-progress"]').textContent()).to.match(
        /^0 of 2 approvals/,
      );
      expect(await mineRow.locator('[data-testid="approve"]').count()).to.equal(0);
      const self = await trpcCall(
        'admin.approvals.approve',
        'mutation',
        { approval_id: moveId },
        proposer.token,
      );
      expect(self.body.error.data.app_code).to.equal('SELF_APPROVAL_FORBIDDEN');

      // The first approver: still PENDING, 1 of 2, nothing moved; no second approval from them.
      const page1 = await browserOf('first approver');
      await signIn(page1, first);
      await page1.click('header.bar a[href="/console/approvals"]');
      const row1 = page1.locator(`[data-testid="approvals"] tr[data-approval="${moveId}"]`);
      await approve(row1, 'checked the bank statement');
      await row1.locator('text=you approved it').waitFor();
      expect(await row1.getAttribute('data-state')).to.equal('PENDING');
      expect(await row1.locator('[data-testid="approvals-progress"]').textContent()).to.match(
        /^1 of 2 approvals/,
      );
      expect(await row1.textContent()).to.include('you approved it');
      expect(await row1.locator('[data-testid="approve"]').count()).to.equal(0);
      expect((await inflowByRef(tx))!.state, 'one approval of two moves nothing').to.equal('HELD');

      // The second approver: it runs, once.
      const page2 = await browserOf('second approver');
      await signIn(page2, second);
      await page2.click('header.bar a[href="/console/approvals"]');
      const row2 = page2.locator(`[data-testid="approvals"] tr[data-approval="${moveId}"]`);
      await approve(row2, 'agreed');
      // Decided, it leaves the pending list.
      await row2.waitFor({ state: 'detached' });
      const back = (await inflowByRef(tx))!;
      expect([back.state, back.returnedReference]).to.deep.equal(['RETURNED', 'FT-RETURN-7781']);
      const moveAudit = await cliAs()('audit', 'list', '--target', moveId);
      // One proposal, one partial approval, one approval that ran: the move ran once.
      expect(moveAudit.data.map((r: { outcome: string }) => r.outcome)).to.have.members([
        'PENDING',
        'APPROVED_1_OF_2',
        'APPROVED',
      ]);
      const again = await trpcCall(
        'admin.approvals.approve',
        'mutation',
        { approval_id: moveId },
        adminA.token,
      );
      expect(again.body.error.data.app_code).to.equal('APPROVAL_NOT_PENDING');

      // The audit page says it in words, with times in UTC.
      await page2.click('header.bar a[href="/console/audit"]');
      const words = page2.locator('[data-testid="audit"] tr[data-outcome="APPROVED_1_OF_2"]', {
        hasText: first.name,
      });
      await words.first().waitFor();
      expect(await words.first().textContent())
        .to.include('approved a proposal')
        .and.include('approval 1 of 2: still waiting')
        .and.include(' UTC')
        .and.not.include('admin.approvals.approve');
      expect(await page2.locator('[data-testid="audit-filters"]').textContent()).to.include('Africa/Lagos');
      await page2.screenshot({ path: path.join(SHOTS, 'audit-in-words.png'), fullPage: true });

      // Admin A retires the rule (asked first), admin B approves: one approver again.
      await pageA.reload();
      const inForce = pageA.locator('[data-testid="rules"] tr[data-action="inflow.return"]', {
        hasText: 'above 1,000 USDT',
      });
      await inForce.locator('button', { hasText: 'Retire' }).click();
      await inForce.locator('button', { hasText: 'Yes, propose it' }).click();
      await inForce.locator('.outcome.done').waitFor();
      await pageB.reload();
      await approve(
        pageB
          .locator('[data-queue="rule-proposals"] tr[data-approval]')
          .filter({ hasText: 'inflow.return above 1000 USDT needs 1' }),
        'back to one',
      );
      await pageB
        .locator('[data-testid="rules"] tr[data-action="inflow.return"]', { hasText: 'above 1,000 USDT' })
        .locator('td.count', { hasText: '1' })
        .waitFor();
    } finally {
      await resetRule(adminB);
    }
  });

  it('refuses a tenant name taken, clears the form after Create, asks before revoking a key, and drops stale notices', async () => {
    const operator = await newOperator('operator');
    const page = await browserOf('tenants');
    await signIn(page, operator);
    await page.click('header.bar a[href="/console/tenants"]');
    const form = page.locator('[data-testid="create-tenant"]');
    const name = uniqueName('Zenith Foods');

    await form.locator('input[name="tenant-name"]').fill(name);
    await form.locator('button[type="submit"]').click();
    await form.locator('.outcome.done').waitFor();
    expect(await form.locator('input[name="tenant-name"]').inputValue(), 'cleared after Create').to.equal('');

    // The same name again, in other case: refused in words, and what was typed stays.
    await form.locator('input[name="tenant-name"]').fill(name.toUpperCase());
    await form.locator('button[type="submit"]').click();
    const refusal = form.locator('.outcome.failed');
    await refusal.waitFor();
    expect(await refusal.textContent()).to.include(`A tenant named "${name}" exists already`);
    expect(await form.locator('input[name="tenant-name"]').inputValue()).to.equal(name.toUpperCase());

    // Acting again drops the refusal; the key issued is shown once.
    const tenantRow = page.locator('tr[data-tenant]', { hasText: name });
    await tenantRow.locator('button', { hasText: 'Issue API key' }).click();
    await page.locator('[data-testid="issued-key"]').waitFor();
    expect(await form.locator('.outcome.failed').count(), 'the stale refusal is gone').to.equal(0);
    const keyId = (await page.locator('[data-testid="issued-key"] code.id').nth(1).getAttribute('title'))!;

    // Revoking asks first; Cancel keeps the key.
    await tenantRow.locator('button', { hasText: 'Keys' }).click();
    const keyRow = page.locator(`tr[data-key="${keyId}"]`);
    await keyRow.locator('button', { hasText: 'Revoke' }).click();
    expect(await keyRow.textContent()).to.include('It stops working at once');
    await keyRow.locator('button', { hasText: 'Cancel' }).click();
    expect(await keyRow.textContent()).to.include('not revoked');
    await keyRow.locator('button', { hasText: 'Revoke' }).click();
    await keyRow.locator('button', { hasText: 'Yes, revoke it' }).click();
    await keyRow.locator('td', { hasText: 'not revoked' }).waitFor({ state: 'detached' });
    // The key shown once goes with its revocation.
    await page.locator('[data-testid="issued-key"]').waitFor({ state: 'detached' });

    // Another page and back: no notice of earlier actions is left.
    await page.click('header.bar a[href="/console/audit"]');
    await page.click('header.bar a[href="/console/tenants"]');
    await page.locator('tr[data-tenant]').first().waitFor();
    expect(await page.locator('.outcome').count(), 'notices after navigating').to.equal(0);
  });

  it('lets an admin create an operator (token shown once), change roles and revoke with a confirmation; sign-in and Machines render their markdown', async () => {
    // The sign-in page: `npm start` as code, not backticks.
    const page = await browserOf('operators');
    await page.goto(`${harness().url}/console`);
    expect(await page.locator('main.sign-in p code').first().textContent()).to.equal('npm start');
    expect(await page.locator('main.sign-in').textContent()).to.not.include('`');

    const admin = await newOperator('admin');
    await signIn(page, admin);
    await page.click('header.bar a[href="/console/machines"]');
    await page.locator('section[data-machine="payout"]').waitFor();
    const machines = (await page.locator('main.machines').textContent())!;
    expect(machines, 'raw backticks on Machines').to.not.include('`');

    // The ledger's checks, which only the CLI ran: what is out of balance, and a check on demand.
    await page.click('header.bar a[href="/console/exceptions"]');
    const balance = page.locator('[data-queue="out-of-balance"]');
    await balance.locator('button', { hasText: 'Check the ledger now' }).click();
    await balance.locator('.outcome.done').waitFor();

    await page.click('header.bar a[href="/console/operators"]');
    const form = page.locator('[data-testid="create-operator"]');
    const name = uniqueName('Chidi Viewer');
    await form.locator('input[name="operator-name"]').fill(name);
    await form.locator('select[name="operator-role"]').selectOption('viewer');
    await form.locator('button[type="submit"]').click();
    const shown = page.locator('[data-testid="issued-token"] code.secret');
    await shown.waitFor();
    const token = (await shown.textContent())!;
    const whoami = await cliAs({ token })('whoami');
    expect(whoami).to.include({ name, role: 'viewer' });
    expect(await form.locator('input[name="operator-name"]').inputValue()).to.equal('');

    // Lowering and raising to operator are immediate; revoking asks first.
    const row = page.locator(`tr[data-operator="${whoami.id}"]`);
    await row.locator('select').selectOption('operator');
    await row.locator('button', { hasText: 'Change role' }).click();
    await row.locator('td', { hasText: /^operator$/ }).waitFor();
    await row.locator('button', { hasText: 'Revoke' }).click();
    await row.locator('button', { hasText: 'Yes, revoke' }).click();
    await row.waitFor({ state: 'detached' });
    expect((await trpcCall('admin.me', 'query', undefined, token)).status).to.equal(401);
  });
});
