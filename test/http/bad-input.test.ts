import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { call, errorOf, type Merchant, rawRequest as raw } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, mobilePayout, payoutReadyMerchant } from '../payouts/fixtures.ts';
import { UNUSUAL_METHODS } from './unusual-methods.ts';

const CONTROL_ISSUE = 'must not contain control characters (U+0000–U+001F, U+007F–U+009F)';

/** Rows of the tables a write could leave behind, for one tenant. */
async function rowsOf(tenantId: string): Promise<Record<string, number>> {
  const em = harness().service.deps.orm.em.fork();
  const tables = ['payouts', 'quotes', 'refund_destinations', 'idempotency_keys'];
  const out: Record<string, number> = {};
  for (const table of tables) {
    const [row] = await em
      .getConnection()
      .execute<{ n: string }[]>(`select count(*) as n from ${table} where tenant_id = ?`, [tenantId]);
    out[table] = Number(row!.n);
  }
  return out;
}

/** JSON nested `depth` arrays deep. */
const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** The six writes with an Idempotency-Key, and a valid body for each. */
const WRITES: {
  method: 'POST' | 'PUT';
  path: string;
  procedure: string;
  body: () => Record<string, unknown>;
}[] = [
  { method: 'POST', path: '/v1/payouts', procedure: 'payouts.create', body: () => bankPayout() },
  {
    method: 'POST',
    path: '/v1/rates/quotes',
    procedure: 'rates.createQuote',
    body: () => ({ settlement_currency: 'USDT', destination_currency: 'KES', destination_amount: 100 }),
  },
  {
    method: 'POST',
    path: `/v1/rates/quotes/${randomUUID()}/accept`,
    procedure: 'rates.acceptQuote',
    body: () => ({}),
  },
  {
    method: 'PUT',
    path: '/v1/refund-destinations',
    procedure: 'refundDestinations.set',
    body: () => ({
      currency: 'USDT',
      type: 'CRYPTO_ADDRESS',
      network: 'TRON',
      address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
    }),
  },
  {
    method: 'PUT',
    path: '/v1/webhooks/config',
    procedure: 'webhooks.setConfig',
    body: () => ({ url: 'https://example.com/hooks' }),
  },
  {
    method: 'POST',
    path: '/v1/webhooks/config/rotate-secret',
    procedure: 'webhooks.rotateSecret',
    body: () => ({}),
  },
];

