import type { OpenApiDocument } from '#src/http/openapi.ts';

/**
 * Generates `src/client/api.ts`, the typed half of the merchant client, from the OpenAPI document:
 * one type per component schema, the webhook events by type, and per operation its parameters,
 * body, response and error codes, with a method each on `PayoutApi`. (openapi-typescript would do
 * the types, but it drives TypeScript 5's compiler API, which TypeScript 7 no longer has.)
 * `npm run docs` writes it beside the other generated documents, and `docs:check` keeps it fresh.
 */

// biome-ignore lint/suspicious/noExplicitAny: the document's JSON Schemas are walked as plain JSON
type Schema = Record<string, any>;
type Parameter = { name: string; in: string; required?: boolean; schema: Schema; description?: string };

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** A TypeScript type for a schema of the document (refs become the components' names). */
function typeOf(schema: Schema | undefined, indent = ''): string {
  if (!schema || Object.keys(schema).filter((k) => k !== 'description').length === 0) return 'unknown';
  if (schema.$ref) return refName(schema.$ref);
  if ('const' in schema) return JSON.stringify(schema.const).replaceAll('"', "'");
  if (Array.isArray(schema.enum)) return schema.enum.map((v: unknown) => literal(v)).join(' | ');
  const alternatives = (schema.oneOf ?? schema.anyOf) as Schema[] | undefined;
  if (alternatives) return alternatives.map((s) => typeOf(s, indent)).join(' | ');
  if (Array.isArray(schema.type))
    return schema.type.map((type: string) => typeOf({ ...schema, type }, indent)).join(' | ');
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return arrayOf(typeOf(schema.items, indent));
    case 'object':
      return schema.properties ? inlineObject(schema, indent) : 'Record<string, unknown>';
    default:
      return 'unknown';
  }
}

function arrayOf(type: string): string {
  return /^[\w.]+$/.test(type) ? `${type}[]` : `Array<${type}>`;
}

function literal(value: unknown): string {
  return typeof value === 'string' ? `'${value.replaceAll("'", "\\'")}'` : JSON.stringify(value);
}

/** Component names the client renames, so that they do not shadow a global (`Error`). */
const RENAMED: Record<string, string> = { Error: 'ErrorEnvelope' };

function refName(ref: string): string {
  const name = ref.slice(ref.lastIndexOf('/') + 1);
  return RENAMED[name] ?? name;
}

function propertyName(name: string): string {
  return IDENTIFIER.test(name) ? name : literal(name);
}

/** `/** text *\/` above a member, or nothing. */
function doc(text: string | undefined, indent: string): string[] {
  if (!text) return [];
  const clean = text.replaceAll('*/', '*\\/').replace(/\s+/g, ' ').trim();
  return [`${indent}/** ${clean} */`];
}

function members(schema: Schema, indent: string): string[] {
  const required = new Set((schema.required ?? []) as string[]);
  const lines: string[] = [];
  for (const [name, property] of Object.entries((schema.properties ?? {}) as Record<string, Schema>)) {
    lines.push(...doc(property.description, indent));
    const optional = required.has(name) ? '' : '?';
    lines.push(`${indent}${propertyName(name)}${optional}: ${typeOf(property, indent)};`);
  }
  return lines;
}

function inlineObject(schema: Schema, indent: string): string {
  const inner = `${indent}  `;
  return ['{', ...members(schema, inner), `${indent}}`].join('\n');
}

/** One exported declaration per component schema. */
function componentDeclaration(name: string, schema: Schema): string[] {
  const lines = doc(schema.description, '');
  if (schema.type === 'object' && schema.properties && !schema.oneOf) {
    lines.push(`export interface ${name} {`, ...members(schema, '  '), '}');
  } else {
    lines.push(`export type ${name} = ${typeOf(schema)};`);
  }
  return lines;
}

const pascal = (id: string) => id.charAt(0).toUpperCase() + id.slice(1);

interface OperationModel {
  id: string;
  method: string;
  path: string;
  summary: string;
  pathParams: Parameter[];
  queryParams: Parameter[];
  body: { type: string; required: boolean } | null;
  status: number;
  response: string;
  errors: string[];
  idempotent: boolean;
  paginated: boolean;
}

