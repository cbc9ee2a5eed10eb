import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { committedExamples } from '#src/http/openapi.ts';
import { type ApiResponse, call, type Merchant } from '../client.ts';
import {
  callbacksDelivered,
  dispatch,
  failedPayoutWithRefund,
  paidPayout,
  payoutTo,
} from '../dispatch/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { arbitraryOf, brokenValues, type Mutation, mutationsOf } from './arbitraries.ts';
import {
  explain,
  type OpenApi,
  type Operation,
  operations,
  type Parameter,
  type Response,
  resolve,
  SchemaCheck,
  servedDocument,
} from './document.ts';

/**
 * Requests built from the OpenAPI document itself and sent to the running service, the way
 * Schemathesis would: valid ones from the recorded examples and generated from the schemas
 * (fast-check), invalid ones made by breaking valid ones against their schemas. Every answer must
 * be one the document declares for the operation: its status, its body's schema, its headers, and
 * for an error a code the operation lists under that status. Ids in paths come from the answers
 * themselves, by following the document's links, so requests reach real resources.
 *
 * The run is bounded (SCHEMA_RUNS generated requests per operation, 6 by default) and reproducible
 * (SCHEMA_SEED, printed when something fails).
 */
const RUNS = Number(process.env.SCHEMA_RUNS ?? 6);
const SEED = Number(process.env.SCHEMA_SEED ?? 20_261_126);
const MAX_MUTANTS = 8;

interface Op {
  method: string;
  path: string;
  op: Operation;
  params: Parameter[];
  body?: { schema: Record<string, unknown>; required: boolean };
  idempotent: boolean;
}

interface Request {
  path: Record<string, string>;
  query: Record<string, unknown>;
  body?: unknown;
  /** false: send no Idempotency-Key; a string: send that one. */
  idempotencyKey?: string | false;
  /** false: send no X-API-Key. */
  authenticated?: boolean;
}

interface Sent {
  what: string;
  op: Op;
  request: Request;
  res: ApiResponse;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

class Session {
  readonly doc: OpenApi;
  readonly check: SchemaCheck;
  readonly merchant: Merchant;
  readonly ops: Op[];
  /** Values for operations' parameters, found by following links: operationId → parameter → values. */
  readonly pool = new Map<string, Map<string, unknown[]>>();
  /** Ids of the recorded examples → the ids of this run's resources that played their part. */
  readonly translated = new Map<string, string>();
  readonly failures: string[] = [];
  readonly counts = { valid: 0, succeeded: 0, invalid: 0 };

  constructor(doc: OpenApi, merchant: Merchant) {
    this.doc = doc;
    this.check = new SchemaCheck(doc);
    this.merchant = merchant;
    this.ops = operations(doc).map(({ method, path, op }) => {
      const params = (op.parameters ?? []).map((p) => resolve<Parameter>(doc, p));
      const body = op.requestBody?.content['application/json'];
      return {
        method,
        path,
        op,
        params: params.filter((p) => p.in === 'path' || p.in === 'query'),
        body: body ? { schema: body.schema, required: op.requestBody!.required === true } : undefined,
        idempotent: params.some((p) => p.name === 'Idempotency-Key'),
      };
    });
  }

  byId(operationId: string): Op {
    const found = this.ops.find((o) => o.op.operationId === operationId);
    if (!found) throw new Error(`no operation ${operationId}`);
    return found;
  }

  async send(what: string, op: Op, request: Request): Promise<Sent> {
    let url = op.path.replace(/\{(\w+)\}/g, (_, name: string) =>
      encodeURIComponent(request.path[name] ?? ''),
    );
    const query = new URLSearchParams();
    for (const [name, value] of Object.entries(request.query))
      if (value !== undefined) query.set(name, String(value));
    if ([...query].length > 0) url += `?${query}`;
    const idempotencyKey =
      request.idempotencyKey === false
        ? null
        : (request.idempotencyKey ?? (op.idempotent ? randomUUID() : null));
    const res = await call(op.method, url, {
      key: request.authenticated === false ? null : this.merchant.key,
      idempotencyKey,
      ...(request.body !== undefined ? { body: request.body } : {}),
    });
    return { what, op, request, res };
  }