describe('bad input is a 4xx with the envelope, never a 500', () => {
  let merchant: Merchant;

  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  it('refuses a quote_id that is not a UUID with 400 naming quote_id, and creates nothing', async () => {
    const before = await rowsOf(merchant.tenantId);
    for (const quoteId of ['abc', '0', '\u0000', `${randomUUID()}x`]) {
      const res = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ quote_id: quoteId }),
      });
      expect(res.status, res.text).to.equal(400);
      const [detail, ...others] = errorOf(res).details;
      expect(others).to.deep.equal([]);
      expect(detail!.field).to.equal('quote_id');
      expect(detail!.issue).to.equal(quoteId === '\u0000' ? CONTROL_ISSUE : 'must be a UUID');
    }
    expect(await rowsOf(merchant.tenantId)).to.deep.equal(before);
  });

  it('refuses a NUL byte or another control character in every free-text field, naming it', async () => {
    const before = await rowsOf(merchant.tenantId);
    const payoutFields = [
      'merchant_reference',
      'destination_account_name',
      'destination_provider_name',
      'destination_account_unique',
    ];
    for (const field of payoutFields) {
      for (const bad of ['\u0000', '\u001b[31m', '\u007f', '\u0085', 'a\nb']) {
        const res = await call('POST', '/v1/payouts', {
          key: merchant.key,
          body: mobilePayout({ [field]: `x${bad}y` }),
        });
        expect(res.status, `${field} ${JSON.stringify(bad)}: ${res.text}`).to.equal(400);
        expect(errorOf(res).details.map((d) => d.field)).to.deep.equal([field]);
        expect(errorOf(res).details[0]!.issue).to.match(/control characters/);
      }
    }
    const bank = await call('PUT', '/v1/refund-destinations', {
      key: merchant.key,
      body: {
        currency: 'NGN',
        type: 'BANK_ACCOUNT',
        bank_code: '058',
        account_number: '0123456789',
        bank_name: 'GT\u0000Bank',
      },
    });
    expect(bank.status, bank.text).to.equal(400);
    expect(errorOf(bank).details.map((d) => d.field)).to.deep.equal(['bank_name']);
    const tag = await call('PUT', '/v1/refund-destinations', {
      key: merchant.key,
      body: {
        currency: 'USDT',
        type: 'CRYPTO_ADDRESS',
        network: 'TRON',
        address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
        tag: '\u0000',
      },
    });
    expect(tag.status, tag.text).to.equal(400);
    expect(errorOf(tag).details.map((d) => d.field)).to.deep.equal(['tag']);
    const listed = await call('GET', `/v1/payouts?merchant_reference=${encodeURIComponent('a\u0000b')}`, {
      key: merchant.key,
    });
    expect(listed.status, listed.text).to.equal(400);
    expect(await rowsOf(merchant.tenantId)).to.deep.equal(before);
  });

  it('stores, answers and replays a lone surrogate as U+FFFD, so create, replay and GET agree', async () => {
    // JSON can escape a lone surrogate; JSON.stringify would keep it, so the text is written here.
    const body = JSON.stringify(
      mobilePayout({ merchant_reference: 'INV-@-1', destination_account_name: 'ZURI @' }),
    )
      .replace('INV-@-1', 'INV-\\ud800-1')
      .replace('ZURI @', 'ZURI \\udfff');
    expect(body).to.include('\\ud800');
    const idempotencyKey = randomUUID();
    const send = () =>
      call('POST', '/v1/payouts', {
        key: merchant.key,
        rawBody: body,
        headers: { 'content-type': 'application/json' },
        idempotencyKey,
      });
    const created = await send();
    expect(created.status, created.text).to.equal(201);
    const replay = await send();
    expect(replay.status, replay.text).to.equal(201);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    const read = await call('GET', `/v1/payouts/${created.body.id}`, { key: merchant.key });
    for (const res of [created, replay, read]) {
      expect(res.text).to.not.match(/\\ud[89a-f]/i);
      expect(res.body.merchant_reference).to.equal('INV-\ufffd-1');
      expect(res.body.destination_account_name).to.equal('ZURI \ufffd');
    }
    expect(replay.text).to.equal(created.text);
    // The well-formed spelling of the same request is the same request.
    const wellFormed = await call('POST', '/v1/payouts', {
      key: merchant.key,
      rawBody: body.replace('\\ud800', '\ufffd').replace('\\udfff', '\ufffd'),
      headers: { 'content-type': 'application/json' },
      idempotencyKey,
    });
    expect(wellFormed.status, wellFormed.text).to.equal(201);
    expect(wellFormed.body.id).to.equal(created.body.id);
    // The list filters on what was stored, whichever spelling asks.
    const listed = await call('GET', `/v1/payouts?merchant_reference=${encodeURIComponent('INV-\ufffd-1')}`, {
      key: merchant.key,
    });
    expect(listed.body.data.map((p: { id: string }) => p.id)).to.deep.equal([created.body.id]);
    // Over tRPC (the console's and internal tools' way in), the same input is the same payout.
    const trpc = await fetch(`${harness().url}/trpc/payouts.create`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-api-key': merchant.key,
        'idempotency-key': idempotencyKey,
      },
      body,
    });
    const trpcText = await trpc.text();
    expect(trpc.status, trpcText).to.equal(200);
    expect(trpcText).to.not.match(/\\ud[89a-f]/i);
    expect(JSON.parse(trpcText).result.data.id).to.equal(created.body.id);
  });

  it('refuses JSON nested 2,000 levels deep on every write with an Idempotency-Key, over REST and tRPC', async () => {
    const before = await rowsOf(merchant.tenantId);
    for (const write of WRITES) {
      const valid = JSON.stringify(write.body());
      const body = valid === '{}' ? `{"nested":${deep(2000)}}` : `{"nested":${deep(2000)},${valid.slice(1)}`;
      const rest = await call(write.method, write.path, {
        key: merchant.key,
        rawBody: body,
        headers: { 'content-type': 'application/json' },
      });
      expect(rest.status, `${write.path}: ${rest.text}`).to.equal(400);
      expect(errorOf(rest).details).to.deep.equal([
        { field: 'body', issue: 'nests arrays and objects deeper than 32 levels' },
      ]);
      const trpc = await fetch(`${harness().url}/trpc/${write.procedure}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-api-key': merchant.key,
          'idempotency-key': randomUUID(),
        },
        body,
      });
      expect(trpc.status, write.procedure).to.equal(400);
    }
    const query = await fetch(`${harness().url}/trpc/payouts.list?input=${encodeURIComponent(deep(2000))}`, {
      headers: { 'x-api-key': merchant.key },
    });
    expect(query.status).to.equal(400);
    expect(await rowsOf(merchant.tenantId)).to.deep.equal(before);
  });

  it('answers unusual methods 405 with Allow on known paths and 501 elsewhere, without authentication', async () => {
    for (const method of UNUSUAL_METHODS) {
      const known = await raw(method, '/v1/payouts');
      expect(known.status, `${method} /v1/payouts: ${known.text}`).to.equal(405);
      expect(known.headers.allow).to.equal('GET, HEAD, POST, OPTIONS');
      expect(JSON.parse(known.text).error.code).to.equal('METHOD_NOT_ALLOWED');
      const byId = await raw(method, `/v1/payouts/${randomUUID()}`);
      expect(byId.status).to.equal(405);
      expect(byId.headers.allow).to.equal('GET, HEAD, OPTIONS');
      const unknown = await raw(method, '/nowhere');
      expect(unknown.status, `${method} /nowhere: ${unknown.text}`).to.equal(501);
      expect(JSON.parse(unknown.text).error.code).to.equal('METHOD_NOT_IMPLEMENTED');
      expect(unknown.headers['x-request-id']).to.be.a('string');
    }
    const del = await raw('DELETE', '/v1/webhooks/config/rotate-secret');
    expect(del.status).to.equal(405);
    expect(del.headers.allow).to.equal('POST, OPTIONS');
    expect((await raw('DELETE', '/nowhere')).status).to.equal(404);
  });

  it('answers HEAD and OPTIONS on /openapi.json and /docs', async () => {
    for (const path of ['/openapi.json', '/docs']) {
      const head = await raw('HEAD', path);
      expect(head.status, path).to.equal(200);
      expect(head.text).to.equal('');
      const options = await raw('OPTIONS', path);
      expect(options.status, path).to.equal(204);
      expect(options.headers.allow).to.equal('GET, HEAD, OPTIONS');
    }
  });

  it('answers a chunked body over 1 MiB with 413, not a connection reset', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const res = await raw('POST', '/v1/payouts', {
      headers: {
        'content-type': 'application/json',
        'transfer-encoding': 'chunked',
        'x-api-key': merchant.key,
      },
      chunks: Array.from({ length: 40 }, () => chunk),
    });
    expect(res.status, res.text).to.equal(413);
    expect(JSON.parse(res.text).error.code).to.equal('PAYLOAD_TOO_LARGE');
  });

  it('refuses ?__proto__=1 like any other unknown query parameter', async () => {
    const res = await call('GET', '/v1/payouts?__proto__=1', { key: merchant.key });
    expect(res.status, res.text).to.equal(400);
    expect(errorOf(res).details).to.deep.equal([{ field: '__proto__', issue: 'is not a known field' }]);
  });

  it('says an amount of 1e309 is too large and a string amount must be a number', async () => {
    const huge = await call('POST', '/v1/payouts', {
      key: merchant.key,
      rawBody: JSON.stringify(bankPayout({ destination_amount: 0 })).replace(
        '"destination_amount":0',
        '"destination_amount":1e309',
      ),
      headers: { 'content-type': 'application/json' },
    });
    expect(huge.status, huge.text).to.equal(400);
    expect(errorOf(huge).details).to.deep.equal([{ field: 'destination_amount', issue: 'is too large' }]);
    const text = await call('POST', '/v1/payouts', {
      key: merchant.key,
      body: bankPayout({ destination_amount: '150000' }),
    });
    expect(text.status, text.text).to.equal(400);
    expect(errorOf(text).details).to.deep.equal([{ field: 'destination_amount', issue: 'must be a number' }]);
    const missing = await call('POST', '/v1/payouts', {
      key: merchant.key,
      body: bankPayout({ destination_amount: undefined }),
    });
    expect(errorOf(missing).details).to.deep.equal([{ field: 'destination_amount', issue: 'is required' }]);
  });
});
