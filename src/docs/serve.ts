import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import type { Context, Middleware } from 'koa';
import { describeMachine, dotToSvg, machineTitle, readingGuide, tableColumns, toDot } from './machines.ts';
import { MACHINE_DOCS } from './registry.ts';

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
// address), and turns off the one feature that would call out: the online spec validator.
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

async function machinesPage(): Promise<string> {
  const sections: string[] = [];
  for (const doc of MACHINE_DOCS) {
    const model = describeMachine(doc.machine);
    const columns = tableColumns(model);
    // Inline SVG in HTML needs neither the XML prolog and doctype nor the namespace declarations.
    const svg = (await dotToSvg(toDot(model)))
      .replace(/^[\s\S]*?(?=<svg)/, '')
      .replace(/\s+xmlns(?::xlink)?="[^"]*"/g, '');
    const rows = model.transitions
      .map((t) => `<tr>${columns.map((c) => `<td>${escapeHtml(c.cell(t))}</td>`).join('')}</tr>`)
      .join('\n');
    sections.push(`<section class="machine" id="${doc.name}" data-machine="${doc.name}">
<h2>${escapeHtml(machineTitle(doc.name))} <small>machines/${doc.name}.machine.ts</small></h2>
<p>${escapeHtml(doc.summary)}</p>
<ul class="guide">${readingGuide(model)
      .map((line) => `<li>${escapeHtml(line).replace(/`([^`]+)`/g, '<code>$1</code>')}</li>`)
      .join('')}</ul>
<div class="diagram">${svg}</div>
<p><a href="/docs/machines/${doc.name}.svg">Open the diagram on its own</a></p>
<table>
<thead><tr>${columns.map((c) => `<th>${escapeHtml(c.title)}</th>`).join('')}</tr></thead>
<tbody>
${rows}
</tbody>
</table>
</section>`);
  }
  return page({
    title: 'State machines',
    current: 'machines',
    style: `  main { padding: 0 1.5rem 3rem; max-width: 100rem; }
  h2 { margin-top: 2.5rem; border-bottom: 1px solid #d5dbe5; padding-bottom: 0.3rem; }
  h2 small { font-weight: normal; font-size: 0.7em; color: #5b6578; margin-left: 0.5rem; }
  .guide { color: #3a4456; font-size: 0.92rem; }
  .diagram { overflow-x: auto; border: 1px solid #e3e7ee; border-radius: 6px; padding: 0.5rem; background: #fff; }
  .diagram svg { max-width: none; height: auto; }
  table { border-collapse: collapse; font-size: 0.85rem; margin-top: 1rem; }
  th, td { border: 1px solid #d5dbe5; padding: 0.3rem 0.55rem; text-align: left; vertical-align: top; }
  th { background: #f3f6fa; }
  td { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
  ul.toc { columns: 2; }`,
    body: `<main>
<h1>State machines</h1>
<p>Every status the service stores is owned by one of these machines, and these diagrams are drawn
from the very machines this service runs. The merchant API is described in the <a href="/docs">API reference</a>.</p>
<ul class="toc">${MACHINE_DOCS.map((d) => `<li><a href="#${d.name}">${escapeHtml(machineTitle(d.name))}</a></li>`).join('')}</ul>
${sections.join('\n')}
</main>`,
  });
}

// Assets and diagrams cannot change while the process runs: each is produced once, on first use.
// A failure is not kept, so the next request tries again.
const produced = new Map<string, Promise<string | Buffer>>();
function once(key: string, produce: () => Promise<string | Buffer>): Promise<string | Buffer> {
  let result = produced.get(key);
  if (!result) {
    result = produce().catch((err: unknown) => {
      produced.delete(key);
      throw err;
    });
    produced.set(key, result);
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

/** Koa middleware serving /docs, /docs/machines and their assets; every other path passes through. */
export function docsRoutes(): Middleware {
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
      return send(ctx, 'text/html; charset=utf-8', await once(path, machinesPage), 'no-cache');
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
        await once(path, () => readFile(require.resolve(known.file))),
        'public, max-age=3600',
      );
    }
    const name = /^\/docs\/machines\/([\w-]+)\.svg$/.exec(path)?.[1];
    const doc = MACHINE_DOCS.find((d) => d.name === name);
    if (doc) {
      return send(
        ctx,
        'image/svg+xml',
        await once(path, () => dotToSvg(toDot(describeMachine(doc.machine)))),
        'no-cache',
      );
    }
    return next();
  };
}
