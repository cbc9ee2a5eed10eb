import type { AnyRouter } from '@trpc/server';
import { expect } from 'chai';
import fc from 'fast-check';
import { fieldsOf, inputJsonSchema, type ProcedureDef } from '#src/docs/internal-api.ts';
import { appRouter } from '#src/router.ts';
import { rawRequest } from '../client.ts';
import { harness } from '../harness.ts';
import { arbitraryOf } from '../openapi/arbitraries.ts';
import type { OpenApi } from '../openapi/document.ts';
import { operatorWith } from '../operators/fixtures.ts';
import { expectTrpcRefusal, hostileValues, RUNS, rawJson, rowCounts, SEED } from './hostile.ts';
import { UNUSUAL_METHODS } from './unusual-methods.ts';

/**
 * Property-based fuzzing of every operators' procedure (`admin.*`, read from the router, so that
 * a new one is covered as soon as it exists) over tRPC, as an operator whose role reaches every
 * procedure's: queries by GET with `?input=`, mutations by POST. Each request is an input drawn
 * from the procedure's own input schema with one part replaced by hostile input (see `hostile.ts`; an
 * operator's text may break lines, nothing else), the whole input replaced by something that is
 * not one, or a method the procedure does not take. The answer is a 4xx in tRPC's error shape
 * with the catalogue's code, never a 5xx, and no table gains or loses a row.
 *
 * Fewer runs per procedure than the merchant fuzz (FUZZ_RUNS / 2): there are many procedures.
 */
const ADMIN_RUNS = Math.max(1, Math.ceil(RUNS / 2));

const { hostile, hostileId } = hostileValues('multi-line');

interface AdminTarget {
  path: string;
  type: 'query' | 'mutation';
  /** Names the input takes. */
  fields: string[];
  /** Inputs drawn from the procedure's input schema (most of them ones it accepts). */
  valid: fc.Arbitrary<Record<string, unknown>>;
}

type Mutation =
  | { kind: 'field'; field: string; value: unknown }
  | { kind: 'input'; text: string }
  | { kind: 'method'; method: string };

function adminTargets(): AdminTarget[] {
  return Object.entries((appRouter as AnyRouter)._def.procedures)
    .filter(([path]) => path.startsWith('admin.'))
    .map(([path, procedure]) => {
      const def = (procedure as { _def: ProcedureDef })._def;
      if (def.type === 'subscription') throw new Error(`${path}: subscriptions are not fuzzed`);
      const [input] = def.inputs;
      if (!input) return { path, type: def.type, fields: [], valid: fc.constant({}) };
      const schema = inputJsonSchema(input);
      if (!schema) throw new Error(`${path}: no JSON Schema of its input to draw valid inputs from`);
      const valid = arbitraryOf(schema as unknown as OpenApi, schema) as fc.Arbitrary<
        Record<string, unknown>
      >;
      return { path, type: def.type, fields: fieldsOf(schema).names, valid };
    });
}

function mutationOf(target: AdminTarget): fc.Arbitrary<Mutation> {
  const fields = [...target.fields, '__proto__', 'constructor', 'unexpected_field'];
  const wrongMethods = [target.type === 'query' ? 'POST' : 'GET', 'PUT', 'DELETE', ...UNUSUAL_METHODS];
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc.tuple(fc.constantFrom(...fields), hostile, hostileId).map(
        ([field, value, id]): Mutation => ({
          kind: 'field',
          field,
          value: field.endsWith('_id') ? id : value,
        }),
      ),
    },
    {
      weight: 1,
      arbitrary: fc
        .oneof(
          // An object whose prototype was set writes as `{}`, which some procedures take.
          hostile.map(rawJson).filter((text) => text !== '{}'),
          fc.constantFrom('[]', '"text"', '42', '{"limit":', 'not json'),
        )
        .map((text): Mutation => ({ kind: 'input', text })),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom(...wrongMethods).map((method): Mutation => ({ kind: 'method', method })),
    },
  );
}

async function send(target: AdminTarget, token: string, valid: Record<string, unknown>, mutation: Mutation) {
  let text = rawJson(valid);
  if (mutation.kind === 'field') {
    const input = { ...valid };
    Object.defineProperty(input, mutation.field, { value: mutation.value, enumerable: true });
    text = rawJson(input);
  }
  if (mutation.kind === 'input') text = mutation.text;
  const method = mutation.kind === 'method' ? mutation.method : target.type === 'query' ? 'GET' : 'POST';
  const headers = { authorization: `Bearer ${token}` };
  if (method === 'GET')
    return rawRequest(method, `/trpc/${target.path}?input=${encodeURIComponent(text)}`, { headers });
  const body = Buffer.from(text);
  return rawRequest(method, `/trpc/${target.path}`, {
    headers: { ...headers, 'content-type': 'application/json', 'content-length': String(body.length) },
    chunks: [body],
  });
}

describe('fuzzing: hostile input to the operators’ procedures never gets a 5xx and never persists anything', function () {
  this.timeout(120_000);
  const targets = adminTargets();

  it('covers every admin.* procedure of the router, queries and mutations', () => {
    const admin = Object.keys(appRouter._def.procedures).filter((p) => p.startsWith('admin.'));
    expect(targets.map((t) => t.path)).to.deep.equal(admin);
    expect(targets.filter((t) => t.type === 'mutation').length).to.be.greaterThan(5);
    expect(targets.filter((t) => t.type === 'query').length).to.be.greaterThan(5);
  });

  it('over tRPC, as root and as an operator with the role admin', async () => {
    const tokens = [harness().adminToken, (await operatorWith('admin')).token];
    const before = await rowCounts();
    for (const target of targets) {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...tokens),
          target.valid,
          mutationOf(target),
          async (token, valid, mutation) => {
            const res = await send(target, token, valid, mutation);
            expectTrpcRefusal(res.status, res.text, `${target.path} ${rawJson(valid)} ${rawJson(mutation)}`);
          },
        ),
        { numRuns: ADMIN_RUNS, seed: SEED, endOnFailure: true },
      );
    }
    expect(await rowCounts()).to.deep.equal(before);
  });
});
