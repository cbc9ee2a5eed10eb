import { expect } from 'chai';
import { committedExamples } from '#src/http/openapi.ts';
import { payloadSchemaName, type WebhookEventType } from '#src/webhooks/events.ts';
import {
  explain,
  type OpenApi,
  operations,
  type Parameter,
  type Response,
  resolve,
  SchemaCheck,
  servedDocument,
} from './document.ts';
import { type Recording, recordExamples } from './examples.ts';

/** What a recording covers: operations, error codes and webhook events, by name. */
function coverage(recording: Pick<Recording, 'operations' | 'errors' | 'webhooks'>) {
  return {
    operations: Object.keys(recording.operations).sort(),
    errors: Object.keys(recording.errors).sort(),
    webhooks: Object.keys(recording.webhooks).sort(),
  };
}

/** Every error code that some operation of the document declares. */
function declaredCodes(doc: OpenApi): string[] {
  const codes = new Set<string>();
  for (const { op } of operations(doc))
    for (const [status, response] of Object.entries(op.responses))
      if (Number(status) >= 400)
        for (const code of resolve<Response>(doc, response).content!['application/json']!['x-error-codes']!)
          codes.add(code);
  return [...codes].sort();
}

const RERECORD = 'run `npm run docs:examples` and commit src/docs/examples.json and docs/openapi.json';

describe('the OpenAPI document’s examples', () => {
  let doc: OpenApi;
  let check: SchemaCheck;

  before(async () => {
    doc = await servedDocument();
    check = new SchemaCheck(doc);
  });

  it('show a recorded request and response for every operation, each valid against its schema', () => {
    for (const { method, path, op } of operations(doc)) {
      const where = `${method} ${path}`;
      const [status, raw] = Object.entries(op.responses).find(([s]) => s.startsWith('2'))!;
      // Every media type it answers in (JSON, and CSV where the operation offers it).
      for (const [type, media] of Object.entries(resolve<Response>(doc, raw).content!)) {
        const responses = Object.entries(
          (media as { examples?: Record<string, { value: unknown }> }).examples ?? {},
        );
        expect(responses, `${where} ${type}: no recorded response (${RERECORD})`).not.to.be.empty;
        for (const [name, example] of responses) {
          const errors = check.errorsOf(media.schema, example.value);
          expect(errors, `${where} ${status} ${type} example ${name}: ${explain(errors)}`).to.deep.equal([]);
        }
      }
      const body = op.requestBody?.content['application/json'] as
        | { schema: Record<string, unknown>; examples?: Record<string, { value: unknown }> }
        | undefined;
      if (body) {
        const requests = Object.entries(body.examples ?? {});
        expect(requests, `${where}: no recorded request body (${RERECORD})`).not.to.be.empty;
        for (const [name, example] of requests) {
          const errors = check.errorsOf(body.schema, example.value);
          expect(errors, `${where} request example ${name}: ${explain(errors)}`).to.deep.equal([]);
        }
      }
      for (const raw of op.parameters ?? []) {
        const parameter = resolve<Parameter & { examples?: Record<string, { value: unknown }> }>(doc, raw);
        if (parameter.in === 'path')
          expect(parameter.examples, `${where}: no example of ${parameter.name}`).to.be.an('object');
        for (const [name, example] of Object.entries(parameter.examples ?? {})) {
          const errors = check.errorsOf(parameter.schema, example.value);
          expect(errors, `${where} ${parameter.name} example ${name}: ${explain(errors)}`).to.deep.equal([]);
        }
      }
    }
  });

  it('show a recorded envelope for every error code an operation can return', () => {
    for (const { method, path, op } of operations(doc)) {
      for (const [status, raw] of Object.entries(op.responses)) {
        if (Number(status) < 400) continue;
        const media = resolve<Response>(doc, raw).content!['application/json']!;
        for (const code of media['x-error-codes']!) {
          const where = `${method} ${path} ${status} ${code}`;
          const example = media.examples?.[code];
          expect(example, `${where}: no recorded example (${RERECORD})`).to.be.an('object');
          const { value } = resolve<{ value: { error: { code: string } } }>(doc, example!);
          expect(value.error.code, where).to.equal(code);
          const errors = check.errors('/components/schemas/Error', value);
          expect(errors, `${where}: ${explain(errors)}`).to.deep.equal([]);
        }
      }
    }
  });

  it('show the payload of every webhook event as the service delivers it', () => {
    for (const [type, { post }] of Object.entries(doc.webhooks)) {
      const media = post.requestBody!.content['application/json']!;
      expect(media.example, `${type}: no recorded payload (${RERECORD})`).to.be.an('object');
      expect((media.example as { event_type: string }).event_type).to.equal(type);
      const errors = check.errors(
        `/components/schemas/${payloadSchemaName(type as WebhookEventType)}`,
        media.example,
      );
      expect(errors, `${type}: ${explain(errors)}`).to.deep.equal([]);
    }
  });

  it('are recorded again by their scenario against this service, covering the same ground, and valid', async function () {
    this.timeout(180_000);
    const recording = await recordExamples(doc);
    const expected = {
      operations: operations(doc)
        .map(({ op }) => op.operationId)
        .sort(),
      errors: declaredCodes(doc),
      webhooks: Object.keys(doc.webhooks).sort(),
    };
    expect(
      coverage(recording),
      `the scenario (test/openapi/examples.ts) no longer covers the document`,
    ).to.deep.equal(expected);
    expect(coverage(committedExamples()), `src/docs/examples.json is behind: ${RERECORD}`).to.deep.equal(
      expected,
    );
    for (const [operationId, examples] of Object.entries(recording.operations)) {
      const { op } = operations(doc).find((o) => o.op.operationId === operationId)!;
      for (const example of examples) {
        const response = resolve<Response>(doc, op.responses[String(example.response.status)]!);
        const media = response.content![example.response.mediaType ?? 'application/json']!;
        const errors = check.errorsOf(media.schema, example.response.body);
        expect(errors, `${operationId} ${example.name}: ${explain(errors)}`).to.deep.equal([]);
      }
    }
    for (const [type, payload] of Object.entries(recording.webhooks)) {
      const errors = check.errors(
        `/components/schemas/${payloadSchemaName(type as WebhookEventType)}`,
        payload,
      );
      expect(errors, `${type}: ${explain(errors)}`).to.deep.equal([]);
    }
  });
});
