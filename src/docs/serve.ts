import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Context, Middleware } from 'koa';
import type { Config } from '#src/config.ts';
import {
  ACTOR_TERMS,
  actorsText,
  buildComplianceModel,
  type ComplianceMachine,
  type ComplianceModel,
  fromText,
  linkGroups,
  linkLines,
  MONEY_TERMS,
  moneyText,
  NO_MONEY,
  toText,
  waitingText,
} from './compliance.ts';
import { complianceDot, OVERVIEW, overviewDot } from './diagrams.ts';
import { describeMachine, dotToSvg, machineTitle, readingGuide, tableColumns } from './machines.ts';
import { MACHINE_DOCS, type MachineDoc } from './registry.ts';

/**
 * The documentation a running service serves: `/docs` (the API reference, Swagger UI rendering
 * `/openapi.json`) and `/docs/machines` (every state machine's diagram and transition table).
 * Every asset comes from this process: Swagger UI's prebuilt bundle from node_modules, diagrams
 * rendered from the machines in memory. The pages load nothing from anywhere else, and their
 * Content-Security-Policy tells the browser to refuse it if they tried.
 */

const require = createRequire(import.meta.url);

/** Files of swagger-ui-dist served under /docs/assets/; nothing else of the package is reachable. */
const SWAGGER_ASSETS: Record<string, { file: string; type: string }> = {
  'swagger-ui.css': { file: 'swagger-ui-dist/swagger-ui.css', type: 'text/css; charset=utf-8' },
  'swagger-ui-bundle.js': {
    file: 'swagger-ui-dist/swagger-ui-bundle.js',
    type: 'text/javascript; charset=utf-8',
  },
  'favicon-32x32.png': { file: 'swagger-ui-dist/favicon-32x32.png', type: 'image/png' },
};

// Swagger UI needs inline styles (it sets style attributes) but no inline script: its start-up
// code is the reference.js below. connect-src 'self' limits "Try it out" to this service.
const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

// Points "Try it out" at the service that serves the page (the document names the default
// address), and turns off the one feature that would call out: the online spec validator. Once
// Swagger UI has rendered the document, #reference says so (data-rendered), for whatever waits.
const REFERENCE_JS = `'use strict';
fetch('/openapi.json')
  .then((response) => response.json())
  .then((spec) => {
    spec.servers = [{ url: window.location.origin, description: 'This service' }];
    window.ui = SwaggerUIBundle({
      spec,
      dom_id: '#reference',
      validatorUrl: null,
      deepLinking: true,
      docExpansion: 'list',
      defaultModelsExpandDepth: 0,
      showExtensions: true,
      displayRequestDuration: true,
      onComplete: () => {
        document.getElementById('reference').dataset.rendered = 'true';
      },
    });
  })
  .catch((error) => {
    document.getElementById('reference').textContent = 'Could not load /openapi.json: ' + error;
  });
`;

const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const NAV_STYLE = `
  body { margin: 0; font-family: system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif; color: #1d2433; }
  nav.docs-nav { display: flex; gap: 1.25rem; align-items: baseline; padding: 0.75rem 1.5rem; background: #1d2433; }
  nav.docs-nav strong { color: #fff; margin-right: 1rem; }
  nav.docs-nav a { color: #cfe0ff; text-decoration: none; }
  nav.docs-nav a[aria-current] { color: #fff; text-decoration: underline; }`;

function nav(current: 'reference' | 'machines'): string {
  const link = (href: string, label: string, here: boolean) =>
    `<a href="${href}"${here ? ' aria-current="page"' : ''}>${label}</a>`;
  return `<nav class="docs-nav"><strong>Merchant Payout Service</strong>${link('/docs', 'API reference', current === 'reference')}${link('/docs/machines', 'State machines', current === 'machines')}${link('/openapi.json', 'openapi.json', false)}</nav>`;
}

/** The frame both pages share: head, styles, navigation. */
function page(options: {
  title: string;
  current: 'reference' | 'machines';
  head?: string;
  style: string;
  body: string;
}): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title} · Merchant Payout Service</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
${options.head ?? ''}<style>${NAV_STYLE}
${options.style}
</style>
</head>
<body>
${nav(options.current)}
${options.body}
</body>
</html>
`;
}

function referencePage(): string {
  return page({
    title: 'API reference',
    current: 'reference',
    head: '<link rel="stylesheet" href="/docs/assets/swagger-ui.css">\n',
    style: '  .swagger-ui .topbar { display: none; }',
    body: `<main id="reference">Loading the API reference…</main>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/assets/reference.js"></script>`,
  });
}

/** A name from the code, allowed to wrap after its dots and underscores. */
const code = (text: string): string => `<code>${escapeHtml(text).replace(/([._])/g, '$1<wbr>')}</code>`;

