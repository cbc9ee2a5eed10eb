import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { type BrowserContext, chromium, type Page } from 'playwright-core';
import { committedModel, REPO_ROOT } from '#src/docs/generate.ts';
import { CHROMIUM, CHROMIUM_FLAGS, requireChromium } from '../browser.ts';
import { harness } from '../harness.ts';

/**
 * The documentation pages in a real browser: Debian's Chromium driven by playwright-core (never a
 * browser that Playwright downloads), started with flags that keep it off the network, against
 * the running test service. Any request to another origin is refused and fails the test.
 *
 * Without Chromium this suite fails when CI is set (`.ci/run` installs it); on a developer's
 * machine without CI set it is skipped, saying why.
 */
const ARTIFACTS = path.join(REPO_ROOT, 'test/artifacts');
/** The longest a page may take to render: bounded, and with room for a loaded 2-core machine. */
const RENDER_TIMEOUT_MS = 150_000;

describe('documentation pages in Chromium', function () {
  this.timeout(RENDER_TIMEOUT_MS + 60_000);
  let context: BrowserContext | undefined;
  let userDataDir: string | undefined;
  const foreign: string[] = [];
  const problems: string[] = [];

  before(async function () {
    requireChromium(this, 'the browser test');
    userDataDir = await mkdtemp(path.join(os.tmpdir(), 'docs-chromium-'));
    await mkdir(ARTIFACTS, { recursive: true });
    // A persistent context is how Playwright takes a user data directory of our choosing: a fresh one.
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_FLAGS,
      viewport: { width: 1400, height: 900 },
    });
    const own = new URL(harness().url).origin;
    await context.route('**/*', (route) => {
      const url = route.request().url();
      if (url.startsWith('data:') || url.startsWith('blob:') || new URL(url).origin === own) {
        return route.continue();
      }
      foreign.push(url);
      return route.abort();
    });
  });

  after(async () => {
    await context?.close();
    if (userDataDir) await rm(userDataDir, { recursive: true, force: true });
  });

  async function open(pathname: string): Promise<Page> {
    const page = await context!.newPage();
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`${pathname}: console: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`${pathname}: ${error.message}`));
    const response = await page.goto(`${harness().url}${pathname}`);
    expect(response?.status(), pathname).to.equal(200);
    return page;
  }

  afterEach(() => {
    expect(foreign, 'requests to other origins').to.deep.equal([]);
    expect(problems, 'errors in the page').to.deep.equal([]);
  });

  it('renders the API reference from /openapi.json, listing every endpoint and every webhook', async () => {
    const page = await open('/docs');
    // Swagger UI parses its 1.4 MB bundle and renders the whole document: seconds on a quiet
    // machine, far more on a loaded 2-core one. Wait for what marks the end of it (the reference
    // page sets it once rendered) and the first operation's block, as long as the test may run.
    await page.waitForSelector('#reference[data-rendered="true"] .opblock', { timeout: RENDER_TIMEOUT_MS });
    const listed = await page.$$eval('.opblock', (blocks) =>
      blocks.map((b) => {
        const method = b.querySelector('.opblock-summary-method')?.textContent ?? '';
        const route = b.querySelector('[data-path]')?.getAttribute('data-path') ?? '';
        return `${method} ${route}`;
      }),
    );
    const spec = (await (await fetch(`${harness().url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, unknown>>;
      webhooks: Record<string, Record<string, unknown>>;
    };
    const expected = [...Object.entries(spec.paths), ...Object.entries(spec.webhooks)].flatMap(
      ([route, ops]) =>
        Object.keys(ops)
          .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
          .map((m) => `${m.toUpperCase()} ${route}`),
    );
    expect(expected).to.include('POST /v1/payouts');
    expect(expected).to.include('POST payout.successful');
    // An operation with several tags is listed under each of them.
    expect([...new Set(listed)].sort()).to.deep.equal([...expected].sort());
    expect(await page.textContent('body')).to.include('/v1/payouts');
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-reference.png'), fullPage: true });
    await page.close();
  });

  it('shows every machine to a compliance reviewer on a 1,400 px page, without scrolling sideways', async () => {
    const page = await open('/docs/machines');
    const { machines } = committedModel();
    for (const machine of machines) {
      const section = page.locator(`section[data-machine="${machine.name}"]`);
      expect(await section.locator('svg').count(), machine.name).to.equal(1);
      // Every state is a box and every transition an arrow, with the ids the console highlights.
      for (const s of machine.states.filter((x) => x.children.length === 0)) {
        expect(await section.locator(`svg [id="${machine.name}/${s.path}"]`).count(), s.path).to.equal(1);
      }
      for (const t of machine.transitions) {
        for (const edge of t.diagram_edges) {
          expect(await section.locator(`svg [id="${edge.id}"]`).count(), edge.id).to.equal(1);
        }
      }
      // A sentence and the money for every state, who acts for every transition.
      const states = await section.locator('table.states tbody tr[data-state]').allInnerTexts();
      expect(states, machine.name).to.have.length(machine.states.length);
      for (const row of states) expect(row.split('\t')[1]!.length, row).to.be.above(10);
      // Where the ledger tells a state's money apart, each case is a row of its own under it.
      const cases = machine.states.flatMap((x) => x.cases.map((c) => `${x.path} ${c.code}`));
      const caseRows = section.locator('table.states tbody tr[data-case-of]');
      expect(await caseRows.count(), machine.name).to.equal(cases.length);
      const whoCells = await section.locator('table.transitions tbody tr td.who').allInnerTexts();
      expect(whoCells, machine.name).to.have.length(machine.transitions.length);
      for (const who of whoCells)
        expect(who).to.match(/the system|the processor|the bank or chain|operator|the merchant/);
    }
    expect(await page.locator('section[data-machine="payout"] table.states').textContent()).to.include(
      'held for a person',
    );
    expect(
      await page.locator('section[data-machine="payout"] tr[data-case="RETURNED_TO_MERCHANT"]').textContent(),
    ).to.include('refund fee');
    // The legend explains four eyes in a colour of its own, and names the fees.
    const legend = page.locator('section.legend');
    expect(await legend.textContent())
      .to.include('an operator, with four eyes')
      .and.include('refund fee');
    expect(await page.locator('#overview').textContent()).to.include('creates a refund');

    // Open the engineers' tables too: nothing on the page may be wider than the window.
    await page.$$eval('details', (all) => {
      for (const d of all) d.setAttribute('open', '');
    });
    // Evaluated in the page (the test's own types have no DOM).
    const widths = (await page.evaluate(`({
      page: document.documentElement.scrollWidth,
      window: window.innerWidth,
      diagrams: [...document.querySelectorAll('.diagram')].map((d) => {
        const svg = d.querySelector('svg');
        return {
          id: d.closest('section').id,
          natural: svg.width.baseVal.value,
          drawn: svg.getBoundingClientRect().width,
          room: d.clientWidth,
        };
      }),
    })`)) as {
      page: number;
      window: number;
      diagrams: { id: string; natural: number; drawn: number; room: number }[];
    };
    expect(widths.page, 'page width').to.be.at.most(widths.window);
    expect(widths.window).to.equal(1400);
    for (const d of widths.diagrams) {
      // Drawn at its own size (not shrunk to fit), and inside its frame.
      expect(Math.abs(d.drawn - d.natural), `${d.id} drawn at natural size`).to.be.below(1);
      expect(d.natural, `${d.id} width`).to.be.at.most(d.room);
    }
    await page.$$eval('details', (all) => {
      for (const d of all) d.removeAttribute('open');
    });
    await page.screenshot({ path: path.join(ARTIFACTS, 'docs-machines.png'), fullPage: true });
    // The navigation leads to the reference (whose rendering the test above covers).
    await Promise.all([page.waitForURL('**/docs'), page.click('nav a[href="/docs"]')]);
    expect(await page.locator('main#reference').count()).to.equal(1);
    await page.close();
  });
});
