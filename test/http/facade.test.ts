import { expect } from 'chai';
import sinon from 'sinon';
import { ERROR_CATALOGUE } from '#src/http/errors.ts';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout } from '../payouts/fixtures.ts';

describe('HTTP facade @smoke', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await createMerchant();
  });

  it('answers an unknown route with the error envelope and a request id', async () => {
    const res = await call('GET', '/v1/nothing-here', { key: merchant.key });
    expect(res.status).to.equal(404);
    const error = errorOf(res);
    expect(error.code).to.equal('ROUTE_NOT_FOUND');
    expect(error.details).to.deep.equal([]);
    expect(error.request_id).to.be.a('string').and.not.empty;
    expect(res.headers.get('x-request-id')).to.equal(error.request_id);
  });

  it('echoes a caller-supplied X-Request-Id in the header and in errors', async () => {
    const res = await call('GET', '/v1/nothing-here', { headers: { 'x-request-id': 'merchant-trace-42' } });
    expect(res.headers.get('x-request-id')).to.equal('merchant-trace-42');
    expect(errorOf(res).request_id).to.equal('merchant-trace-42');
  });

  it('replaces an unusable X-Request-Id with its own', async () => {
    const res = await call('GET', '/health', { headers: { 'x-request-id': 'has spaces and <tags>' } });
    expect(res.headers.get('x-request-id')).to.match(/^req_[0-9a-f]{32}$/);
  });

  it('refuses a body that is not JSON with 415', async () => {
    const res = await call('POST', '/v1/banks/resolve', {
      key: merchant.key,
      rawBody: 'destination_type=BANK_ACCOUNT',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).to.equal(415);
    expect(errorOf(res).code).to.equal('UNSUPPORTED_MEDIA_TYPE');
  });

  it('accepts application/json with a charset parameter', async () => {
    const res = await call('POST', '/v1/banks/resolve', {
      key: merchant.key,
      rawBody: JSON.stringify({ destination_type: 'BANK_ACCOUNT' }),
      headers: { 'content-type': 'application/json; charset=utf-8' },
    });
    expect(res.status).to.equal(400);
    expect(errorOf(res).code).to.equal('VALIDATION_FAILED');
  });

  for (const [type, status] of [
    ['APPLICATION/JSON', 400],
    ['application/json;charset=UTF-8', 400],
    ['Application/Json; Charset="utf-8"', 400],
    ['application/json ; charset=utf-8', 400],
    ['application/jsonx', 415],
    ['application/json-patch+json', 415],
    ['text/json', 415],
  ] as const) {
    it(`takes Content-Type: ${type} as ${status === 400 ? 'JSON' : 'something else (415)'}`, async () => {
      const res = await call('POST', '/v1/banks/resolve', {
        key: merchant.key,
        rawBody: JSON.stringify({ destination_type: 'BANK_ACCOUNT' }),
        headers: { 'content-type': type },
      });
      expect(res.status, res.text).to.equal(status);
    });
  }

  it('refuses a body over 1 MiB with 413', async () => {
    const res = await call('POST', '/v1/banks/resolve', {
      key: merchant.key,
      rawBody: JSON.stringify({ pad: 'x'.repeat(1024 * 1024) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).to.equal(413);
    expect(errorOf(res).code).to.equal('PAYLOAD_TOO_LARGE');
  });

  it('answers malformed JSON with a validation error naming the body', async () => {
    const res = await call('POST', '/v1/banks/resolve', {
      key: merchant.key,
      rawBody: '{"destination_type": ',
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).to.equal(400);
    expect(errorOf(res).details).to.deep.equal([{ field: 'body', issue: 'is not valid JSON' }]);
  });

  it('refuses a JSON body that is not an object', async () => {
    const res = await call('POST', '/v1/banks/resolve', { key: merchant.key, body: [1, 2] });
    expect(res.status).to.equal(400);
    expect(errorOf(res).details).to.deep.equal([{ field: 'body', issue: 'must be a JSON object' }]);
  });

  it('names every offending field, and unknown fields, in validation errors', async () => {
    const res = await call('POST', '/v1/banks/resolve', {
      key: merchant.key,
      body: { destination_type: 'CASH', destination_currency: 'NGN', surprise: true },
    });
    expect(res.status).to.equal(400);
    const fields = errorOf(res).details.map((d) => d.field);
    expect(fields).to.include.members([
      'destination_type',
      'destination_account_unique',
      'destination_provider_code',
      'surprise',
    ]);
  });

  it('answers an unexpected failure with a bare 500 and logs it once, with the request id', async () => {
    const { deps } = harness().service;
    const logged: { bindings: Record<string, unknown>; message: string; err: unknown }[] = [];
    const child = (bindings: Record<string, unknown>) => ({
      ...deps.log,
      error: (fields: { err?: unknown }, message: string) =>
        logged.push({ bindings, message, err: fields.err }),
      warn: () => undefined,
      info: () => undefined,
    });
    const stubs = [
      sinon.stub(deps.log, 'child').callsFake(child as never),
      sinon.stub(deps.corridors, 'find').throws(new Error('corridor table unreadable at /srv/secret/path')),
    ];
    try {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout(),
        headers: { 'x-request-id': 'req-boom-1' },
      });
      expect(res.status).to.equal(500);
      const error = errorOf(res);
      expect(error.code).to.equal('INTERNAL_ERROR');
      expect(error.request_id).to.equal('req-boom-1');
      expect(res.text).not.to.contain('unreadable');
      expect(res.text).not.to.contain('/srv/secret');
      const unhandled = logged.filter((l) => l.message === 'unhandled error');
      expect(unhandled).to.have.length(1);
      expect(unhandled[0]!.bindings).to.include({ request_id: 'req-boom-1', route: '/v1/payouts' });
      expect((unhandled[0]!.err as Error).message).to.contain('corridor table unreadable');
    } finally {
      for (const stub of stubs) stub.restore();
    }
  });

  it('answers a wrong method on a known path with 405', async () => {
    const res = await call('DELETE', '/v1/banks', { key: merchant.key });
    expect(res.status).to.equal(405);
    expect(errorOf(res).code).to.equal('METHOD_NOT_ALLOWED');
  });

  it('serves the OpenAPI document with the error envelope on every operation', async () => {
    const res = await call('GET', '/openapi.json');
    expect(res.status).to.equal(200);
    expect(res.body.openapi).to.match(/^3\./);
    const banks = res.body.paths['/v1/banks'].get;
    expect(banks['x-required-scope']).to.equal('banks:read');
    expect(banks.responses['401'].$ref).to.equal('#/components/responses/Unauthenticated');
    expect(res.body.components.responses.Unauthenticated.content['application/json'].schema.$ref).to.equal(
      '#/components/schemas/Error',
    );
    const shared = (ref: string) => res.body.components.responses[ref.split('/').pop()!];
    expect(shared(banks.responses['422'].$ref).content['application/json']['x-error-codes']).to.deep.equal([
      'CORRIDOR_NOT_SUPPORTED',
    ]);
    // The merchant's list: every code a merchant operation answers, and the two answers to a
    // request that reaches none; no operator-only code.
    const codes: string[] = res.body.components.schemas.ErrorCode.enum;
    expect(Object.keys(ERROR_CATALOGUE)).to.include.members(codes);
    expect(codes).to.include.members(['ROUTE_NOT_FOUND', 'METHOD_NOT_ALLOWED', 'PAYEE_NAME_MISMATCH']);
    expect(
      codes.some((c) => ['SELF_APPROVAL_FORBIDDEN', 'OPERATOR_NAME_TAKEN', 'ADMIN_UNAUTHORIZED'].includes(c)),
    ).to.be.false;
  });

  it('serves the router over tRPC to internal tools, guarded by the admin token', async () => {
    const denied = await fetch(`${harness().url}/trpc/admin.tenant.list`);
    expect(denied.status).to.equal(401);
    const input = encodeURIComponent(JSON.stringify({ limit: 100 }));
    const ok = await fetch(`${harness().url}/trpc/admin.tenant.list?input=${input}`, {
      headers: { authorization: `Bearer ${harness().adminToken}` },
    });
    expect(ok.status).to.equal(200);
    const body = (await ok.json()) as { result: { data: { data: { id: string }[] } } };
    expect(body.result.data.data.map((t) => t.id)).to.include(merchant.tenantId);
  });
});