  /** Checks an answer against everything the document declares for it; returns the problems. */
  conformance({ op, res }: Sent): string[] {
    const raw = op.op.responses[String(res.status)];
    if (!raw)
      return [`answered ${res.status}, which the operation does not declare: ${res.text.slice(0, 300)}`];
    const response = resolve<Response>(this.doc, raw);
    const problems: string[] = [];
    for (const [name, header] of Object.entries(response.headers ?? {})) {
      const value = res.headers.get(name);
      if (value === null) {
        if (header.required) problems.push(`header ${name} is missing`);
        continue;
      }
      const schema = header.schema ?? {};
      const typed = schema.type === 'integer' ? Number(value) : value;
      const errors = this.check.errorsOf(schema, typed);
      if (errors.length > 0) problems.push(`header ${name}: ${value}: ${explain(errors)}`);
    }
    const media = response.content?.['application/json'];
    if (media) {
      if (!res.headers.get('content-type')?.startsWith('application/json'))
        problems.push(`content-type ${res.headers.get('content-type')}`);
      const errors = this.check.errorsOf(media.schema, res.body);
      if (errors.length > 0) problems.push(`body: ${explain(errors)}`);
      const codes = media['x-error-codes'];
      if (codes && !codes.includes(res.body?.error?.code))
        problems.push(`code ${res.body?.error?.code} is not among ${res.status}'s ${codes.join(', ')}`);
    }
    return problems;
  }

  fail(sent: Sent, problems: string[]): void {
    this.failures.push(
      `${sent.op.method} ${sent.op.path} (${sent.what}) ${JSON.stringify(sent.request)} → ${sent.res.status}: ${problems.join('; ')}`,
    );
  }

  /** A valid request: it must be answered as declared, without a 5xx; 2xx are counted. */
  async valid(what: string, op: Op, request: Request, options: { must2xx?: boolean } = {}): Promise<Sent> {
    const sent = await this.send(what, op, request);
    this.counts.valid++;
    const problems = this.conformance(sent);
    if (sent.res.status >= 500) problems.push('a server error for a valid request');
    // Valid by the document must not be invalid to the server: the document is then looser than
    // it. Refusals that depend on state or corridor have codes of their own, which it lists.
    if (sent.res.body?.error?.code === 'VALIDATION_FAILED')
      problems.push('valid by the document, refused by the server as VALIDATION_FAILED');
    if (options.must2xx && (sent.res.status < 200 || sent.res.status > 299))
      problems.push(`a recorded example must succeed: ${sent.res.text.slice(0, 300)}`);
    if (problems.length > 0) this.fail(sent, problems);
    if (sent.res.status >= 200 && sent.res.status < 300) {
      this.counts.succeeded++;
      this.follow(sent);
    }
    return sent;
  }

  /** An invalid request: a documented 4xx in the envelope. */
  async invalid(what: string, op: Op, request: Request): Promise<void> {
    const sent = await this.send(what, op, request);
    this.counts.invalid++;
    const problems = this.conformance(sent);
    if (sent.res.status < 400 || sent.res.status > 499)
      problems.push('an invalid request was not refused with a 4xx');
    if (problems.length > 0) this.fail(sent, problems);
  }

  /** Keeps the values the answer's links give, for the operations they lead to. */
  follow({ op, request, res }: Sent): void {
    const [, success] = Object.entries(op.op.responses).find(([s]) => s.startsWith('2'))!;
    for (const link of Object.values(resolve<Response>(this.doc, success).links ?? {})) {
      for (const [name, expression] of Object.entries(link.parameters)) {
        const value = evaluate(expression, request, res.body);
        if (value === undefined || value === null) continue;
        const byParam = this.pool.get(link.operationId) ?? new Map<string, unknown[]>();
        const values = byParam.get(name) ?? [];
        if (!values.includes(value)) values.push(value);
        byParam.set(name, values);
        this.pool.set(link.operationId, byParam);
      }
    }
  }

  pooled(op: Op, name: string): unknown[] {
    return this.pool.get(op.op.operationId)?.get(name) ?? [];
  }

