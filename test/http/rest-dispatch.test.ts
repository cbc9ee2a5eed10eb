import Router from '@koa/router';
import { expect } from 'chai';
import fc from 'fast-check';
import type { Context } from 'koa';
import { koaTemplate, type RestApi, restApi, restRoutes } from '#src/http/rest.ts';
import { compileDispatch } from '#src/http/rest-dispatch.ts';
import { appRouter } from '#src/router.ts';
import { call, createMerchant, errorOf, type Merchant, rawRequest } from '../client.ts';
import { harness } from '../harness.ts';

const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'PROPFIND'];

/** What a request reaches: the declared route (method and template) and its path parameters. */
interface Reached {
  route: string;
  template: string;
  params: Record<string, string>;
}

/** The merchant API's routes as @koa/router took them, one route per procedure (as `restRouter` built it). */
function koaRouter(): Router {
  const router = new Router();
  for (const route of restRoutes(appRouter))
    router.register(
      koaTemplate(route.path),
      [route.method],
      (ctx: Context & { params: Record<string, string> }) => {
        const matched = (ctx as Context & { _matchedRoute?: string })._matchedRoute!;
        ctx.state.reached = {
          route: `${route.method} ${koaTemplate(route.path)}`,
          template: matched,
          params: { ...ctx.params },
        };
      },
    );
  return router;
}

/**
 * What @koa/router's own dispatch (its middleware, as the app ran it) hands the handler it calls:
 * `ctx._matchedRoute` and `ctx.params`.
 */
function routerDispatch(router: Router): (method: string, path: string) => Promise<Reached | undefined> {
  const middleware = router.routes();
  return async (method, path) => {
    const ctx = { method, path, request: {}, state: {} } as unknown as Context;
    await middleware(ctx as never, async () => {});
    return ctx.state.reached as Reached | undefined;
  };
}

/** The methods the router's layers matching `path` took, as `methodPolicy` read them (sorted). */
function routerMethodsOf(router: Router, path: string): string[] {
  return [...new Set(router.match(path, 'GET').path.flatMap((layer) => layer.methods))].sort();
}

function reachedBy(api: RestApi, method: string, path: string): Reached | undefined {
  const match = api.match(method, path);
  if (!match) return undefined;
  return {
    route: `${match.route.method} ${match.route.path}`,
    template: match.route.path,
    params: match.params,
  };
}

/** A path for `template` with `value(name)` for each param. */
function pathOf(template: string, value: (name: string) => string): string {
  return template.replace(/:(\w+)/g, (_, name: string) => value(name));
}

/** Paths near `template`: what callers send by mistake or on purpose, each as the router took it. */
function nearPaths(template: string): string[] {
  const plain = pathOf(template, (name) => `p_${name}`);
  const segments = plain.split('/');
  return [
    plain,
    `${plain}/`,
    `${plain}//`,
    plain.toUpperCase(),
    `${plain.replace(/[a-z]/, (c) => c.toUpperCase())}/`,
    plain.replace('/', '//'),
    plain.replace(/\/([^/]+)$/, '//$1'),
    `${plain}/x`,
    segments.slice(0, -1).join('/'),
    plain.slice(0, -1),
    plain.replaceAll('k', '\u212a'),
    plain.replaceAll('s', '\u017f'),
    pathOf(template, () => 'a%2Fb'),
    pathOf(template, () => '%E0%A4%A'),
    pathOf(template, () => '%C3%A9%20x'),
    pathOf(template, () => '%'),
    pathOf(template, () => 'x%00'),
    pathOf(template, () => '.'),
    pathOf(template, () => ''),
    pathOf(template, () => 'caf\u00e9'),
    `${plain}?limit=2`,
  ];
}

