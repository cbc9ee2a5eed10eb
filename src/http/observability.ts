import http from 'node:http';
import type { Context, Next } from 'koa';
import type { Deps } from '#src/deps.ts';
import { newId } from '#src/lib/ids.ts';
import { within } from '#src/lib/within.ts';
import { METRICS_CONTENT_TYPE, renderMetrics } from '#src/observability/metrics.ts';
import { operatorOfBearer } from '#src/operators/auth.ts';
import { AppError, envelope } from './errors.ts';

/**
 * What operations and their tools call: `/metrics` (Prometheus text, for the admin token or an
 * operator's), `/health/live` (the process answers) and `/health/ready` (the database answers and
 * every migration is applied), and `/`, which points a newcomer at the documentation.
 */

/** How long readiness waits for the database before it calls the service not ready. */
const READY_TIMEOUT_MS = 2000;

/** Whether this instance can serve: the database answers and has every migration applied. */
export async function readiness(deps: Deps): Promise<{ ready: true } | { ready: false; reason: string }> {
  const check = (async () => {
    try {
      const pending = await deps.orm.migrator.getPending();
      if (pending.length > 0) return `${pending.length} migration(s) not applied`;
      return null;
    } catch {
      return 'the database is unreachable';
    }
  })();
  const outcome = await within(check, READY_TIMEOUT_MS);
  const reason = outcome.late ? 'the database did not answer in time' : outcome.value;
  return reason === null ? { ready: true } : { ready: false, reason };
}

/** The Prometheus text of this instance and its job threads, for a caller with an operator's bearer token. */
async function metricsText(deps: Deps, authorization: string | undefined): Promise<string> {
  const operator = await operatorOfBearer(deps.sql, authorization, deps.secrets.adminToken);
  if (!operator) throw new AppError('ADMIN_UNAUTHORIZED');
  return renderMetrics(deps.metrics, (await deps.jobs?.metrics?.()) ?? []);
}

const INDEX_LINKS = {
  docs: '/docs',
  machines: '/docs/machines',
  console: '/console',
  openapi: '/openapi.json',
  health: '/health',
} as const;

const INDEX_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Payout service</title></head>
<body>
<h1>Payout service</h1>
<ul>
<li><a href="/docs">API reference</a> (the merchant REST API, from <a href="/openapi.json">/openapi.json</a>)</li>
<li><a href="/docs/machines">State machines</a>: every status, where the money is, who can move it</li>
<li><a href="/console">Operations console</a> (operators sign in with their token)</li>
</ul>
</body></html>
`;

/** `/`, `/health/live`, `/health/ready` and `/metrics` on the service's own port. */
export function observabilityRoutes(deps: Deps) {
  return async (ctx: Context, next: Next) => {
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return next();
    switch (ctx.path) {
      case '/': {
        if (ctx.accepts('json', 'html') === 'html') {
          ctx.type = 'text/html; charset=utf-8';
          ctx.body = INDEX_HTML;
        } else {
          ctx.body = { service: 'payout-service', links: INDEX_LINKS };
        }
        return;
      }
      case '/health/live':
        ctx.body = { status: 'ok' };
        return;
      case '/health/ready': {
        const state = await readiness(deps);
        if (!state.ready) {
          throw new AppError('NOT_READY', { details: [{ field: 'database', issue: state.reason }] });
        }
        ctx.body = { status: 'ok' };
        return;
      }
      case '/metrics':
        ctx.type = METRICS_CONTENT_TYPE;
        ctx.body = await metricsText(deps, ctx.get('authorization') || undefined);
        return;
      default:
        return next();
    }
  };
}

/**
 * `METRICS_PORT`: `/metrics` alone on a port of its own (same token), for a scraper kept off the
 * API's network path. Anything else there is a 404.
 */
export async function startMetricsServer(
  deps: Deps,
  port: number,
): Promise<{ port: number; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const requestId = `req_${newId().replaceAll('-', '')}`;
    const fail = (error: AppError) => {
      res.writeHead(error.status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(envelope(error, requestId)));
    };
    const path = new URL(req.url ?? '/', 'http://metrics').pathname;
    if (path !== '/metrics' || (req.method !== 'GET' && req.method !== 'HEAD')) {
      fail(new AppError(path === '/metrics' ? 'METHOD_NOT_ALLOWED' : 'ROUTE_NOT_FOUND'));
      return;
    }
    metricsText(deps, req.headers.authorization).then(
      (text) => {
        res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE });
        res.end(req.method === 'HEAD' ? undefined : text);
      },
      (err: unknown) => {
        if (err instanceof AppError) return fail(err);
        deps.log.error({ err }, 'metrics failed');
        fail(new AppError('INTERNAL_ERROR'));
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, deps.config.HOST, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