  /** Replaces, anywhere in a recorded value, the recording's ids by this run's. */
  translate<T>(value: T): T {
    if (value === undefined) return value;
    return JSON.parse(JSON.stringify(value), (_, v) =>
      typeof v === 'string' && this.translated.has(v) ? this.translated.get(v) : v,
    ) as T;
  }

  /** Learns which of this run's ids stand for the recording's, from two answers of the same shape. */
  learn(recorded: unknown, live: unknown): void {
    if (typeof recorded === 'string' && typeof live === 'string') {
      if (recorded !== live && UUID.test(recorded) && UUID.test(live)) this.translated.set(recorded, live);
    } else if (recorded && live && typeof recorded === 'object' && typeof live === 'object') {
      for (const [key, value] of Object.entries(recorded))
        this.learn(value, (live as Record<string, unknown>)[key]);
    }
  }
}

/** `$response.body#/pointer` or `$request.query.name`. */
function evaluate(expression: string, request: Request, body: unknown): unknown {
  if (expression.startsWith('$request.query.'))
    return request.query[expression.slice('$request.query.'.length)];
  const pointer = /^\$response\.body#(.*)$/.exec(expression)?.[1];
  if (pointer === undefined) throw new Error(`link expression not understood: ${expression}`);
  let node: unknown = body;
  for (const part of pointer.split('/').slice(1))
    node = (node as Record<string, unknown> | undefined)?.[part];
  return node;
}

/** The recorded examples of an operation, as requests (the same name across parameters and body). */
function recordedRequests(op: Op): { name: string; request: Request; response?: unknown }[] {
  const names = new Set<string>();
  const body = op.op.requestBody?.content['application/json'] as
    | { examples?: Record<string, { value: unknown }> }
    | undefined;
  for (const name of Object.keys(body?.examples ?? {})) names.add(name);
  for (const p of op.params)
    for (const name of Object.keys((p as { examples?: object }).examples ?? {})) names.add(name);
  const [, success] = Object.entries(op.op.responses).find(([s]) => s.startsWith('2'))!;
  const responses = (
    success.content?.['application/json'] as { examples?: Record<string, { value: unknown }> } | undefined
  )?.examples;
  for (const name of Object.keys(responses ?? {})) names.add(name);
  return [...names].map((name) => {
    const request: Request = { path: {}, query: {} };
    for (const p of op.params) {
      const value = (p as { examples?: Record<string, { value: unknown }> }).examples?.[name]?.value;
      if (value === undefined) continue;
      if (p.in === 'path') request.path[p.name] = String(value);
      else request.query[p.name] = value;
    }
    const value = body?.examples?.[name]?.value;
    if (value !== undefined) request.body = value;
    return { name, request, response: responses?.[name]?.value };
  });
}

/** Example values by property or parameter name, across every example of the operation. */
function preferred(op: Op, session: Session): Map<string, unknown[]> {
  const prefer = new Map<string, unknown[]>();
  const add = (name: string, value: unknown) => {
    const values = prefer.get(name) ?? [];
    if (!values.some((v) => JSON.stringify(v) === JSON.stringify(value))) values.push(value);
    prefer.set(name, values);
  };
  for (const { request } of recordedRequests(op)) {
    for (const [name, value] of Object.entries(request.query)) if (name !== 'cursor') add(name, value);
    if (request.body && typeof request.body === 'object')
      for (const [name, value] of Object.entries(session.translate(request.body as object))) add(name, value);
  }
  return prefer;
}

/**
 * Mostly a recorded example with one or two of its fields drawn afresh from the schema (or left
 * out), sometimes a body generated whole: requests close enough to real ones to reach the
 * service's logic, varied enough to explore it.
 */
function variations(
  generated: fc.Arbitrary<unknown>,
  examples: Record<string, unknown>[],
): fc.Arbitrary<unknown> {
  if (examples.length === 0) return generated;
  const keys = [...new Set(examples.flatMap((e) => Object.keys(e)))];
  const varied = fc
    .record({
      example: fc.constantFrom(...examples),
      fresh: generated,
      keys: fc.subarray(keys, { maxLength: Math.min(2, keys.length) }),
    })
    .map(({ example, fresh, keys: chosen }) => {
      const out: Record<string, unknown> = { ...example };
      const source = (fresh ?? {}) as Record<string, unknown>;
      for (const key of chosen) {
        if (key in source) out[key] = source[key];
        else delete out[key];
      }
      return out;
    });
  return fc.oneof({ weight: 3, arbitrary: varied }, { weight: 1, arbitrary: generated });
}

/** A merchant with a paid payout and a refunded one, so that every kind of resource exists. */
async function preparedMerchant(): Promise<{ merchant: Merchant; payouts: string[] }> {
  const merchant = await payoutReadyMerchant();
  await call('PUT', '/v1/webhooks/config', {
    key: merchant.key,
    body: { webhook_url: 'https://hooks.schema-test.example/payouts' },
  });
  const paid = await paidPayout(merchant, payoutTo('5678'));
  const [accepted] = await dispatch(merchant, paid);
  await callbacksDelivered(accepted.id);
  const { payoutId: failed } = await failedPayoutWithRefund(merchant, 'USDT');
  return { merchant, payouts: [paid, failed] };
}

describe('requests built from the OpenAPI document', function () {
  this.timeout(600_000);
  let session: Session;

  before(async () => {
    const { merchant, payouts } = await preparedMerchant();
    session = new Session(await servedDocument(), merchant);
    // Crawl: every operation without a path parameter, then whatever the answers' links lead to.
    const getPayout = session.byId('getPayout');
    for (const id of payouts) await session.valid('crawl', getPayout, { path: { id }, query: {} });
    const seen = new Set<string>();
    for (let round = 0; round < 4; round++) {
      for (const op of session.ops) {
        if (op.method !== 'GET') continue;
        const pathNames = op.params.filter((p) => p.in === 'path').map((p) => p.name);
        const candidates = pathNames.map((name) => session.pooled(op, name));
        if (candidates.some((c) => c.length === 0)) continue;
        const path = Object.fromEntries(pathNames.map((name, i) => [name, String(candidates[i]!.at(-1))]));
        const key = `${op.op.operationId} ${JSON.stringify(path)}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const required = Object.fromEntries(
          op.params
            .filter((p) => p.in === 'query' && p.required)
            .map((p) => [
              p.name,
              recordedRequests(op)
                .map((r) => r.request.query[p.name])
                .find((v) => v !== undefined),
            ]),
        );
        await session.valid('crawl', op, { path, query: required });
      }
    }
  });

  after(() => {
    const { valid, succeeded, invalid } = session?.counts ?? { valid: 0, succeeded: 0, invalid: 0 };
    console.log(
      `      ${valid} valid requests (${succeeded} answered 2xx), ${invalid} invalid; seed ${SEED}, ${RUNS} runs per operation`,
    );
  });

  it('answers every request of the recorded examples with a 2xx matching its schema and headers', async () => {
    const before = session.failures.length;
    // In the order they were recorded, so that a resource exists before an example uses it.
    const order = Object.keys(committedExamples().operations);
    const recorded = [...session.ops].sort(
      (a, b) => order.indexOf(a.op.operationId) - order.indexOf(b.op.operationId),
    );
    for (const op of recorded) {
      for (const { name, request, response } of recordedRequests(op)) {
        const live = session.translate(request);
        for (const p of op.params.filter((p) => p.in === 'path')) {
          const pooled = session.pooled(op, p.name);
          if (pooled.length > 0) live.path[p.name] = String(pooled[0]);
        }
        if ('cursor' in live.query) live.query.cursor = session.pooled(op, 'cursor').at(-1);
        const sent = await session.valid(`example ${name}`, op, live, { must2xx: true });
        session.learn(response, sent.res.body);
      }
    }
    const failures = session.failures.slice(before);
    expect(failures, failures.join('\n')).to.deep.equal([]);
  });

  it('answers requests generated from the schemas as documented, more than half of them with a 2xx', async () => {
    const before = session.failures.length;
    let run = 0;
    for (const op of session.ops) {
      const prefer = preferred(op, session);
      const params = Object.fromEntries(
        op.params.map((p) => {
          const pooled = session.pooled(op, p.name);
          const own = arbitraryOf(session.doc, p.schema, prefer, p.name);
          const arbitrary =
            p.in === 'path' && pooled.length > 0
              ? fc.constantFrom(...pooled)
              : p.name === 'cursor'
                ? fc.constantFrom(...pooled, undefined)
                : own;
          return [p.name, p.required ? arbitrary : fc.option(arbitrary, { nil: undefined })];
        }),
      );
      const examples = recordedRequests(op)
        .map((r) => session.translate(r.request.body))
        .filter((b): b is Record<string, unknown> => typeof b === 'object' && b !== null);
      const body = op.body
        ? variations(arbitraryOf(session.doc, op.body.schema, prefer), examples)
        : fc.constant(undefined);
      const requests = fc
        .record({ params: fc.record(params), body })
        .filter(({ body: b }) => !op.body || session.check.errorsOf(op.body.schema, b).length === 0);
      const samples = fc.sample(requests, { numRuns: RUNS, seed: SEED + run++ });
      for (const { params: values, body: value } of samples) {
        const request: Request = { path: {}, query: {}, body: value };
        for (const p of op.params) {
          const v = values[p.name];
          if (v === undefined) continue;
          if (p.in === 'path') request.path[p.name] = String(v);
          else request.query[p.name] = v;
        }
        await session.valid('generated', op, request);
      }
    }
    const failures = session.failures.slice(before);
    expect(failures, `seed ${SEED}:\n${failures.join('\n')}`).to.deep.equal([]);
    expect(
      session.counts.succeeded / session.counts.valid,
      'share of valid requests answered 2xx',
    ).to.be.greaterThan(0.5);
  });

  it('refuses every request broken against the document with a documented 4xx in the envelope', async () => {
    const before = session.failures.length;
    for (const op of session.ops) {
      const [example] = recordedRequests(op);
      const request = session.translate(example?.request ?? { path: {}, query: {} });
      for (const p of op.params.filter((p) => p.in === 'path')) {
        const pooled = session.pooled(op, p.name);
        if (pooled.length > 0) request.path[p.name] = String(pooled[0]);
      }
      delete request.query.cursor;
      const mutants: { what: string; request: Request }[] = [
        { what: 'no X-API-Key', request: { ...request, authenticated: false } },
      ];
      if (op.idempotent) {
        mutants.push({ what: 'no Idempotency-Key', request: { ...request, idempotencyKey: false } });
        mutants.push({
          what: 'an Idempotency-Key that is not a UUID v4',
          request: { ...request, idempotencyKey: randomUUID().replace(/^(.{14})4/, '$11') },
        });
      }
      for (const p of op.params) {
        if (p.in === 'query' && p.required) {
          const { [p.name]: _, ...query } = request.query;
          mutants.push({ what: `${p.name}: required, left out`, request: { ...request, query } });
        }
        for (const broken of brokenValues(session.doc, p.schema).filter(queryCanCarry)) {
          if (session.check.errorsOf(p.schema, broken.value).length === 0) continue;
          const target = p.in === 'path' ? 'path' : 'query';
          mutants.push({
            what: `${p.name}: ${broken.what}`,
            request: { ...request, [target]: { ...request[target], [p.name]: broken.value } },
          });
        }
      }
      if (op.body && request.body && typeof request.body === 'object') {
        const body = op.body;
        const broken = mutationsOf(session.doc, body.schema, request.body as Record<string, unknown>).filter(
          (m: Mutation) => session.check.errorsOf(body.schema, m.value).length > 0,
        );
        for (const m of fc.sample(
          fc.shuffledSubarray(broken, {
            minLength: Math.min(broken.length, MAX_MUTANTS),
            maxLength: Math.min(broken.length, MAX_MUTANTS),
          }),
          { numRuns: 1, seed: SEED },
        )[0] ?? [])
          mutants.push({ what: m.what, request: { ...request, body: m.value } });
      }
      for (const mutant of mutants) await session.invalid(mutant.what, op, mutant.request);
    }
    const failures = session.failures.slice(before);
    expect(failures, `seed ${SEED}:\n${failures.join('\n')}`).to.deep.equal([]);
  });
});

/** A broken value that stays broken once written into a URL (a number for a string does not), never empty. */
function queryCanCarry(m: Mutation): boolean {
  return m.what !== 'a number instead of a string' && m.value !== '';
}
