import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { committedExamples } from '#src/http/openapi.ts';
import { type RestRoute, restRoutes } from '#src/http/rest.ts';
import { appRouter } from '#src/router.ts';
import { call, type Merchant, rawRequest } from '../client.ts';
import { harness } from '../harness.ts';
import { resolve, servedDocument } from '../openapi/document.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { expectTrpcRefusal, hostileValues, RUNS, rawJson, rowCounts, SEED } from './hostile.ts';
import { UNUSUAL_METHODS } from './unusual-methods.ts';

/**
 * Property-based fuzzing of every merchant write and list (and every read by id) over REST, and
 * of every merchant write procedure over tRPC: a request known to be good (the operation's
 * recorded example) with one part replaced by hostile input. Whatever it is, the answer is never
 * a 5xx, and nothing is persisted. Hostile input is always invalid, so nothing may be written:
 * text with a control character in it, a non-UUID where an id goes, a number beyond a double,
 * arrays nested past the depth limit, objects where scalars go, `__proto__` and unknown names,
 * methods no route takes.
 *
 * Bounded and reproducible: see `hostile.ts`. The operators' procedures: `fuzz-admin.test.ts`.
 */
const { hostile, hostileId } = hostileValues('single-line');

interface Target {
  name: string;
  route: RestRoute;
  /** The recorded good request: path parameters and body or query. */
  path: Record<string, string>;
  input: Record<string, unknown>;
  /** Names the input takes (body fields, or query parameters). */
  fields: string[];
}

type Mutation =
  | { kind: 'field'; field: string; value: unknown }
  | { kind: 'path'; param: string; value: unknown }
  | { kind: 'body'; value: unknown }
  | { kind: 'method'; method: string };

function mutationOf(target: Target): fc.Arbitrary<Mutation> {
  const fields = [...target.fields, '__proto__', 'constructor', 'unexpected_field'];
  const options: fc.Arbitrary<Mutation>[] = [
    fc
      .tuple(fc.constantFrom(...fields), hostile, hostileId)
      .map(([field, value, id]) => ({ kind: 'field', field, value: field.endsWith('_id') ? id : value })),
    fc.constantFrom(...UNUSUAL_METHODS).map((method) => ({ kind: 'method', method })),
  ];
  const params = Object.keys(target.path);
  if (params.length > 0)
    options.push(
      fc.tuple(fc.constantFrom(...params), hostile).map(([param, value]) => ({ kind: 'path', param, value })),
    );
  if (target.route.method !== 'GET')
    options.push(
      fc.oneof(hostile, fc.constant([]), fc.constant('text')).map((value) => ({ kind: 'body', value })),
    );
  return fc.oneof(...options);
}

/** The path with its parameters, each URL-encoded (a value that is not text as JSON). */
function pathOf(template: string, params: Record<string, unknown>): string {
  return template.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    return encodeURIComponent(typeof value === 'string' ? value : rawJson(value));
  });
}

async function sendRest(merchant: Merchant, target: Target, mutation: Mutation) {
  const params: Record<string, unknown> = { ...target.path };
  let input: unknown = { ...target.input };
  let method: string = target.route.method;
  if (mutation.kind === 'field')
    Object.defineProperty(input, mutation.field, { value: mutation.value, enumerable: true });
  if (mutation.kind === 'path') params[mutation.param] = mutation.value;
  if (mutation.kind === 'body') input = mutation.value;
  if (mutation.kind === 'method') method = mutation.method;
  let path = pathOf(target.route.path, params);
  if (mutation.kind === 'method') {
    const res = await rawRequest(method, path, { headers: { 'x-api-key': merchant.key } });
    return { status: res.status, text: res.text, body: JSON.parse(res.text || 'null') };
  }
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (target.route.method === 'GET') {
    const query = Object.entries(input as Record<string, unknown>)
      .map(
        ([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(typeof v === 'string' ? v : rawJson(v))}`,
      )
      .join('&');
    if (query) path += `?${query}`;
    return call(method, path, { key: merchant.key, idempotencyKey: null });
  }
  return call(method, path, {
    key: merchant.key,
    headers,
    rawBody: rawJson(input),
    idempotencyKey: target.route.meta.idempotent ? randomUUID() : null,
  });
}

describe('fuzzing: hostile input never gets a 5xx and never persists anything', function () {
  this.timeout(120_000);
  let merchant: Merchant;
  let targets: Target[];

  before(async () => {
    merchant = await payoutReadyMerchant();
    const doc = await servedDocument();
    const examples = committedExamples().operations;
    targets = restRoutes(appRouter).map((route) => {
      const op = doc.paths[route.path]![route.method.toLowerCase()]!;
      const example = examples[op.operationId]?.[0]?.request ?? {};
      const path = Object.fromEntries(
        [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => [m[1]!, example.path?.[m[1]!] ?? randomUUID()]),
      );
      const fields =
        route.method === 'GET'
          ? (op.parameters ?? [])
              .map((p) => resolve(doc, p))
              .filter((p) => p.in === 'query')
              .map((p) => p.name)
          : Object.keys(example.body ?? {});
      const input = (route.method === 'GET' ? (example.query ?? {}) : (example.body ?? {})) as Record<
        string,
        unknown
      >;
      return { name: `${route.method} ${route.path}`, route, path, input, fields };
    });
  });

  it('covers every merchant route of the document', () => {
    expect(targets.length).to.equal(restRoutes(appRouter).length);
    expect(targets.filter((t) => t.route.method !== 'GET').length).to.be.greaterThan(5);
  });

  it('over REST: every write, list and read', async () => {
    const before = await rowCounts(merchant.tenantId);
    for (const target of targets) {
      await fc.assert(
        fc.asyncProperty(mutationOf(target), async (mutation) => {
          const res = await sendRest(merchant, target, mutation);
          expect(res.status, `${target.name} ${JSON.stringify(mutation)}: ${res.text}`).to.be.below(500);
          expect(res.status, `${target.name} ${JSON.stringify(mutation)}: ${res.text}`).to.be.at.least(400);
          expect(res.body?.error?.code, res.text).to.be.a('string');
        }),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    }
    expect(await rowCounts(merchant.tenantId)).to.deep.equal(before);
  });

  it('over tRPC: every merchant write procedure', async () => {
    const before = await rowCounts(merchant.tenantId);
    for (const target of targets.filter((t) => t.route.type === 'mutation')) {
      await fc.assert(
        fc.asyncProperty(
          fc.tuple(
            fc.constantFrom(...target.fields, ...Object.keys(target.path), '__proto__'),
            hostile,
            hostileId,
          ),
          async ([field, value, id]) => {
            const input: Record<string, unknown> = { ...target.path, ...target.input };
            Object.defineProperty(input, field, {
              value: field.endsWith('_id') || field === 'id' ? id : value,
              enumerable: true,
            });
            const res = await fetch(`${harness().url}/trpc/${target.route.procedurePath}`, {
              method: 'POST',
              headers: {
                'content-type': 'application/json',
                'x-api-key': merchant.key,
                'idempotency-key': randomUUID(),
              },
              body: rawJson(input),
            });
            expectTrpcRefusal(
              res.status,
              await res.text(),
              `${target.route.procedurePath} ${field}=${rawJson(value)}`,
            );
          },
        ),
        { numRuns: RUNS, seed: SEED, endOnFailure: true },
      );
    }
    expect(await rowCounts(merchant.tenantId)).to.deep.equal(before);
  });
});