function resolveRef<T>(document: OpenApiDocument, item: unknown): T {
  const ref = (item as { $ref?: string }).$ref;
  if (!ref) return item as T;
  // biome-ignore lint/suspicious/noExplicitAny: a JSON pointer walks plain JSON
  let node: any = document;
  for (const part of ref.replace(/^#\//, '').split('/')) node = node[part];
  return resolveRef(document, node);
}

function operationModels(document: OpenApiDocument): OperationModel[] {
  const out: OperationModel[] = [];
  for (const [path, item] of Object.entries(document.paths ?? {})) {
    for (const [method, raw] of Object.entries(item as Record<string, Schema>)) {
      const parameters = ((raw.parameters ?? []) as unknown[]).map((p) => resolveRef<Parameter>(document, p));
      const [status, success] = Object.entries(raw.responses as Record<string, unknown>).find(([s]) =>
        s.startsWith('2'),
      )!;
      const media = resolveRef<Schema>(document, success).content?.['application/json'];
      const errors = new Set<string>();
      for (const [s, response] of Object.entries(raw.responses as Record<string, unknown>)) {
        if (Number(s) < 400) continue;
        for (const code of resolveRef<Schema>(document, response).content['application/json'][
          'x-error-codes'
        ])
          errors.add(code);
      }
      const body = raw.requestBody?.content?.['application/json'];
      const queryParams = parameters.filter((p) => p.in === 'query');
      out.push({
        id: raw.operationId,
        method: method.toUpperCase(),
        path,
        summary: raw.summary ?? raw.operationId,
        pathParams: parameters.filter((p) => p.in === 'path'),
        queryParams,
        body: body ? { type: typeOf(body.schema), required: raw.requestBody.required === true } : null,
        status: Number(status),
        response: media ? typeOf(media.schema) : 'void',
        errors: [...errors],
        idempotent: parameters.some((p) => p.in === 'header' && p.name === 'Idempotency-Key'),
        paginated: queryParams.some((p) => p.name === 'cursor'),
      });
    }
  }
  return out;
}

function queryType(op: OperationModel): string {
  return `${pascal(op.id)}Query`;
}

function queryDeclaration(op: OperationModel): string[] {
  if (op.queryParams.length === 0) return [];
  const lines = [`/** Query parameters of \`${op.id}\`. */`, `export interface ${queryType(op)} {`];
  for (const p of op.queryParams) {
    lines.push(...doc(p.description ?? p.schema.description, '  '));
    lines.push(`  ${propertyName(p.name)}${p.required ? '' : '?'}: ${typeOf(p.schema, '  ')};`);
  }
  lines.push('}');
  return lines;
}

/** The method of `PayoutApi` for one operation: path parameters first, then the body, then the query. */
function methodDeclaration(op: OperationModel): string[] {
  const args: string[] = [];
  const call: string[] = [];
  if (op.pathParams.length > 0) {
    for (const p of op.pathParams) args.push(`${p.name}: string`);
    call.push(`path: { ${op.pathParams.map((p) => p.name).join(', ')} }`);
  }
  if (op.body) {
    args.push(`body${op.body.required ? '' : '?'}: ${op.body.type}`);
    call.push('body');
  }
  if (op.queryParams.length > 0) {
    const required = op.queryParams.some((p) => p.required);
    args.push(`query${required ? '' : '?'}: ${queryType(op)}`);
    call.push('query');
  }
  args.push('options?: RequestOptions');
  call.push('options');
  return [
    `  /** ${op.summary}: \`${op.method} ${op.path}\`. Fails with a PayoutApiError of ErrorsOf<'${op.id}'>. */`,
    `  ${op.id}(${args.join(', ')}): Promise<${op.response}> {`,
    `    return this.send('${op.id}', { ${call.join(', ')} });`,
    '  }',
  ];
}

/** The source of `src/client/api.ts`. */
export function clientSource(document: OpenApiDocument): string {
  const schemas = (document.components?.schemas ?? {}) as Record<string, Schema>;
  const ops = operationModels(document);
  // A payload is declared as the union of them all; its own schema is the one the union maps its type to.
  const payloadOf = (type: string, schema: Schema): Schema => {
    const union = typeof schema.$ref === 'string' ? schemas[schema.$ref.split('/').at(-1)!] : undefined;
    const own = (union?.discriminator as { mapping?: Record<string, string> } | undefined)?.mapping?.[type];
    return own ? { $ref: own } : schema;
  };
  const webhooks = Object.entries((document.webhooks ?? {}) as Record<string, Schema>).map(
    ([type, item]) => ({
      type,
      payload: typeOf(payloadOf(type, item.post.requestBody.content['application/json'].schema)),
      description: item.post.description as string,
    }),
  );
  const out: string[] = [
    '// Generated from the OpenAPI document by `npm run docs` (src/docs/client.ts). Do not edit.',
    '',
    `/** The version of the API these types describe (the document's \`info.version\`). */`,
    `export const API_VERSION = '${document.info.version}';`,
    '',
  ];
  for (const [name, schema] of Object.entries(schemas)) {
    // The document's union of payloads, declared below by event type, which narrows better.
    if (name === 'WebhookEvent') continue;
    out.push(...componentDeclaration(RENAMED[name] ?? name, schema), '');
  }

  out.push(
    '/** Every webhook event by its `event_type`, with its payload. */',
    'export interface WebhookEvents {',
  );
  for (const w of webhooks)
    out.push(...doc(w.description.split('\n')[0], '  '), `  '${w.type}': ${w.payload};`);
  out.push(
    '}',
    '',
    '/** A webhook event: narrow it on `event_type`. */',
    'export type WebhookEvent = { [K in keyof WebhookEvents]: WebhookEvents[K] & { event_type: K } }[keyof WebhookEvents];',
    '',
  );

  for (const op of ops) {
    const query = queryDeclaration(op);
    if (query.length > 0) out.push(...query, '');
  }

  out.push('/** Per operation: what it takes, what it answers, and the error codes it can answer with. */');
  out.push('export interface Operations {');
  for (const op of ops) {
    out.push(`  ${op.id}: {`);
    out.push(
      `    path: ${op.pathParams.length > 0 ? `{ ${op.pathParams.map((p) => `${p.name}: string`).join('; ')} }` : 'never'};`,
    );
    out.push(`    query: ${op.queryParams.length > 0 ? queryType(op) : 'never'};`);
    out.push(`    body: ${op.body ? op.body.type : 'never'};`);
    out.push(`    response: ${op.response};`);
    out.push(`    errors: ${op.errors.map(literal).join(' | ')};`);
    out.push('  };');
  }
  out.push('}', '', 'export type OperationId = keyof Operations;', '');
  out.push('/** The error codes an operation can answer with. */');
  out.push("export type ErrorsOf<K extends OperationId> = Operations[K]['errors'];", '');
  out.push(
    '/** Operations whose answer is one page of a cursor-paginated list. */',
    `export type ListOperationId = ${ops
      .filter((o) => o.paginated)
      .map((o) => literal(o.id))
      .join(' | ')};`,
    '',
  );

  out.push('/** How each operation is called over HTTP. */');
  out.push('export const OPERATIONS = {');
  for (const op of ops) {
    out.push(
      `  ${op.id}: { method: '${op.method}', path: '${op.path}', status: ${op.status}, idempotent: ${op.idempotent} },`,
    );
  }
  out.push('} as const satisfies Record<OperationId, OperationSpec>;', '');
  out.push(
    'export interface OperationSpec {',
    "  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';",
    '  path: string;',
    '  status: number;',
    '  idempotent: boolean;',
    '}',
    '',
    '/** Per request: an Idempotency-Key of your own (writes; a UUID v4, made for you otherwise), an X-Request-Id, a signal. */',
    'export interface RequestOptions {',
    '  idempotencyKey?: string;',
    '  requestId?: string;',
    '  signal?: AbortSignal;',
    '}',
    '',
    '/** What `send` receives for one call. */',
    'export interface CallArgs {',
    '  path?: Record<string, string>;',
    '  query?: object;',
    '  body?: unknown;',
    '  options?: RequestOptions;',
    '}',
    '',
    '/** One method per operation of the API; `PayoutClient` supplies `send`. */',
    'export abstract class PayoutApi {',
    '  protected abstract send(operationId: OperationId, args: CallArgs): Promise<never>;',
    '',
  );
  ops.forEach((op, i) => {
    out.push(...methodDeclaration(op));
    if (i < ops.length - 1) out.push('');
  });
  out.push('}', '');
  return out.join('\n');
}
