import { randomUUID } from 'node:crypto';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import { TRPCError } from '@trpc/server';
import { getHTTPStatusCodeFromError } from '@trpc/server/http';
import { TRPC_ERROR_CODES_BY_KEY } from '@trpc/server/rpc';
import { expect } from 'chai';
import { ERROR_CATALOGUE, type ErrorCode } from '#src/http/errors.ts';
import { trpcCodeOf } from '#src/http/trpc.ts';
import type { AppRouter } from '#src/router.ts';
import { call, createMerchant } from '../client.ts';
import { harness } from '../harness.ts';
import { operatorWith } from '../operators/fixtures.ts';
import { mobilePayout } from '../payouts/fixtures.ts';

/** A real tRPC client of the running service, sending `headers` with every call. */
function client(headers: Record<string, string> = {}) {
  return createTRPCClient<AppRouter>({ links: [httpLink({ url: `${harness().url}/trpc`, headers })] });
}

interface Refusal {
  code: string;
  jsonRpc: number;
  httpStatus: number;
  appCode: string;
}

async function refusalOf(promise: Promise<unknown>): Promise<Refusal> {
  const err = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err, 'should have been refused').to.be.instanceOf(TRPCClientError);
  const e = err as TRPCClientError<AppRouter>;
  const data = e.data as { code: string; httpStatus: number; app_code: string };
  return { code: data.code, jsonRpc: e.shape!.code, httpStatus: data.httpStatus, appCode: data.app_code };
}

/** What a tRPC client must see for a catalogue code: the tRPC code of its status, and the status. */
function expected(appCode: ErrorCode): Refusal {
  const code = trpcCodeOf(appCode);
  return {
    code,
    jsonRpc: TRPC_ERROR_CODES_BY_KEY[code],
    httpStatus: ERROR_CATALOGUE[appCode].status,
    appCode,
  };
}

