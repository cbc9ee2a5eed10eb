import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import BigNumber from 'bignumber.js';
import { harness } from '../harness.ts';

/** The parts of the OpenAPI document the tests read. */
export interface OpenApi {
  openapi: string;
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, { post: Operation }>;
  components: {
    schemas: Record<string, Record<string, any>>;
    parameters: Record<string, Parameter>;
    headers: Record<string, { required?: boolean; schema: Record<string, unknown> }>;
    responses: Record<string, Response>;
    examples: Record<string, { summary?: string; value: unknown }>;
    securitySchemes: Record<string, unknown>;
  };
  tags: { name: string; description: string }[];
  [key: string]: unknown;
}

export interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema: Record<string, any>;
  description?: string;
  example?: unknown;
}

export interface Response {
  $ref?: string;
  description: string;
  headers?: Record<string, { $ref?: string; required?: boolean; schema?: Record<string, unknown> }>;
  content?: Record<
    string,
    {
      schema: Record<string, any>;
      example?: unknown;
      examples?: Record<string, { $ref: string }>;
      'x-error-codes'?: string[];
    }
  >;
  links?: Record<string, { operationId: string; parameters: Record<string, string> }>;
}

export interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  tags?: string[];
  parameters?: (Parameter | { $ref: string })[];
  requestBody?: {
    required?: boolean;
    content: Record<string, { schema: Record<string, any>; example?: unknown }>;
  };
  responses: Record<string, Response>;
  'x-required-scope'?: string;
}

/** The document the running test service serves. */
export async function servedDocument(): Promise<OpenApi> {
  const res = await fetch(`${harness().url}/openapi.json`);
  if (res.status !== 200) throw new Error(`GET /openapi.json answered ${res.status}`);
  return (await res.json()) as OpenApi;
}

/** Follows one local `$ref` (`#/components/...`), or returns the object itself. */
export function resolve<T>(doc: OpenApi, item: T | { $ref: string }): T {
  const pointer = (item as { $ref?: string }).$ref;
  if (!pointer) return item as T;
  let node: any = doc;
  for (const part of pointer.replace(/^#\//, '').split('/'))
    node = node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')];
  if (node === undefined) throw new Error(`unresolved ${pointer}`);
  return resolve(doc, node);
}

/** Every operation of the document with its method and path. */
export function operations(doc: OpenApi): { method: string; path: string; op: Operation }[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );
}

/** JSON Schema validation of values against the document's own schemas (JSON Schema 2020-12). */
export class SchemaCheck {
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<string, ValidateFunction>();

  constructor(doc: OpenApi) {
    // strict: false lets the OpenAPI keywords (discriminator, example, x-...) through as annotations.
    this.#ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
    addFormats.default(this.#ajv);
    // Ajv divides binary floats (0.07 / 0.01 is 7.000000000000001): check multipleOf on the digits.
    this.#ajv.removeKeyword('multipleOf');
    this.#ajv.addKeyword({
      keyword: 'multipleOf',
      type: 'number',
      schemaType: 'number',
      error: { message: ({ schemaCode }) => `must be multiple of ${schemaCode}` },
      validate: (step: number, value: number) => isMultipleOf(value, step),
    });
    this.#ajv.addSchema(doc as object, 'openapi.json');
  }

  /** Errors of `value` against the schema at `pointer` in the document (`/components/schemas/Payout`), or []. */
  errors(pointer: string, value: unknown): ErrorObject[] {
    let validate = this.#compiled.get(pointer);
    if (!validate) {
      validate = this.#ajv.getSchema(`openapi.json#${pointer}`);
      if (!validate) throw new Error(`no schema at ${pointer}`);
      this.#compiled.set(pointer, validate);
    }
    return validate(value) ? [] : [...(validate.errors ?? [])];
  }

  /** Errors of `value` against a schema object taken from the document (by value, refs resolved in it). */
  errorsOf(schema: Record<string, unknown>, value: unknown): ErrorObject[] {
    const key = JSON.stringify(schema);
    let validate = this.#compiled.get(key);
    if (!validate) {
      // The schema's refs point into the document: make them say so from the schema's own $id.
      const own = JSON.parse(key.replaceAll('"#/components/', '"openapi.json#/components/'));
      validate = this.#ajv.compile({ ...own, $id: `inline-${this.#compiled.size}` });
      this.#compiled.set(key, validate);
    }
    return validate(value) ? [] : [...(validate.errors ?? [])];
  }
}

/**
 * JSON Schema's multipleOf on the numbers as written (their shortest decimal form, the one the
 * server reads), not on their binary approximations.
 */
export function isMultipleOf(value: number, step: number): boolean {
  return new BigNumber(String(value)).mod(String(step)).isZero();
}

/** One line per validation error, for assertion messages. */
export function explain(errors: ErrorObject[]): string {
  return errors
    .map((e) => `${e.instancePath || '(root)'} ${e.message} ${JSON.stringify(e.params)}`)
    .join('; ');
}
