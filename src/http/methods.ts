import type Router from '@koa/router';
import type { Context } from 'koa';
import { AppError } from './errors.ts';
import { isTrpcPath } from './trpc.ts';

/** The methods this service implements somewhere; any other is 501 on a path it does not know. */
const IMPLEMENTED = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** Paths whose methods {@link methodPolicy} remembers at most. */
const MAX_KNOWN_PATHS = 1000;

/** Paths served outside the routers, and the methods each takes. */
const FIXED: { matches: (path: string) => boolean; methods: readonly string[] }[] = [
  { matches: (p) => p === '/', methods: ['GET', 'HEAD'] },
  {
    matches: (p) => p === '/health' || p === '/health/live' || p === '/health/ready',
    methods: ['GET', 'HEAD'],
  },
  { matches: (p) => p === '/metrics', methods: ['GET', 'HEAD'] },
  { matches: (p) => p === '/openapi.json', methods: ['GET', 'HEAD'] },
  { matches: (p) => p === '/docs' || p.startsWith('/docs/'), methods: ['GET', 'HEAD'] },
  { matches: (p) => p === '/console' || p.startsWith('/console/'), methods: ['GET', 'HEAD'] },
  { matches: isTrpcPath, methods: ['GET', 'POST'] },
];

/**
 * Answers every method a path does not take before anything else runs (no body is read, nothing
 * is authenticated): OPTIONS with 204 and `Allow`; a method the path does not take with 405
 * METHOD_NOT_ALLOWED and `Allow`; a method nothing here implements, on a path nothing serves,
 * with 501 METHOD_NOT_IMPLEMENTED. Every refusal is the envelope, never an internal error. Says
 * whether it answered the request (OPTIONS); throws a refusal; false lets the request go on.
 */
export function methodPolicy(sources: readonly MethodsOf[]) {
  // What each path takes, worked out once: the routes do not change, and matching a path against
  // every route is most of this layer's cost. Bounded, since paths are the callers'
  // (`/v1/payouts/{id}`): emptied when full.
  const known = new Map<string, readonly string[] | null>();
  return (ctx: Context): boolean => {
    const path = ctx.path;
    let allowed = known.get(path);
    if (allowed === undefined) {
      if (known.size >= MAX_KNOWN_PATHS) known.clear();
      allowed = allowedMethods(sources, path);
      known.set(path, allowed);
    }
    if (!allowed) {
      if (!IMPLEMENTED.has(ctx.method)) throw new AppError('METHOD_NOT_IMPLEMENTED');
      return false;
    }
    if (ctx.method !== 'OPTIONS' && allowed.includes(ctx.method)) return false;
    const allow = [...allowed, 'OPTIONS'].join(', ');
    if (ctx.method === 'OPTIONS') {
      ctx.set('Allow', allow);
      ctx.status = 204;
      return true;
    }
    throw new AppError('METHOD_NOT_ALLOWED', { headers: { Allow: allow } });
  };
}

/** The methods the routes of one router take on a path. */
export type MethodsOf = (path: string) => Iterable<string>;

/** The methods the routes of a @koa/router Router take on a path: those of every layer it matches. */
export function routerMethods(router: Router): MethodsOf {
  return (path) => router.match(path, 'GET').path.flatMap((layer) => layer.methods);
}

/** The methods `path` takes (HEAD wherever GET is), or null when no route serves it. */
function allowedMethods(sources: readonly MethodsOf[], path: string): string[] | null {
  const fixed = FIXED.find((f) => f.matches(path));
  if (fixed) return [...fixed.methods];
  const methods = new Set<string>();
  for (const methodsOf of sources) for (const m of methodsOf(path)) methods.add(m);
  if (methods.size === 0) return null;
  if (methods.has('GET')) methods.add('HEAD');
  const order = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];
  return order.filter((m) => methods.has(m));
}