/** Plain text with `backticks` around names from the code, as HTML. */
const richText = (text: string): string => escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');

/** Inline SVG in HTML needs neither the XML prolog and doctype nor the namespace declarations. */
const inlineSvg = (svg: string): string =>
  svg.replace(/^[\s\S]*?(?=<svg)/, '').replace(/\s+xmlns(?::xlink)?="[^"]*"/g, '');

function legend(model: ComplianceModel): string {
  const money = model.money_places
    .map(
      (m) =>
        `<li><span class="chip" style="background:${m.color}"></span><strong>${escapeHtml(m.label)}</strong>: ${escapeHtml(m.text)}</li>`,
    )
    .join('');
  const actors = model.actors
    .map(
      (a) =>
        `<li><span class="line" style="background:${a.color}"></span><strong>${escapeHtml(a.label)}</strong>: ${escapeHtml(a.text)}</li>`,
    )
    .join('');
  return `<section class="legend" aria-label="How to read the pictures">
<div><h2>Where the money is</h2><p>The colour of each box.</p><ul>${money}<li><span class="chip" style="background:#f4f6f9"></span><strong>${escapeHtml(NO_MONEY.label)}</strong>: ${escapeHtml(NO_MONEY.text)}</li></ul></div>
<div><h2>Who acts</h2><p>The colour of each arrow.</p><ul>${actors}</ul>
<p>A double border marks a final state: nothing changes it any more. An arrow's number is the row of the transitions table below the picture.</p></div>
<div><h2>Fees kept by the service</h2><p>Wherever money is kept as a fee, it is one of these, each in its own ledger account.</p><ul>${model.fees
    .map(
      (f) =>
        `<li><strong>${escapeHtml(f.label)}</strong> (<code>${escapeHtml(f.account)}</code>): ${richText(f.text)}</li>`,
    )
    .join('')}</ul></div>
</section>`;
}

function overviewSection(model: ComplianceModel, svg: string): string {
  const rows = linkGroups(model)
    .map(
      (g) =>
        `<tr><td>${richText(`${g.when[0]!.toUpperCase()}${g.when.slice(1)}`)}</td><td><a href="#${g.machine}">${escapeHtml(machineTitle(g.machine))}</a> ${g.transitions.join(', ')}</td><td>${richText(g.then)}</td></tr>`,
    )
    .join('\n');
  return `<section id="overview" class="machine">
<h2>How the machines move each other</h2>
<p>One machine's transition can create or move another's object: a payout that fails after the merchant paid raises a refund, an attempt's outcome moves its payout, and every event the merchant is told about becomes a webhook delivery.</p>
<div class="diagram">${inlineSvg(svg)}</div>
<table class="links"><thead><tr><th>When</th><th>Transitions</th><th>What follows</th></tr></thead>
<tbody>
${rows}
</tbody></table>
<p class="note">Besides these, every transition that tells the merchant something creates one webhook delivery per event: the transitions tables below say which.</p>
</section>`;
}

