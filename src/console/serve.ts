import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Context, Middleware } from 'koa';

/**
 * The operations console at /console: one HTML page, the committed bundle (`dist/console.js`, see
 * `build.ts`) and its style sheet, all from this process. Every other path under /console is the
 * same page: the console routes in the browser. The page calls nothing but this service's /trpc
 * and /docs/machines/*.svg, and its Content-Security-Policy refuses anything else.
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  // React sets style properties through the DOM, which CSP allows; the diagrams carry none inline.
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>Operations console · Merchant Payout Service</title>
<link rel="icon" type="image/png" href="/docs/assets/favicon-32x32.png">
<link rel="stylesheet" href="/console/assets/console.css">
</head>
<body>
<div id="console"><noscript>The console needs JavaScript.</noscript></div>
<script src="/console/assets/console.js"></script>
</body>
</html>
`;

const ASSETS: Record<string, { file: string; type: string }> = {
  'console.js': { file: path.join(HERE, 'dist/console.js'), type: 'text/javascript; charset=utf-8' },
  'console.css': { file: path.join(HERE, 'console.css'), type: 'text/css; charset=utf-8' },
};

function send(ctx: Context, type: string, body: string | Buffer): void {
  ctx.set('Content-Security-Policy', CSP);
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Referrer-Policy', 'no-referrer');
  // A new version of the service serves a new bundle under the same name: always revalidate.
  ctx.set('Cache-Control', 'no-cache');
  ctx.type = type;
  ctx.body = body;
}

/** Koa middleware serving /console and its assets; every other path passes through. */
export function consoleRoutes(): Middleware {
  const loaded = new Map<string, Promise<Buffer>>();
  const load = (file: string): Promise<Buffer> => {
    let content = loaded.get(file);
    if (!content) {
      content = readFile(file).catch((err: unknown) => {
        loaded.delete(file);
        throw err;
      });
      loaded.set(file, content);
    }
    return content;
  };
  return async (ctx, next) => {
    if (
      (ctx.method !== 'GET' && ctx.method !== 'HEAD') ||
      !(ctx.path === '/console' || ctx.path.startsWith('/console/'))
    ) {
      return next();
    }
    const asset = /^\/console\/assets\/([\w.-]+)$/.exec(ctx.path)?.[1];
    if (asset !== undefined) {
      const known = ASSETS[asset];
      if (!known) return next();
      return send(ctx, known.type, await load(known.file));
    }
    return send(ctx, 'text/html; charset=utf-8', PAGE);
  };
}