describe('REST dispatch: the merchant API routes, and lists the methods of a path, as @koa/router did', () => {
  let api: RestApi;
  let router: Router;
  let viaRouter: (method: string, path: string) => Promise<Reached | undefined>;
  before(() => {
    api = restApi(harness().service.deps, appRouter);
    router = koaRouter();
    viaRouter = routerDispatch(router);
  });

  it('reaches every declared route, with its template and decoded params, HEAD reaching GET routes', () => {
    const routes = restRoutes(appRouter);
    expect(routes.length).to.be.greaterThan(20);
    for (const route of routes) {
      const template = koaTemplate(route.path);
      const path = pathOf(template, (name) => `id%2F${name}`);
      const expected = {
        route: `${route.method} ${template}`,
        template,
        params: Object.fromEntries([...template.matchAll(/:(\w+)/g)].map(([, name]) => [name, `id/${name}`])),
      };
      const methods = route.method === 'GET' ? ['GET', 'HEAD'] : [route.method];
      for (const method of methods) {
        const reached = reachedBy(api, method, path);
        // An earlier declared route of the same shape would take it, as it did in the router.
        if (reached?.route !== expected.route) expect.fail(`${method} ${path} reached ${reached?.route}`);
        expect(reached).to.deep.equal(expected);
      }
    }
  });

  it('answers every method on paths near each route as the router did (case, slashes, escapes)', async () => {
    const paths = new Set(['/v1', '/v1/', '/v1//', '/v1/nothing', '/V1/payouts', '/callbacks/bank', '*']);
    for (const layer of router.stack) for (const path of nearPaths(layer.path as string)) paths.add(path);
    let reachedSome = 0;
    for (const path of paths) {
      expect(api.methods(path).sort(), path).to.deep.equal(routerMethodsOf(router, path));
      for (const method of METHODS) {
        const expected = await viaRouter(method, path);
        if (expected) reachedSome++;
        expect(reachedBy(api, method, path), `${method} ${path}`).to.deep.equal(expected);
      }
    }
    expect(reachedSome).to.be.greaterThan(100);
  });

  it('answers arbitrary paths made of the routes own words as the router did, and lists their methods', async () => {
    const words = [...new Set(router.stack.flatMap((l) => (l.path as string).split('/')))].filter(
      (w) => w && !w.startsWith(':'),
    );
    const segment = fc.oneof(
      fc.constantFrom(...words),
      fc.constantFrom(...words).map((w) => w.toUpperCase()),
      fc.constantFrom('', 'x', '%2F', '%zz', '%E2%82%AC', '\u212a', 'v1'),
      fc.string({ maxLength: 6 }),
    );
    const path = fc
      .tuple(fc.array(segment, { minLength: 1, maxLength: 6 }), fc.boolean())
      .map(([parts, slash]) => `/v1/${parts.join('/')}${slash ? '/' : ''}`);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...METHODS), path, async (method, p) => {
        expect(reachedBy(api, method, p), `${method} ${p}`).to.deep.equal(await viaRouter(method, p));
        expect(api.methods(p).sort(), p).to.deep.equal(routerMethodsOf(router, p));
      }),
      { numRuns: 3000, seed: 27 },
    );
  });

  it('gives the first declared route a path two routes take, as the router ran its first layer', () => {
    const { match } = compileDispatch([
      { method: 'GET', path: '/v1/things/:id', handler: 'by id' },
      { method: 'GET', path: '/v1/things/latest', handler: 'latest' },
      { method: 'GET', path: '/v1/others/latest', handler: 'other latest' },
      { method: 'GET', path: '/v1/others/:id', handler: 'other by id' },
    ]);
    expect(match('GET', '/v1/things/latest')).to.deep.include({ params: { id: 'latest' } });
    expect(match('GET', '/v1/things/latest')?.route.handler).to.equal('by id');
    expect(match('GET', '/v1/others/latest')?.route.handler).to.equal('other latest');
    expect(match('GET', '/v1/others/LATEST/')?.route.handler).to.equal('other latest');
    expect(match('GET', '/v1/others/x')?.route.handler).to.equal('other by id');
  });

  it('refuses a template it cannot answer for exactly as the router would', () => {
    for (const path of ['/v1/things/:id.json', '/v1/*rest', '/v1/things{/:id}', 'v1/things', '/v1//things'])
      expect(() => compileDispatch([{ method: 'GET', path, handler: null }]), path).to.throw();
  });

  describe('over HTTP', () => {
    let merchant: Merchant;
    before(async () => {
      merchant = await createMerchant();
    });

    it('serves a route whatever the case of its words, with one trailing slash', async () => {
      for (const path of ['/v1/PAYOUTS', '/v1/Payouts/', '/v1/payouts?limit=2']) {
        const res = await call('GET', path, { key: merchant.key });
        expect(res.status, path).to.equal(200);
      }
      const head = await rawRequest('HEAD', '/v1/payouts', { headers: { 'x-api-key': merchant.key } });
      expect(head.status).to.equal(200);
      expect(head.text).to.equal('');
    });

    it('answers near misses 404 ROUTE_NOT_FOUND, and a method the path does not take 405 with Allow', async () => {
      for (const path of [
        '/v1',
        '/v1/payouts//',
        '/v1//payouts',
        '/v1/payouts/a/b',
        '/v1/payouts/x//',
        '/V1/payouts',
      ]) {
        const res = await rawRequest('GET', path, { headers: { 'x-api-key': merchant.key } });
        expect(res.status, path).to.equal(404);
        expect(JSON.parse(res.text).error.code, path).to.equal('ROUTE_NOT_FOUND');
      }
      const wrong = await call('DELETE', '/v1/payouts/x', { key: merchant.key });
      expect(wrong.status).to.equal(405);
      expect(errorOf(wrong).code).to.equal('METHOD_NOT_ALLOWED');
      expect(wrong.headers.get('allow')).to.equal('GET, HEAD, OPTIONS');
      const options = await call('OPTIONS', '/v1/payouts/');
      expect(options.status).to.equal(204);
      expect(options.headers.get('allow')).to.equal('GET, HEAD, POST, OPTIONS');
    });

    it('hands the procedure an id decoded from the path, kept as sent when its escapes are malformed', async () => {
      for (const id of ['a%2Fb', '%E0%A4%A', '%', '%C3%A9']) {
        const res = await rawRequest('GET', `/v1/payouts/${id}`, { headers: { 'x-api-key': merchant.key } });
        expect(res.status, id).to.equal(404);
        expect(JSON.parse(res.text).error.code, id).to.equal('PAYOUT_NOT_FOUND');
      }
      const control = await rawRequest('GET', '/v1/inflows/x%00', { headers: { 'x-api-key': merchant.key } });
      expect(JSON.parse(control.text).error.details).to.deep.equal([
        { field: 'id', issue: 'must not contain control characters (U+0000–U+001F, U+007F–U+009F)' },
      ]);
    });

    it('labels metrics with the route template, whatever path reached it', async () => {
      const labels = { route: '/v1/payouts/:payout_id/outflows', method: 'GET', status: '404' };
      const count = async () =>
        (
          await harness().service.deps.metrics.registry.getSingleMetric('payout_http_requests_total')!.get()
        ).values.find((v) =>
          Object.entries(labels).every(([k, value]) => v.labels[k as keyof typeof v.labels] === value),
        )?.value ?? 0;
      const before = await count();
      const res = await call('GET', '/v1/PAYOUTS/pay_missing/Outflows/', { key: merchant.key });
      expect(res.status).to.equal(404);
      expect(await count()).to.equal(before + 1);
    });
  });
});