async function machineSection(doc: MachineDoc, machine: ComplianceMachine): Promise<string> {
  const model = describeMachine(doc.machine);
  const columns = tableColumns(model);
  const svg = inlineSvg(await dotToSvg(complianceDot(machine)));
  const creation = machine.transitions[0]!;
  const states = machine.states
    .map(
      (s) =>
        `<tr data-state="${escapeHtml(s.path)}"><td>${code(s.path)}</td><td>${richText(s.description)}${s.waiting.length ? `<p class="waiting">${richText(waitingText(s))}</p>` : ''}</td><td class="money">${s.money ? `<span class="chip" style="background:${MONEY_TERMS[s.money].color}"></span>` : ''}${escapeHtml(moneyText(machine, s))}</td><td>${s.final ? 'final' : ''}</td></tr>${s.cases
          .map(
            (c) =>
              `\n<tr class="case" data-case-of="${escapeHtml(s.path)}" data-case="${escapeHtml(c.code)}"><td>${code(c.code)}</td><td>${richText(c.description)}<p class="note">How the ledger tells it: ${richText(c.ledger)}.</p></td><td class="money"><span class="chip" style="background:${MONEY_TERMS[c.money].color}"></span>${escapeHtml(MONEY_TERMS[c.money].label)}</td><td></td></tr>`,
          )
          .join('')}`,
    )
    .join('\n');
  const transitions = machine.transitions
    .map(
      (t) =>
        `<tr data-transition="${t.number}"><td>${t.number}</td><td>${code(fromText(t))} →<br>${code(toText(t))}${t.event ? `<br><span class="event">on ${code(t.event)}</span>` : ''}</td><td>${richText(t.description)}</td><td class="who">${t.by.map((who) => `<span style="color:${ACTOR_TERMS[who].color}">${escapeHtml(ACTOR_TERMS[who].label)}</span>`).join(', or ')}</td><td>${t.guard ? richText(t.guard.text) : ''}</td><td>${linkLines(t).map(escapeHtml).join('<br>')}</td></tr>`,
    )
    .join('\n');
  const guards = machine.guards.length
    ? `<h3>Conditions by their name in the code</h3>
<table><thead><tr><th>Guard</th><th>Holds when</th><th>Fails when</th></tr></thead><tbody>
${machine.guards.map((g) => `<tr><td>${code(g.name)}</td><td>${richText(g.holds)}</td><td>${richText(g.fails)}</td></tr>`).join('\n')}
</tbody></table>`
    : '';
  const thresholds = machine.thresholds.length
    ? `<h3>Thresholds in force</h3>
<table><thead><tr><th>Name</th><th>Value</th><th>Set by</th></tr></thead><tbody>
${machine.thresholds.map((t) => `<tr><td>${code(t.name)}</td><td>${escapeHtml(t.display)}</td><td>${{ configuration: "this service's configuration", code: 'the code', corridors: 'the corridors file' }[t.source]}</td></tr>`).join('\n')}
</tbody></table>`
    : '';
  const rows = model.transitions
    .map((t) => `<tr>${columns.map((c) => `<td>${code(c.cell(t))}</td>`).join('')}</tr>`)
    .join('\n');
  return `<section class="machine" id="${doc.name}" data-machine="${doc.name}">
<h2>${escapeHtml(machine.title)} <small>${escapeHtml(machine.source)}</small></h2>
<p class="summary">${richText(machine.summary)}</p>
<p><strong>How one begins:</strong> ${richText(creation.description)} <span class="note">(${escapeHtml(actorsText(creation.by))})</span></p>
${machine.holds_money ? '' : `<p class="note">This machine holds no money: ${escapeHtml(NO_MONEY.text)}</p>`}
<div class="diagram">${svg}</div>
<h3>States</h3>
<table class="states"><colgroup><col class="state"><col><col class="money"><col class="final"></colgroup><thead><tr><th>State</th><th>What it means</th><th>Where the money is</th><th>Final</th></tr></thead><tbody>
${states}
</tbody></table>
<h3>Transitions</h3>
<table class="transitions"><colgroup><col class="number"><col class="ends"><col><col class="who"><col><col></colgroup><thead><tr><th>#</th><th>From → to</th><th>What happens</th><th>Who can cause it</th><th>Condition</th><th>Links to other machines</th></tr></thead><tbody>
${transitions}
</tbody></table>
${guards}
${thresholds}
<details class="engineers"><summary>For engineers: events, guards, reason codes, webhooks and scheduled work</summary>
<ul class="guide">${readingGuide(model)
    .map((line) => `<li>${richText(line)}</li>`)
    .join('')}</ul>
<table>
<thead><tr>${columns.map((c) => `<th>${escapeHtml(c.title)}</th>`).join('')}</tr></thead>
<tbody>
${rows}
</tbody>
</table>
</details>
</section>`;
}

