import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { restRoutes } from '#src/http/rest.ts';
import { sha256Hex } from '#src/lib/crypto.ts';
import { appRouter } from '#src/router.ts';
import { ApiKey } from '#src/tenants/entities.ts';
import { MERCHANT_SCOPES } from '#src/tenants/scopes.ts';
import { revokeApiKey } from '#src/tenants/service.ts';
import { call, createMerchant, errorOf } from '../client.ts';
import { harness } from '../harness.ts';

/**
 * Checks every REST route gets, whoever wrote it: no key, an unknown key and a revoked key are
 * 401; a key without the route's scope is 403 naming that scope.
 */
describe('every merchant route @smoke', () => {
  const routes = restRoutes(appRouter);

  it('declares a known scope', () => {
    expect(routes).to.not.be.empty;
    for (const route of routes) {
      expect(MERCHANT_SCOPES as readonly string[], `${route.method} ${route.path}`).to.include(
        route.meta.scope,
      );
    }
  });

  for (const route of routes) {
    const path = route.path.replace(/\{\w+\}/g, randomUUID());
    const label = `${route.method} ${route.path}`;

    it(`${label} refuses a request without a key`, async () => {
      const res = await call(route.method, path, { body: route.method === 'GET' ? undefined : {} });
      expect(res.status).to.equal(401);
      expect(errorOf(res).code).to.equal('UNAUTHENTICATED');
    });

    it(`${label} refuses an unknown key`, async () => {
      const res = await call(route.method, path, {
        key: `sk_${'A'.repeat(43)}`,
        body: route.method === 'GET' ? undefined : {},
      });
      expect(res.status).to.equal(401);
    });

    it(`${label} refuses a revoked key`, async () => {
      const merchant = await createMerchant();
      const em = harness().service.deps.orm.em.fork();
      const key = await em.findOneOrFail(ApiKey, { hash: sha256Hex(merchant.key) });
      await revokeApiKey(em, key.id, new Date());
      const res = await call(route.method, path, {
        key: merchant.key,
        body: route.method === 'GET' ? undefined : {},
      });
      expect(res.status).to.equal(401);
    });

    it(`${label} requires the scope ${route.meta.scope}`, async () => {
      const others = MERCHANT_SCOPES.filter((s) => s !== route.meta.scope);
      const merchant = await createMerchant({ scopes: others });
      const res = await call(route.method, path, {
        key: merchant.key,
        body: route.method === 'GET' ? undefined : {},
      });
      expect(res.status).to.equal(403);
      const error = errorOf(res);
      expect(error.code).to.equal('INSUFFICIENT_SCOPES');
      expect(error.message).to.include(String(route.meta.scope));
      expect(error.details).to.deep.equal([
        { field: 'X-API-Key', issue: `missing scope ${route.meta.scope}` },
      ]);
    });

    if (route.meta.idempotent) {
      it(`${label} requires an Idempotency-Key that is a UUID v4`, async () => {
        const merchant = await createMerchant();
        const missing = await call(route.method, path, { key: merchant.key, body: {}, idempotencyKey: null });
        expect(missing.status).to.equal(400);
        expect(errorOf(missing).code).to.equal('IDEMPOTENCY_KEY_REQUIRED');
        const invalid = await call(route.method, path, {
          key: merchant.key,
          body: {},
          idempotencyKey: 'not-a-uuid',
        });
        expect(invalid.status).to.equal(400);
        expect(errorOf(invalid).code).to.equal('IDEMPOTENCY_KEY_INVALID');
        const v7 = await call(route.method, path, {
          key: merchant.key,
          body: {},
          idempotencyKey: '019a0000-0000-7000-8000-000000000000',
        });
        expect(errorOf(v7).code).to.equal('IDEMPOTENCY_KEY_INVALID');
      });
    }
  }

  it('makes every POST and PUT except name enquiry idempotent', () => {
    for (const route of routes) {
      if (route.method !== 'POST' && route.method !== 'PUT') continue;
      expect(!!route.meta.idempotent, `${route.method} ${route.path}`).to.equal(
        route.path !== '/v1/banks/resolve',
      );
    }
  });
});
