import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import type { Context } from 'mocha';
import { type Browser, chromium, type Page } from 'playwright-core';
import { REPO_ROOT } from '#src/docs/generate.ts';
import { CHROMIUM, CHROMIUM_FLAGS, requireChromium } from '../browser.ts';
import { harness } from '../harness.ts';
import { newOperator } from '../operators/fixtures.ts';

/** Where the console's browser tests put their screenshots. */
export const SHOTS = path.join(REPO_ROOT, 'test/artifacts/console');

/**
 * One Chromium page on the console, signed in as a new viewer, for a suite that reads pages: opened
 * in the suite's `before`, closed in its `after`, and every error the page throws fails the test
 * it happened in. `page()` is the page once `before` has run.
 */
export function viewerConsole(what: string): { page: () => Page } {
  let browser: Browser | undefined;
  let page: Page | undefined;
  const problems: string[] = [];

  before(async function (this: Context) {
    requireChromium(this, what);
    await mkdir(SHOTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_FLAGS });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
    page.on('pageerror', (error) => problems.push(error.message));
    const viewer = await newOperator('viewer');
    await page.goto(`${harness().url}/console`);
    await page.fill('input[name="token"]', viewer.token);
    await page.click('button[type="submit"]');
    await page.waitForSelector(`[data-testid="operator"]:has-text("${viewer.name}")`);
  });

  after(async () => {
    await browser?.close();
  });

  afterEach(() => {
    expect(problems.splice(0), 'errors in the page').to.deep.equal([]);
  });

  return {
    page: () => {
      if (!page) throw new Error('the console page is opened in the suite’s before hook');
      return page;
    },
  };
}