async function machinesPage(config: Config): Promise<string> {
  const { model } = buildComplianceModel(MACHINE_DOCS, config);
  const sections = [legend(model), overviewSection(model, await dotToSvg(overviewDot(model)))];
  for (const doc of MACHINE_DOCS) {
    sections.push(await machineSection(doc, model.machines.find((m) => m.name === doc.name)!));
  }
  return page({
    title: 'State machines',
    current: 'machines',
    style: `  main { padding: 0 1.5rem 3rem; max-width: 88rem; }
  p, li { line-height: 1.45; }
  h2 { margin-top: 2.5rem; border-bottom: 1px solid #d5dbe5; padding-bottom: 0.3rem; }
  h2 small { font-weight: normal; font-size: 0.7em; color: #5b6578; margin-left: 0.5rem; }
  h3 { margin: 1.5rem 0 0.5rem; }
  .note { color: #5b6578; }
  .states tr.case td:first-child { padding-left: 1.6rem; }
  .states tr.case { background: #fafbfd; }
  .legend { display: grid; grid-template-columns: 1fr 1fr; gap: 2rem; font-size: 0.92rem; }
  .legend h2 { margin-top: 1rem; font-size: 1.15rem; }
  .legend ul { list-style: none; padding: 0; }
  .legend li { margin: 0.35rem 0; }
  .chip { display: inline-block; width: 0.9rem; height: 0.9rem; border: 1px solid #3d5a80; border-radius: 3px; vertical-align: -0.1rem; margin-right: 0.4rem; }
  .line { display: inline-block; width: 1.4rem; height: 3px; vertical-align: 0.2rem; margin-right: 0.4rem; }
  .diagram { border: 1px solid #e3e7ee; border-radius: 6px; padding: 0.5rem; background: #fff; }
  .diagram svg { display: block; margin: 0 auto; max-width: none; height: auto; }
  table { border-collapse: collapse; font-size: 0.88rem; width: 100%; }
  th, td { border: 1px solid #d5dbe5; padding: 0.35rem 0.55rem; text-align: left; vertical-align: top; }
  th { background: #f3f6fa; }
  code { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 0.8rem; }
  .event { color: #5b6578; }
  table.states, table.transitions { table-layout: fixed; }
  table.states col.state { width: 15rem; }
  table.states col.money { width: 13rem; }
  table.states col.final { width: 4rem; }
  table.transitions col.number { width: 2.5rem; }
  table.transitions col.ends { width: 15rem; }
  table.transitions col.who { width: 9.5rem; }
  td.money { white-space: nowrap; }
  table.transitions td:first-child { text-align: right; }
  .who span { font-weight: 600; }
  details.engineers { margin-top: 1.25rem; }
  details.engineers summary { cursor: pointer; color: #3d5a80; }
  details.engineers td { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
  ul.toc { columns: 3; }`,
    body: `<main>
<h1>State machines</h1>
<p>Every status this service stores belongs to one of these machines, and nothing else changes a status.
This page is drawn from the very machines the service runs and the plain-language texts kept beside them,
so it cannot disagree with the code. For each machine: what every state means, where the money is,
who can move it on, under which condition (with the thresholds this service is configured with), and
which other machines it moves. The merchant API is described in the <a href="/docs">API reference</a>.</p>
<ul class="toc"><li><a href="#overview">How the machines move each other</a></li>${MACHINE_DOCS.map((d) => `<li><a href="#${d.name}">${escapeHtml(machineTitle(d.name))}</a></li>`).join('')}</ul>
${sections.join('\n')}
</main>`,
  });
}

// Assets and diagrams cannot change while the process runs: each is produced once, on first use.
// A failure is not kept, so the next request tries again. Swagger UI's files are the same for
// every service in the process; the machines' pages belong to one service's configuration.
type Produced = Map<string, Promise<string | Buffer>>;
const assets: Produced = new Map();
function once(
  cache: Produced,
  key: string,
  produce: () => Promise<string | Buffer>,
): Promise<string | Buffer> {
  let result = cache.get(key);
  if (!result) {
    result = produce().catch((err: unknown) => {
      cache.delete(key);
      throw err;
    });
    cache.set(key, result);
  }
  return result;
}

function send(ctx: Context, type: string, body: string | Buffer, cache: string): void {
  ctx.set('Content-Security-Policy', CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Cache-Control', cache);
  ctx.type = type;
  ctx.body = body;
}

/**
 * Koa middleware serving /docs, /docs/machines and their assets; every other path passes through.
 * The machines' page shows the thresholds of `config`, the service's own.
 */
export function docsRoutes(config: Config): Middleware {
  const pages: Produced = new Map();
  return async (ctx, next) => {
    if (
      (ctx.method !== 'GET' && ctx.method !== 'HEAD') ||
      !(ctx.path === '/docs' || ctx.path.startsWith('/docs/'))
    ) {
      return next();
    }
    const path = ctx.path.replace(/\/$/, '');
    if (path === '/docs') return send(ctx, 'text/html; charset=utf-8', referencePage(), 'no-cache');
    if (path === '/docs/machines') {
      return send(
        ctx,
        'text/html; charset=utf-8',
        await once(pages, path, () => machinesPage(config)),
        'no-cache',
      );
    }
    if (path === '/docs/assets/reference.js') {
      return send(ctx, 'text/javascript; charset=utf-8', REFERENCE_JS, 'no-cache');
    }
    const asset = /^\/docs\/assets\/([\w.-]+)$/.exec(path)?.[1];
    const known = asset ? SWAGGER_ASSETS[asset] : undefined;
    if (asset && known) {
      return send(
        ctx,
        known.type,
        await once(assets, path, () => readFile(require.resolve(known.file))),
        'public, max-age=3600',
      );
    }
    const name = /^\/docs\/machines\/([\w-]+)\.svg$/.exec(path)?.[1];
    if (name === OVERVIEW || MACHINE_DOCS.some((d) => d.name === name)) {
      const svg = once(pages, path, async () => {
        const { model } = buildComplianceModel(MACHINE_DOCS, config);
        const machine = model.machines.find((m) => m.name === name);
        return dotToSvg(machine ? complianceDot(machine) : overviewDot(model));
      });
      return send(ctx, 'image/svg+xml', await svg, 'no-cache');
    }
    return next();
  };
}