describe('errors over tRPC', () => {
  for (const paths of ['payouts.create,payouts.list', 'admin.tenant.create,admin.tenant.list']) {
    it(`refuses a POST batch that mixes a mutation and a query (${paths}) with tRPC's BAD_REQUEST`, async () => {
      const merchant = await createMerchant();
      const res = await fetch(`${harness().url}/trpc/${paths}?batch=1`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${harness().adminToken}`,
          'x-api-key': merchant.key,
        },
        body: JSON.stringify({ 0: {}, 1: {} }),
      });
      expect(res.status).to.equal(400);
      const body = (await res.json()) as { error: { code: number; message: string; data: any } };
      expect(body.error.code).to.equal(TRPC_ERROR_CODES_BY_KEY.BAD_REQUEST);
      expect(body.error.message).to.match(/Cannot mix procedure types/);
      expect(body.error.data).to.include({
        code: 'BAD_REQUEST',
        httpStatus: 400,
        app_code: 'VALIDATION_FAILED',
      });
    });
  }

  it('gives every code of the catalogue the tRPC code whose HTTP status is the catalogue’s', () => {
    for (const [code, { status }] of Object.entries(ERROR_CATALOGUE)) {
      const trpc = trpcCodeOf(code as ErrorCode);
      expect(getHTTPStatusCodeFromError(new TRPCError({ code: trpc })), `${code} as ${trpc}`).to.equal(
        status,
      );
    }
  });

  it('tells a tRPC client without a bearer token UNAUTHORIZED, not INTERNAL_SERVER_ERROR', async () => {
    const refusal = await refusalOf(client().admin.tenant.list.query({}));
    expect(refusal).to.deep.equal(expected('ADMIN_UNAUTHORIZED'));
    expect(refusal.code).to.equal('UNAUTHORIZED');
  });

  it('tells an operator whose role falls short FORBIDDEN', async () => {
    const viewer = await operatorWith('viewer');
    const refusal = await refusalOf(
      client({ authorization: `Bearer ${viewer.token}` }).admin.operators.create.mutate({
        name: `x ${randomUUID()}`,
        role: 'viewer',
      }),
    );
    expect(refusal).to.deep.equal(expected('ADMIN_ROLE_REQUIRED'));
    expect(refusal.code).to.equal('FORBIDDEN');
  });

  it('tells a name already taken CONFLICT', async () => {
    const viewer = await operatorWith('viewer');
    const root = client({ authorization: `Bearer ${harness().adminToken}` });
    const refusal = await refusalOf(
      root.admin.operators.create.mutate({ name: viewer.name, role: 'viewer' }),
    );
    expect(refusal).to.deep.equal(expected('OPERATOR_NAME_TAKEN'));
    expect(refusal.code).to.equal('CONFLICT');
  });

  it('tells a merchant procedure NOT_FOUND, BAD_REQUEST, UNAUTHORIZED and FORBIDDEN as REST says 404, 400, 401, 403', async () => {
    const merchant = await createMerchant();
    const trpc = client({ 'x-api-key': merchant.key });
    const missing = randomUUID();
    expect(await refusalOf(trpc.payouts.get.query({ id: missing }))).to.deep.equal(
      expected('PAYOUT_NOT_FOUND'),
    );
    expect(await refusalOf(trpc.payouts.list.query({ limit: 0 } as never))).to.deep.equal(
      expected('VALIDATION_FAILED'),
    );
    expect(await refusalOf(client().payouts.list.query({}))).to.deep.equal(expected('UNAUTHENTICATED'));
    const reader = await createMerchant({ scopes: ['payouts:read'] });
    expect(await refusalOf(client({ 'x-api-key': reader.key }).inflows.list.query({}))).to.deep.equal(
      expected('INSUFFICIENT_SCOPES'),
    );

    // REST keeps the contract's status and envelope for the same refusal.
    const rest = await call('GET', `/v1/payouts/${missing}`, { key: merchant.key });
    expect(rest.status).to.equal(404);
    expect(rest.body.error.code).to.equal('PAYOUT_NOT_FOUND');
  });

  it('refuses input that is not JSON, and calls refused before tRPC reads them, in tRPC’s shape', async () => {
    const url = `${harness().url}/trpc`;
    const authorization = `Bearer ${harness().adminToken}`;
    const json = { authorization, 'content-type': 'application/json' };
    const calls: [Promise<Response>, ErrorCode][] = [
      [
        fetch(`${url}/admin.tenant.list?input=not%20json`, { headers: { authorization } }),
        'VALIDATION_FAILED',
      ],
      [
        fetch(`${url}/admin.tenant.create`, { method: 'POST', headers: json, body: '{"name":' }),
        'VALIDATION_FAILED',
      ],
      [
        fetch(`${url}/admin.tenant.list?input=${encodeURIComponent(`${'['.repeat(40)}${']'.repeat(40)}`)}`, {
          headers: { authorization },
        }),
        'VALIDATION_FAILED',
      ],
      [
        fetch(`${url}/admin.tenant.create`, { method: 'PUT', headers: json, body: '{}' }),
        'METHOD_NOT_ALLOWED',
      ],
      [
        fetch(`${url}/admin.tenant.create`, {
          method: 'POST',
          headers: { authorization, 'content-type': 'text/plain' },
          body: 'name=x',
        }),
        'UNSUPPORTED_MEDIA_TYPE',
      ],
    ];
    for (const [call, appCode] of calls) {
      const res = await call;
      const { error } = (await res.json()) as {
        error: { code: number; data: { code: string; httpStatus: number; app_code: string } };
      };
      const refusal = {
        code: error.data.code,
        jsonRpc: error.code,
        httpStatus: error.data.httpStatus,
        appCode: error.data.app_code,
      };
      expect(refusal, `${res.url} ${res.status}`).to.deep.equal(expected(appCode));
      expect(res.status).to.equal(refusal.httpStatus);
    }
    const notJson = await fetch(`${url}/admin.tenant.list?input=not%20json`, { headers: { authorization } });
    expect(((await notJson.json()) as any).error.data.details).to.deep.equal([
      { field: 'input', issue: 'is not valid JSON' },
    ]);
  });

  it('tells an operator’s procedure that takes no input, given one, BAD_REQUEST', async () => {
    const root = client({ authorization: `Bearer ${harness().adminToken}` });
    expect(await refusalOf(root.admin.me.query({ operator: 'someone else' } as never))).to.deep.equal(
      expected('VALIDATION_FAILED'),
    );
    expect(await root.admin.me.query()).to.include({ name: 'root' });
  });

  it('tells a write the API refuses on its merits UNPROCESSABLE_CONTENT', async () => {
    const merchant = await createMerchant();
    const refusal = await refusalOf(
      client({ 'x-api-key': merchant.key, 'idempotency-key': randomUUID() }).payouts.create.mutate(
        mobilePayout() as never,
      ),
    );
    expect(refusal).to.deep.equal(expected('REFUND_DESTINATION_REQUIRED'));
    expect(refusal.code).to.equal('UNPROCESSABLE_CONTENT');
  });
});
