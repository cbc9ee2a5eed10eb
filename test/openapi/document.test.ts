import { execFile } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import fc from 'fast-check';
import { Corridors } from '#src/corridors/corridors.ts';
import { REPO_ROOT } from '#src/docs/generate.ts';
import { describeMachine } from '#src/docs/machines.ts';
import { MACHINE_DOCS } from '#src/docs/registry.ts';
import { ERROR_CATALOGUE } from '#src/http/errors.ts';
import { CURSOR_PATTERN, encodeCursor } from '#src/http/pagination.ts';
import { CURRENCIES } from '#src/http/schemas.ts';
import { isUuidV4 } from '#src/lib/ids.ts';
import {
  MACHINE_WEBHOOK_EVENT_TYPES,
  payloadSchemaName,
  type WebhookEventType,
} from '#src/webhooks/events.ts';
import { bankPayout, mobilePayout } from '../payouts/fixtures.ts';
import {
  explain,
  type OpenApi,
  operations,
  type Response,
  resolve,
  SchemaCheck,
  servedDocument,
} from './document.ts';

const run = promisify(execFile);

describe('the OpenAPI document', () => {
  let doc: OpenApi;
  let check: SchemaCheck;

  before(async () => {
    doc = await servedDocument();
    check = new SchemaCheck(doc);
  });

  it("passes Redocly's recommended ruleset without an error or a warning", async function () {
    this.timeout(120_000);
    const cli = path.join(REPO_ROOT, 'node_modules/@redocly/cli/bin/cli.js');
    const { stdout } = await run(
      process.execPath,
      [cli, 'lint', 'docs/openapi.json', '--extends=recommended', '--format=json'],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
        maxBuffer: 16 * 1024 * 1024,
      },
    ).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
    const report = JSON.parse(stdout) as {
      totals: { errors: number; warnings: number };
      problems: { ruleId: string; message: string; location: { pointer: string }[] }[];
    };
    const problems = report.problems.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`);
    expect(problems).to.deep.equal([]);
    expect(report.totals).to.include({ errors: 0, warnings: 0 });
  });

  it('names every resource as a component', () => {
    expect(Object.keys(doc.components.schemas)).to.include.members([
      'Payout',
      'PaymentInstructionSummary',
      'PaymentInstruction',
      'StatusLog',
      'Quote',
      'IndicativeRate',
      'Institution',
      'NameEnquiryResult',
      'Inflow',
      'Outflow',
      'Refund',
      'RefundDestination',
      'WebhookConfig',
      'WebhookConfigWithSecret',
      'WebhookDelivery',
      'PageMeta',
      'PayoutPage',
      'Error',
      'ErrorCode',
      'PayoutEvent',
      'CreatePayoutRequest',
      'RefundDestinationRequest',
    ]);
    const payout = doc.paths['/v1/payouts/{id}']!.get!.responses['200']!;
    expect(payout.content!['application/json']!.schema).to.deep.equal({
      $ref: '#/components/schemas/Payout',
    });
  });

  it('gives every operation a unique operationId, a summary, a listed tag and its scope', () => {
    const tags = doc.tags.map((t) => t.name);
    const ids = operations(doc).map(({ op }) => op.operationId);
    expect(new Set(ids).size).to.equal(ids.length);
    for (const { method, path: route, op } of operations(doc)) {
      const where = `${method} ${route}`;
      expect(op.operationId, where).to.match(/^[a-z][A-Za-z]+$/);
      expect(op.summary, where).to.be.a('string').and.not.empty;
      expect(op.tags, where).to.be.an('array').that.is.not.empty;
      for (const tag of op.tags!) expect(tags, where).to.include(tag);
      expect(op['x-required-scope'], where).to.match(/^[a-z]+:[a-z]+$/);
    }
    for (const tag of doc.tags) expect(tag.description, tag.name).to.be.a('string').and.not.empty;
  });

  it('lists for every operation the error codes it can return, each under its own status', () => {
    for (const { method, path: route, op } of operations(doc)) {
      const where = `${method} ${route}`;
      const codes: string[] = [];
      for (const [status, response] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const media = resolve<Response>(doc, response).content!['application/json']!;
        expect(media.schema, where).to.deep.equal({ $ref: '#/components/schemas/Error' });
        for (const code of media['x-error-codes']!) {
          expect(ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE]?.status, `${where} ${code}`).to.equal(
            Number(status),
          );
          codes.push(code);
        }
      }
      expect(codes, where).to.include.members([
        'UNAUTHENTICATED',
        'INSUFFICIENT_SCOPES',
        'INTERNAL_ERROR',
        'SERVICE_UNAVAILABLE',
      ]);
    }
    const codesOf = (method: 'get' | 'post', route: string) =>
      Object.values(doc.paths[route]![method]!.responses).flatMap(
        (r) => resolve<Response>(doc, r).content?.['application/json']?.['x-error-codes'] ?? [],
      );
    expect(codesOf('post', '/v1/payouts')).to.include.members([
      'REFUND_DESTINATION_REQUIRED',
      'TENANT_NOT_APPROVED',
      'IDEMPOTENCY_KEY_REUSED',
      'QUOTE_EXPIRED',
    ]);
    expect(codesOf('get', '/v1/payouts/{id}')).to.include('PAYOUT_NOT_FOUND');
    expect(codesOf('get', '/v1/payouts/{id}')).not.to.include('IDEMPOTENCY_KEY_REQUIRED');
    expect(codesOf('get', '/v1/payouts')).to.include('INVALID_CURSOR');
  });

  it('declares X-Request-Id on every response, the rate-limit state, Retry-After on 429 and 503 and Idempotent-Replayed on writes', () => {
    for (const { method, path: route, op } of operations(doc)) {
      const writes = op.parameters?.some((p) => '$ref' in p && p.$ref.endsWith('/IdempotencyKey'));
      for (const [status, raw] of Object.entries(op.responses)) {
        const response = resolve<Response>(doc, raw);
        const where = `${method} ${route} ${status}`;
        const required = (name: string) => response.headers?.[name]?.required;
        expect(required('X-Request-Id'), where).to.equal(true);
        if (status === '413' || status === '415') continue;
        expect(required('RateLimit-Policy'), where).to.equal(true);
        if (status.startsWith('2') || status === '429') expect(required('RateLimit'), where).to.equal(true);
        if (status === '429') expect(required('Retry-After'), where).to.equal(true);
        // Required where every code of the 503 sends it; UPSTREAM_UNAVAILABLE does not.
        const codes = response.content?.['application/json']?.['x-error-codes'];
        if (status === '503')
          expect(required('Retry-After'), where).to.equal(!codes?.includes('UPSTREAM_UNAVAILABLE'));
        if (status === '401') expect(response.headers, where).not.to.have.property('RateLimit');
        if (writes && status.startsWith('2')) expect(required('Idempotent-Replayed'), where).to.equal(false);
      }
    }
  });

  it('declares Idempotency-Key with a pattern that accepts exactly the UUIDs v4 the server accepts', () => {
    const pattern = new RegExp(doc.components.parameters.IdempotencyKey!.schema.pattern);
    const candidates = fc.oneof(
      fc.uuid({ version: [1, 2, 3, 4, 5, 6, 7, 8] }),
      fc.uuid({ version: 4 }).map((u) => u.toUpperCase()),
      fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF-4xz'), minLength: 30, maxLength: 40 }),
    );
    fc.assert(fc.property(candidates, (value) => pattern.test(value) === isUuidV4(value)));
  });

  it('lists as ErrorCode the codes its operations answer with, and those of a path or method that is none', () => {
    const answered = operations(doc).flatMap(({ op }) =>
      Object.values(op.responses).flatMap(
        (r) => resolve<Response>(doc, r).content?.['application/json']?.['x-error-codes'] ?? [],
      ),
    );
    const listed = doc.components.schemas.ErrorCode!.enum as string[];
    expect(listed).to.have.members([...new Set([...answered, 'ROUTE_NOT_FOUND', 'METHOD_NOT_ALLOWED'])]);
    for (const operatorOnly of ['SELF_APPROVAL_FORBIDDEN', 'OPERATOR_NAME_TAKEN', 'ADMIN_UNAUTHORIZED'])
      expect(listed).to.not.include(operatorOnly);
  });

  it('declares the form of a cursor, and no recorded cursor as an example (it works only where it was issued)', () => {
    const issued = encodeCursor(randomBytes(32), {
      l: 'payouts',
      c: new Date().toISOString(),
      i: randomUUID(),
    });
    for (const { op } of operations(doc)) {
      const cursor = (op.parameters ?? [])
        .map((p) => resolve<{ name: string; schema: { pattern?: string }; examples?: object }>(doc, p))
        .find((p) => p.name === 'cursor');
      if (!cursor) continue;
      expect(cursor.schema.pattern, op.operationId).to.equal(CURSOR_PATTERN);
      expect(cursor.examples, op.operationId).to.equal(undefined);
    }
    expect(new RegExp(CURSOR_PATTERN).test(issued)).to.equal(true);
    for (const malformed of ['0', 'abc.def', `${issued}.x`])
      expect(new RegExp(CURSOR_PATTERN).test(malformed)).to.equal(false);
  });

  it('fills in "Try it out" from one recorded request: every parameter\'s first example is the same one', () => {
    for (const { op } of operations(doc)) {
      const firsts = (op.parameters ?? [])
        .map((p) => resolve<{ name: string; examples?: Record<string, unknown> }>(doc, p))
        .filter((p) => p.examples)
        .map((p) => Object.keys(p.examples!)[0]);
      expect(new Set(firsts).size, `${op.operationId}: ${firsts.join(', ')}`).to.be.at.most(1);
    }
  });

  it('closes currencies to those a corridor pays, the set the server accepts', () => {
    expect(doc.components.schemas.Currency!.enum).to.deep.equal(CURRENCIES);
    expect(CURRENCIES).to.have.members(
      Corridors.shipped().data.corridors.map((c: { currency: string }) => c.currency),
    );
    expect(CURRENCIES).to.not.include.members(['USD']);
    expect(doc.components.schemas.SettlementCurrency!.enum).to.have.members(['USDT', 'NGN']);
    expect(doc.components.schemas.Payout!.properties.destination_currency).to.deep.equal({
      $ref: '#/components/schemas/Currency',
    });
  });

  it('says which fields each destination type requires, and which it refuses', () => {
    const request = '/components/schemas/CreatePayoutRequest';
    const crypto = {
      destination_type: 'CRYPTO_WALLET',
      destination_country: 'GB',
      destination_currency: 'USDT',
      destination_amount: 25,
      destination_account_unique: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
      destination_provider_name: 'TRON',
    };
    for (const body of [bankPayout(), mobilePayout(), crypto]) {
      const errors = check.errors(request, body);
      expect(errors, explain(errors)).to.deep.equal([]);
    }
    const { destination_provider_code: _, ...withoutCode } = bankPayout();
    const invalid = [
      withoutCode,
      { ...crypto, destination_provider_code: 'X' },
      { ...crypto, destination_provider_name: 'BSC' },
      { ...bankPayout(), destination_currency: 'EUR' },
    ];
    for (const body of invalid)
      expect(check.errors(request, body), JSON.stringify(body)).not.to.deep.equal([]);
    expect(doc.components.schemas.CreatePayoutRequest!.discriminator.propertyName).to.equal(
      'destination_type',
    );
  });

  it('states the decimals of each currency and the account format of each corridor, as the server checks them', () => {
    const payout = '/components/schemas/CreatePayoutRequest';
    const quote = '/components/schemas/CreateQuoteRequest';
    const enquiry = '/components/schemas/NameEnquiryRequest';
    const ok = (pointer: string, body: object) =>
      expect(check.errors(pointer, body), JSON.stringify(body)).to.deep.equal([]);
    const refused = (pointer: string, body: object) =>
      expect(check.errors(pointer, body), JSON.stringify(body)).to.not.deep.equal([]);
    const ngn = { settlement_currency: 'USDT', destination_currency: 'NGN' };
    for (const amount of [150000, 0.07, 1234.56]) ok(quote, { ...ngn, destination_amount: amount });
    for (const amount of [5e-324, 1e-7, 0.001, 100.005])
      refused(quote, { ...ngn, destination_amount: amount });
    ok(quote, { ...ngn, destination_currency: 'USDT', destination_amount: 0.000001 });
    refused(quote, { ...ngn, destination_currency: 'USDT', destination_amount: 1e-7 });
    refused(payout, bankPayout({ destination_amount: 0.001 }));

    // A Kenyan number in the spellings the server takes, and ones it refuses.
    for (const account of [
      '+254712345678',
      '254712345678',
      '0712 345 678',
      '(0712) 345.678',
      '00254-712-345-678',
    ])
      ok(payout, mobilePayout({ destination_account_unique: account }));
    for (const account of ['+254812345678', '712345678', '+2540712345678', '0712345678x'])
      refused(payout, mobilePayout({ destination_account_unique: account }));
    ok(payout, bankPayout({ destination_account_unique: '0123456789' }));
    refused(payout, bankPayout({ destination_account_unique: '012345678' }));
    // A country and currency that no corridor pairs: no format to state, the server answers 422.
    ok(payout, bankPayout({ destination_country: 'GB', destination_account_unique: '12' }));
    const resolveKe = {
      destination_type: 'MOBILE_MONEY',
      destination_currency: 'KES',
      destination_provider_code: 'MPESA',
    };
    ok(enquiry, { ...resolveKe, destination_account_unique: '0712-345-678' });
    refused(enquiry, { ...resolveKe, destination_account_unique: '0812345678' });
  });

  it('describes every webhook event the machines emit and the test ping, signed, with its payload', () => {
    const emitted = new Set(
      MACHINE_DOCS.flatMap(({ machine }) => describeMachine(machine).transitions.flatMap((t) => t.webhooks)),
    );
    expect(Object.keys(doc.webhooks).sort()).to.deep.equal([...emitted, 'webhook.test'].sort());
    expect([...MACHINE_WEBHOOK_EVENT_TYPES].sort()).to.deep.equal([...emitted].sort());
    for (const [type, { post }] of Object.entries(doc.webhooks)) {
      expect(post.requestBody!.content['application/json']!.schema, type).to.deep.equal({
        $ref: '#/components/schemas/WebhookEvent',
      });
      expect(doc.components.schemas.WebhookEvent!.discriminator.mapping[type], type).to.equal(
        `#/components/schemas/${type === 'webhook.test' ? 'WebhookTestEvent' : 'PayoutEvent'}`,
      );
      expect(payloadSchemaName(type as WebhookEventType)).to.equal(
        type === 'webhook.test' ? 'WebhookTestEvent' : 'PayoutEvent',
      );
      const headers = post.parameters!.map((p) => resolve<{ name: string }>(doc, p).name);
      expect(headers, type).to.include.members([
        'X-Service-Signature',
        'X-Service-Timestamp',
        'X-Service-Event',
        'X-Service-Delivery',
      ]);
    }
  });

  it('gives every payload a schema of its own and names their union WebhookEvent, told apart by event_type', () => {
    const union = doc.components.schemas.WebhookEvent!;
    expect(union.discriminator.propertyName).to.equal('event_type');
    expect(Object.keys(union.discriminator.mapping).sort()).to.deep.equal(Object.keys(doc.webhooks).sort());
    for (const [type, { post }] of Object.entries(doc.webhooks)) {
      const media = post.requestBody!.content['application/json']! as { example?: unknown };
      expect(media.example, `${type} has an example`).to.not.equal(undefined);
      const errors = check.errors('/components/schemas/WebhookEvent', media.example);
      expect(errors, `${type}: ${explain(errors)}`).to.deep.equal([]);
      const own = union.discriminator.mapping[type] as string;
      expect(check.errors(own.slice(1), media.example), `${type} as ${own}`).to.deep.equal([]);
    }
    const ping = (
      doc.webhooks['webhook.test']!.post.requestBody!.content['application/json'] as { example: unknown }
    ).example;
    expect(check.errors('/components/schemas/PayoutEvent', ping)).to.not.deep.equal([]);
  });
});
