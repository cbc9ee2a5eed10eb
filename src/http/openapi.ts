import { readFileSync } from 'node:fs';
import type { AnyRouter } from '@trpc/server';
import { z } from 'zod';
import { createDocument, createSchema, type oas31 } from 'zod-openapi';
import {
  payloadSchemaName,
  payoutEventOut,
  WEBHOOK_EVENTS,
  WEBHOOK_HEADERS,
  type WebhookEventType,
  webhookEventTypeSchema,
  webhookTestEventOut,
} from '#src/webhooks/events.ts';
import { ERROR_CATALOGUE, type ErrorCode } from './errors.ts';
import { RESPONSE_HEADERS, RETRY_AFTER_CODES, type ResponseHeader } from './headers.ts';
import { type RestRoute, restRoutes } from './rest.ts';
import type { RequestVariant } from './schemas.ts';

export type OpenApiDocument = oas31.OpenAPIObject;
type Schema = Record<string, unknown>;

/**
 * The OpenAPI 3.1 document of the merchant REST API, generated from the router: one operation per
 * procedure with `meta.openapi`, its parameters and bodies from the procedure's zod input, its
 * success response from the zod output (named schemas come from the schemas' `meta({ id })`), its
 * error responses from the codes it can answer with, and the webhooks from the event catalogue.
 * zod-openapi renders the schemas; everything else is written here.
 */
export function openApiDocument(
  appRouter: AnyRouter,
  options: { baseUrl: string; examples?: DocumentExamples },
): OpenApiDocument {
  const examples = options.examples ?? committedExamples();
  const paths: Record<string, Record<string, unknown>> = {};
  const routes = restRoutes(appRouter);
  const operationIds = new Set<string>();
  const errorResponses = new ErrorResponses(examples);
  for (const route of routes) {
    const operation = describeOperation(appRouter, route, errorResponses);
    if (operationIds.has(operation.operationId))
      throw new Error(`duplicate operationId ${operation.operationId}`);
    operationIds.add(operation.operationId);
    paths[route.path] = { ...paths[route.path], [route.method.toLowerCase()]: operation };
  }
  addLinks(paths, operationIds);
  const responses = errorResponses.share(paths);

  const doc = createDocument({
    openapi: '3.1.0',
    info: {
      title: 'Merchant Payout Service',
      version: '1.0',
      description: INFO_DESCRIPTION,
      license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
    },
    servers: [{ url: options.baseUrl, description: 'This service' }],
    tags: TAGS.filter((tag) => routes.some((r) => r.meta.openapi?.tags?.includes(tag.name))),
    paths: paths as never,
    webhooks: webhooksSection(examples) as never,
    components: {
      securitySchemes: {
        ApiKeyAuth: {
          type: 'apiKey',
          in: 'header',
          name: 'X-API-Key',
          description: 'The merchant API key; each operation needs the scope named in its description.',
        },
        WebhookSignature: {
          type: 'apiKey',
          in: 'header',
          name: 'X-Service-Signature',
          description:
            'How your endpoint authenticates a delivery: HMAC-SHA256 of `<t>.<raw body>` keyed with the signing ' +
            'secret, in `t=<unix seconds>,v1=<hex>`. Check it with verifyWebhook before parsing the body.',
        },
      },
      parameters: { ...PARAMETERS, ...webhookHeaderParameters() } as never,
      responses: responses as never,
      schemas: errorSchemas(errorResponses.codes) as never,
      ...(errorResponses.examples.size > 0 ? { examples: errorResponses.usedExamples() as never } : {}),
    },
  });
  addOutputSchema(doc, webhookEventTypeSchema);
  addOutputSchema(doc, payoutEventOut);
  addOutputSchema(doc, webhookTestEventOut);
  addEventUnion(doc);
  expandVariants(doc.components?.schemas as Record<string, Schema>);
  addOperationExamples(doc, examples);
  return doc;
}

const INFO_DESCRIPTION = [
  'Cross-border payouts for merchants: ask for a payout, pay the instruction (USDT on TRON or BSC, or NGN to a',
  'virtual account), and the beneficiary is paid through a processor; if that fails after the money arrived, it',
  'is refunded to the destination registered for the settlement currency.',
  '',
  'Every request carries `X-API-Key`. Every POST and PUT except `POST /v1/banks/resolve` carries an',
  '`Idempotency-Key` (a UUID v4): a repeat returns the first response (`Idempotent-Replayed: true`).',
  'Errors share one envelope, `{"error": {"code", "message", "details": [{"field", "issue"}], "request_id"}}`;',
  'each operation lists the codes it can return. Lists are newest first and cursor-paginated: pass',
  '`meta.next_cursor` as `cursor` while `meta.has_more` is true. Webhooks are signed with HMAC-SHA256',
  '(see the webhooks section).',
].join('\n');

const TAGS = [
  {
    name: 'Payouts',
    description: 'Create payouts and follow them: instruction, timeline and dispatch attempts.',
  },
  { name: 'Refunds', description: 'Refunds of failed payouts whose settlement had arrived.' },
  {
    name: 'Refund destinations',
    description: 'Where refunds go, one per settlement currency (needed before payouts).',
  },
  { name: 'Inflows', description: 'Settlements received from the merchant.' },
  {
    name: 'Money movements',
    description: "Where each payout's money went: received, converted, paid out, kept as fees, refunded.",
  },
  { name: 'Rates', description: 'Indicative rates and quotes that freeze a price.' },
  { name: 'Banks', description: 'Institutions of a corridor and name enquiry.' },
  { name: 'Webhooks', description: 'Where events are sent, the signing secret, and every delivery attempt.' },
];

/** A UUID v4 in any case: what `isUuidV4` accepts, as a JSON Schema pattern (which has no flags). */
export const UUID_V4_PATTERN =
  '^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-4[0-9a-fA-F]{3}-[89abAB][0-9a-fA-F]{3}-[0-9a-fA-F]{12}$';

const ref = (kind: 'schemas' | 'parameters' | 'examples', name: string) => ({
  $ref: `#/components/${kind}/${name}`,
});

const PARAMETERS = {
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: true,
    description:
      'A UUID v4, unique per logical write. Resend the same value to retry safely: the first response is ' +
      'returned again. A different request under a used key is 422 IDEMPOTENCY_KEY_REUSED.',
    schema: { type: 'string', format: 'uuid', pattern: UUID_V4_PATTERN },
    example: '3f0b8a52-6f7e-4a4b-9d0c-2b5f1e8c7a91',
  },
  RequestId: {
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description:
      'Your id for this request (1 to 128 of A-Z a-z 0-9 . _ : -), echoed back and quoted in errors; ' +
      'anything else is replaced by a generated one.',
    schema: { type: 'string' },
    example: 'checkout-7f3a-retry-1',
  },
};

type HeaderRule = (response: {
  status: number;
  codes: readonly ErrorCode[];
  idempotent: boolean;
}) => 'required' | 'optional' | 'absent';

/** Errors the HTTP layer answers before the operation is reached: they carry only X-Request-Id. */
const BEFORE_OPERATION: readonly ErrorCode[] = ['PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'];
const beforeOperation = (codes: readonly ErrorCode[]) =>
  codes.length > 0 && codes.every((c) => BEFORE_OPERATION.includes(c));

/**
 * Which responses carry each header of `RESPONSE_HEADERS`, by its `on`. A header is required
 * where it is always sent and declared optional where it may be (the rate-limit state is known
 * once the API key is: not on a 401, and not when the body could not be read as JSON).
 */
const HEADER_RULES = {
  all: ({ codes }) => (beforeOperation(codes) ? 'absent' : 'required'),
  authenticated: ({ status, codes }) =>
    status < 300 || status === 429
      ? 'required'
      : status === 401 || beforeOperation(codes)
        ? 'absent'
        : 'optional',
  retry: ({ codes }) => {
    const retried = codes.filter((c) => RETRY_AFTER_CODES.includes(c)).length;
    return retried === 0 ? 'absent' : retried === codes.length ? 'required' : 'optional';
  },
  replayed: ({ status, idempotent }) => (status < 300 && idempotent ? 'optional' : 'absent'),
} as const satisfies Record<ResponseHeader['on'], HeaderRule>;

/** The headers of one response, inline (whether each is required depends on the response). */
function responseHeaders(response: Parameters<HeaderRule>[0]): Record<string, unknown> {
  const headers: Record<string, unknown> = {};
  for (const [name, header] of Object.entries(RESPONSE_HEADERS) as [string, ResponseHeader][]) {
    const rule = name === 'X-Request-Id' ? 'required' : HEADER_RULES[header.on](response);
    if (rule === 'absent') continue;
    const { example, ...schema } = header.schema;
    headers[name] = {
      description: header.description,
      required: rule === 'required',
      schema,
      ...(example !== undefined ? { example } : {}),
    };
  }
  return headers;
}

/** Codes the HTTP layer answers for a request that reaches no operation (an unknown path or method). */
const OUTSIDE_OPERATIONS: readonly ErrorCode[] = ['ROUTE_NOT_FOUND', 'METHOD_NOT_ALLOWED'];

function errorSchemas(used: ReadonlySet<ErrorCode>): Record<string, Schema> {
  const codes = new Set([...used, ...OUTSIDE_OPERATIONS]);
  return {
    ErrorCode: {
      type: 'string',
      enum: Object.keys(ERROR_CATALOGUE).filter((c) => codes.has(c as ErrorCode)),
      description:
        'The closed list of error codes of this API; each has one HTTP status (see each operation). ' +
        'ROUTE_NOT_FOUND (404) and METHOD_NOT_ALLOWED (405, with an Allow header) answer a path that is no ' +
        'operation, or a method the path does not take.',
    },
    ErrorDetail: {
      type: 'object',
      required: ['field', 'issue'],
      additionalProperties: false,
      properties: {
        field: { type: 'string', description: 'The offending field (snake_case path), header or `body`.' },
        issue: { type: 'string', description: 'What is wrong with it.' },
      },
    },
    Error: {
      type: 'object',
      description: 'The error envelope of every 4xx and 5xx response.',
      required: ['error'],
      additionalProperties: false,
      properties: {
        error: {
          type: 'object',
          required: ['code', 'message', 'details', 'request_id'],
          additionalProperties: false,
          properties: {
            code: ref('schemas', 'ErrorCode'),
            message: { type: 'string' },
            details: { type: 'array', items: ref('schemas', 'ErrorDetail') },
            request_id: { type: 'string', description: 'The X-Request-Id of the request.' },
          },
        },
      },
    },
  };
}

/** The procedure's zod input (unwrapped from `.optional()`) and output. */
function procedureSchemas(appRouter: AnyRouter, route: RestRoute) {
  const def = (
    appRouter._def.procedures as Record<string, { _def: { inputs: z.ZodType[]; output?: z.ZodType } }>
  )[route.procedurePath]!._def;
  let input = def.inputs[0];
  const optional = input instanceof z.ZodOptional;
  if (input instanceof z.ZodOptional) input = input.unwrap() as z.ZodType;
  const shape = input instanceof z.ZodObject ? (input.shape as Record<string, z.ZodType>) : {};
  return { input, shape, optional, output: def.output };
}

/**
 * Every code an operation can answer with: those all merchant operations share (the key, its
 * scope, the input, the rate limit, an unexpected failure, the database lost under the request),
 * those that follow from what the operation is (a write with an Idempotency-Key, a body, a
 * cursor), and its own (`meta.errors`).
 */
export function operationErrors(route: RestRoute, inputKeys: readonly string[]): ErrorCode[] {
  const codes = new Set<ErrorCode>([
    'UNAUTHENTICATED',
    'INSUFFICIENT_SCOPES',
    'VALIDATION_FAILED',
    'RATE_LIMITED',
  ]);
  if (route.meta.idempotent) {
    for (const code of [
      'IDEMPOTENCY_KEY_REQUIRED',
      'IDEMPOTENCY_KEY_INVALID',
      'IDEMPOTENCY_KEY_REUSED',
    ] as const)
      codes.add(code);
  }
  if (route.method === 'POST' || route.method === 'PUT' || route.method === 'PATCH') {
    codes.add('PAYLOAD_TOO_LARGE');
    codes.add('UNSUPPORTED_MEDIA_TYPE');
  }
  if (inputKeys.includes('cursor')) codes.add('INVALID_CURSOR');
  for (const code of route.meta.errors ?? []) codes.add(code);
  codes.add('INTERNAL_ERROR');
  codes.add('SERVICE_UNAVAILABLE');
  const order = Object.keys(ERROR_CATALOGUE);
  return [...codes].sort(
    (a, b) => ERROR_CATALOGUE[a].status - ERROR_CATALOGUE[b].status || order.indexOf(a) - order.indexOf(b),
  );
}

function describeOperation(appRouter: AnyRouter, route: RestRoute, errorResponses: ErrorResponses) {
  const openapi = route.meta.openapi!;
  const operationId =
    openapi.operationId ?? route.procedurePath.replace(/\.(\w)/g, (_, c: string) => c.toUpperCase());
  const { input, shape, optional, output } = procedureSchemas(appRouter, route);
  const pathKeys = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const otherKeys = Object.keys(shape).filter((k) => !pathKeys.includes(k));
  const pick = (keys: string[]) => z.object(Object.fromEntries(keys.map((k) => [k, shape[k]!])));
  const hasBody = route.method !== 'GET' && route.method !== 'DELETE';

  const requestParams: Record<string, z.ZodType> = {};
  if (pathKeys.length > 0) requestParams.path = pick(pathKeys);
  if (!hasBody && otherKeys.length > 0) requestParams.query = pick(otherKeys);

  const parameters: unknown[] = [];
  if (route.meta.idempotent) parameters.push(ref('parameters', 'IdempotencyKey'));
  parameters.push(ref('parameters', 'RequestId'));

  let requestBody: unknown;
  if (hasBody && otherKeys.length > 0) {
    requestBody = {
      required: !optional,
      content: {
        'application/json': {
          schema: pathKeys.length > 0 ? pick(otherKeys) : input,
        },
      },
    };
  }

  const status = String(route.meta.successStatus ?? 200);
  const idempotent = route.meta.idempotent === true;
  const responses: Record<string, unknown> = {
    [status]: {
      description: openapi.successDescription ?? successDescription(output),
      headers: responseHeaders({ status: Number(status), codes: [], idempotent }),
      content: {
        'application/json': { schema: output },
        ...(route.meta.csv
          ? { 'text/csv': { schema: { type: 'string', description: route.meta.csv } } }
          : {}),
      },
    },
  };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of operationErrors(route, Object.keys(shape))) {
    const s = ERROR_CATALOGUE[code].status;
    byStatus.set(s, [...(byStatus.get(s) ?? []), code]);
  }
  for (const [s, codes] of byStatus) responses[String(s)] = errorResponses.response(s, codes, idempotent);

  return {
    operationId,
    summary: openapi.summary,
    description: [openapi.description, `Requires scope \`${route.meta.scope}\`.`]
      .filter(Boolean)
      .join('\n\n'),
    tags: openapi.tags,
    security: [{ ApiKeyAuth: [] }],
    'x-required-scope': route.meta.scope,
    ...(Object.keys(requestParams).length > 0 ? { requestParams } : {}),
    parameters,
    ...(requestBody ? { requestBody } : {}),
    responses,
  };
}

function successDescription(output: z.ZodType | undefined): string {
  const name = (schema: z.ZodType | undefined) => (schema ? z.globalRegistry.get(schema)?.id : undefined);
  if (output instanceof z.ZodArray) {
    const item = name(output.element as z.ZodType);
    return item ? `Every ${item}, as a bare array.` : 'A bare array.';
  }
  const own = name(output);
  return own ? `The ${own}.` : 'OK.';
}

type Link = { operationId: string; parameters: Record<string, string> };

/** From a payout (created or read) to the lists and instruction under it. */
const PAYOUT_CHILDREN: Record<string, Link> = {
  GetPaymentInstruction: {
    operationId: 'getPaymentInstruction',
    parameters: { payout_id: '$response.body#/id' },
  },
  ListPayoutOutflows: {
    operationId: 'listPayoutOutflows',
    parameters: { payout_id: '$response.body#/id' },
  },
  ListPayoutRefunds: { operationId: 'listPayoutRefunds', parameters: { payout_id: '$response.body#/id' } },
};

/**
 * Where a response leads next (OpenAPI links): from a resource to the operations that take its id,
 * and from every cursor-paginated page to the next one (with the same filters). Tools follow them,
 * and so does the schema-driven test, to call operations with ids that exist.
 */
const LINKS: Record<string, Record<string, Link>> = {
  createPayout: {
    GetPayout: { operationId: 'getPayout', parameters: { id: '$response.body#/id' } },
    ...PAYOUT_CHILDREN,
  },
  getPayout: {
    ...PAYOUT_CHILDREN,
    GetRefund: { operationId: 'getRefund', parameters: { id: '$response.body#/refund_reference' } },
  },
  listPayouts: { GetPayout: { operationId: 'getPayout', parameters: { id: '$response.body#/data/0/id' } } },
  listPayoutOutflows: {
    GetOutflow: { operationId: 'getOutflow', parameters: { id: '$response.body#/0/id' } },
  },
  getOutflow: { GetPayout: { operationId: 'getPayout', parameters: { id: '$response.body#/payout_id' } } },
  listPayoutRefunds: { GetRefund: { operationId: 'getRefund', parameters: { id: '$response.body#/0/id' } } },
  listRefunds: { GetRefund: { operationId: 'getRefund', parameters: { id: '$response.body#/data/0/id' } } },
  getRefund: { GetPayout: { operationId: 'getPayout', parameters: { id: '$response.body#/payout_id' } } },
  listInflows: { GetInflow: { operationId: 'getInflow', parameters: { id: '$response.body#/data/0/id' } } },
  getInflow: { GetPayout: { operationId: 'getPayout', parameters: { id: '$response.body#/payout_id' } } },
  createQuote: {
    GetQuote: { operationId: 'getQuote', parameters: { id: '$response.body#/id' } },
    AcceptQuote: { operationId: 'acceptQuote', parameters: { id: '$response.body#/id' } },
  },
  getQuote: { AcceptQuote: { operationId: 'acceptQuote', parameters: { id: '$response.body#/id' } } },
};

type PathItems = Record<string, Record<string, unknown>>;
type Operation = {
  operationId: string;
  requestParams?: { query?: z.ZodObject };
  responses: Record<string, { links?: Record<string, unknown> }>;
};

function addLinks(paths: PathItems, operationIds: Set<string>): void {
  for (const item of Object.values(paths)) {
    for (const operation of Object.values(item) as Operation[]) {
      const success = Object.entries(operation.responses).find(([s]) => s.startsWith('2'))?.[1];
      if (!success) continue;
      const links: Record<string, unknown> = {};
      for (const [name, link] of Object.entries(LINKS[operation.operationId] ?? {})) {
        if (!operationIds.has(link.operationId))
          throw new Error(`link ${name} to unknown ${link.operationId}`);
        links[name] = link;
      }
      const query = operation.requestParams?.query?.shape as Record<string, unknown> | undefined;
      if (query && 'cursor' in query) {
        const parameters: Record<string, string> = { cursor: '$response.body#/meta/next_cursor' };
        for (const name of Object.keys(query))
          if (name !== 'cursor') parameters[name] = `$request.query.${name}`;
        links.NextPage = {
          operationId: operation.operationId,
          parameters,
          description: 'The next page, with the same filters; follow it while meta.has_more is true.',
        };
      }
      if (Object.keys(links).length > 0) success.links = links;
    }
  }
}

/**
 * Adds a named schema of something the service sends outside any response (a webhook payload),
 * rendered as responses are (the output side); the schemas it shares with responses must come
 * out identical.
 */
function addOutputSchema(doc: OpenApiDocument, schema: z.ZodType): void {
  const id = z.globalRegistry.get(schema)?.id;
  if (!id) throw new Error('addOutputSchema needs a schema with meta({ id })');
  const rendered = createSchema(schema, { io: 'output', openapiVersion: '3.1.0' });
  doc.components ??= {};
  const schemas = doc.components.schemas ?? {};
  doc.components.schemas = schemas;
  const components = { ...rendered.components };
  if (!('$ref' in rendered.schema)) components[id] = rendered.schema;
  for (const [name, component] of Object.entries(components)) {
    const existing = schemas[name];
    if (existing && JSON.stringify(existing) !== JSON.stringify(component))
      throw new Error(`schema ${name} renders differently in a webhook payload and in a response`);
    schemas[name] = component as never;
  }
}

/**
 * `WebhookEvent`: every payload a webhook endpoint can receive, one schema per kind, told apart
 * by `event_type` (a discriminator), so that generated code can switch on it.
 */
function addEventUnion(doc: OpenApiDocument): void {
  const schemas = doc.components!.schemas!;
  const mapping = Object.fromEntries(
    Object.keys(WEBHOOK_EVENTS).map((type) => [
      type,
      `#/components/schemas/${payloadSchemaName(type as WebhookEventType)}`,
    ]),
  );
  schemas.WebhookEvent = {
    description:
      'Any webhook payload: PayoutEvent for the payout.* and refund.* events, WebhookTestEvent for webhook.test.',
    oneOf: [...new Set(Object.values(mapping))].map(($ref) => ({ $ref })),
    discriminator: { propertyName: 'event_type', mapping },
  } as never;
}

const webhookHeaderName = (header: string) => header.replaceAll('-', '');

/** The headers of every delivery, as parameter components (`XServiceSignature`, ...). */
function webhookHeaderParameters(): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(WEBHOOK_HEADERS).map(([name, h]) => [
      webhookHeaderName(name),
      {
        name,
        in: 'header',
        required: h.required,
        description: h.description,
        schema: { type: 'string', pattern: h.pattern },
      },
    ]),
  );
}

/** OpenAPI 3.1 `webhooks`: one entry per event type, its payload and the signature headers. */
function webhooksSection(examples: DocumentExamples): Record<string, unknown> {
  const headers = Object.keys(WEBHOOK_HEADERS).map((name) => ref('parameters', webhookHeaderName(name)));
  const out: Record<string, unknown> = {};
  for (const [type, when] of Object.entries(WEBHOOK_EVENTS)) {
    const example = examples.webhooks[type];
    out[type] = {
      post: {
        operationId: `on${type.replace(/(^|[._])(\w)/g, (_, __, c: string) => c.toUpperCase())}`,
        summary: type,
        description: `${when}\n\nThe body is a ${payloadSchemaName(type as WebhookEventType)} (WebhookEvent maps each event_type to its schema). Verify X-Service-Signature on the raw body before parsing it (see verifyWebhook), answer any 2xx within 10 seconds, and deduplicate on event_id: the same event may arrive more than once, and out of order.`,
        tags: ['Webhooks'],
        security: [{ WebhookSignature: [] }],
        parameters: headers,
        requestBody: {
          required: true,
          content: {
            'application/json': {
              schema: ref('schemas', 'WebhookEvent'),
              ...(example ? { example } : {}),
            },
          },
        },
        responses: {
          '200': {
            description:
              'Any 2xx acknowledges the delivery; anything else, or no answer in 10 s, is retried.',
          },
        },
      },
    };
  }
  return out;
}

/**
 * Expands every schema with `x-variants` (see `requestVariants`) into a `oneOf` of one component
 * per variant, with a discriminator: each variant is the flat schema with the discriminator fixed,
 * its required fields required and never null, its refused fields removed and its narrowings
 * applied.
 */
function expandVariants(schemas: Record<string, Schema>): void {
  for (const [name, schema] of Object.entries(schemas)) {
    const spec = schema['x-variants'] as
      | { discriminator: string; variants: Record<string, RequestVariant> }
      | undefined;
    if (!spec) continue;
    const { 'x-variants': _, description, ...base } = schema;
    const mapping: Record<string, string> = {};
    for (const [value, variant] of Object.entries(spec.variants)) {
      const properties = structuredClone(base.properties) as Record<string, Schema>;
      for (const field of variant.omit ?? []) delete properties[field];
      properties[spec.discriminator] = { ...properties[spec.discriminator], const: value };
      delete properties[spec.discriminator]!.$ref;
      properties[spec.discriminator]!.type = 'string';
      const required = new Set([...((base.required as string[]) ?? []), spec.discriminator]);
      for (const field of variant.require ?? []) {
        required.add(field);
        properties[field] = withoutNull(properties[field]!);
      }
      for (const [field, narrowing] of Object.entries(variant.narrow ?? {}))
        properties[field] = { ...properties[field], ...narrowing };
      const variantSchema: Schema = {
        ...base,
        description: variant.description,
        properties,
        required: Object.keys(properties).filter((p) => required.has(p)),
      };
      const allOf = [...((base.allOf as Schema[] | undefined) ?? []), ...(variant.allOf ?? [])];
      if (allOf.length > 0) variantSchema.allOf = allOf;
      schemas[variant.name] = variantSchema;
      mapping[value] = `#/components/schemas/${variant.name}`;
    }
    schemas[name] = {
      description,
      oneOf: Object.values(mapping).map(($ref) => ({ $ref })),
      discriminator: { propertyName: spec.discriminator, mapping },
    };
  }
}

/**
 * A schema without its `null` alternative (`anyOf: [X, {type: 'null'}]` becomes X, and
 * `type: ['string', 'null']` becomes `type: 'string'`).
 */
function withoutNull(schema: Schema): Schema {
  if (Array.isArray(schema.type)) {
    const types = (schema.type as string[]).filter((t) => t !== 'null');
    return { ...schema, type: types.length === 1 ? types[0] : types };
  }
  const anyOf = schema.anyOf as Schema[] | undefined;
  if (!anyOf) return schema;
  const rest = anyOf.filter((s) => s.type !== 'null');
  const { anyOf: _, ...others } = schema;
  return rest.length === 1 ? { ...others, ...rest[0] } : { ...others, anyOf: rest };
}

/**
 * Examples recorded from the running service and sandbox (`src/docs/examples.json`, written by
 * `npm run docs:examples`): per operation, named request and response pairs; per error code, one
 * envelope; per webhook event, one payload as delivered.
 */
export interface DocumentExamples {
  operations: Record<
    string,
    {
      name: string;
      summary: string;
      request: { path?: Record<string, string>; query?: Record<string, string>; body?: unknown };
      /** `mediaType`: the response's media type when it is not JSON (then `body` is its text). */
      response: { status: number; body: unknown; mediaType?: string };
    }[]
  >;
  errors: Record<string, { summary: string; value: unknown }>;
  webhooks: Record<string, unknown>;
}

/** The examples committed with the code. */
export function committedExamples(): DocumentExamples {
  return JSON.parse(
    readFileSync(new URL('../docs/examples.json', import.meta.url), 'utf8'),
  ) as DocumentExamples;
}

/** Puts each operation's recorded examples on its parameters, request body and success response. */
function addOperationExamples(doc: OpenApiDocument, examples: DocumentExamples): void {
  type Media = { examples?: Record<string, unknown> };
  type Param = { in?: string; name?: string; schema?: { type?: string }; examples?: Record<string, unknown> };
  for (const item of Object.values(doc.paths ?? {})) {
    for (const operation of Object.values(item as Record<string, Operation & { parameters?: Param[] }>)) {
      const recorded = examples.operations[operation.operationId] ?? [];
      const [status, success] = Object.entries(operation.responses).find(([s]) => s.startsWith('2')) ?? [];
      for (const example of recorded) {
        const named = { summary: example.summary };
        const body = (operation as { requestBody?: { content: Record<string, Media> } }).requestBody?.content[
          'application/json'
        ];
        if (body && example.request.body !== undefined)
          body.examples = { ...body.examples, [example.name]: { ...named, value: example.request.body } };
        for (const parameter of operation.parameters ?? []) {
          // A recorded cursor works only where it was issued (the key that signs it is the instance's).
          if (parameter.name === 'cursor') continue;
          // "Try it out" fills each parameter with its first example: an optional one that the first
          // recorded request leaves out gets none, so that the values filled in are one request's.
          if (
            !(parameter as { required?: boolean }).required &&
            !(parameter.name! in (recorded[0]?.request.query ?? {}))
          )
            continue;
          const where = parameter.in === 'path' ? example.request.path : example.request.query;
          const value = parameter.name ? where?.[parameter.name] : undefined;
          if (value !== undefined && (parameter.in === 'path' || parameter.in === 'query'))
            parameter.examples = {
              ...parameter.examples,
              [example.name]: { ...named, value: queryValue(parameter, value) },
            };
        }
        const media = (success as { content?: Record<string, Media> } | undefined)?.content?.[
          example.response.mediaType ?? 'application/json'
        ];
        if (media && String(example.response.status) === status)
          media.examples = { ...media.examples, [example.name]: { ...named, value: example.response.body } };
      }
    }
  }
}

/** A query string value as its parameter's type (a `limit` of "2" is the integer 2). */
function queryValue(parameter: { schema?: { type?: string } }, value: string): unknown {
  const type = parameter.schema?.type;
  return type === 'integer' || type === 'number' ? Number(value) : value;
}

/**
 * The error responses of the operations: per status, the codes it stands for, listed in its
 * description and in `x-error-codes`, with one recorded example per code. A response that several
 * operations share (401 UNAUTHENTICATED, 429, 500, ...) becomes one component they all refer to.
 */
class ErrorResponses {
  readonly examples = new Set<string>();
  /** Every code some operation answers with. */
  readonly codes = new Set<ErrorCode>();
  readonly #source: DocumentExamples;

  constructor(source: DocumentExamples) {
    this.#source = source;
  }

  response(status: number, codes: ErrorCode[], idempotent: boolean): Record<string, unknown> {
    for (const code of codes) this.codes.add(code);
    const headers = responseHeaders({ status, codes, idempotent });
    const recorded = codes.filter((code) => this.#source.errors[code]);
    for (const code of recorded) this.examples.add(code);
    return {
      description: codes.map((c) => `\`${c}\`: ${ERROR_CATALOGUE[c].message}`).join('\n\n'),
      headers,
      content: {
        'application/json': {
          schema: ref('schemas', 'Error'),
          'x-error-codes': codes,
          ...(recorded.length > 0
            ? { examples: Object.fromEntries(recorded.map((code) => [code, ref('examples', code)])) }
            : {}),
        },
      },
    };
  }

  /** Moves every single-code error response that two or more operations share into components. */
  share(paths: PathItems): Record<string, unknown> {
    const uses = new Map<string, { count: number; codes: string[] }>();
    const each = (visit: (responses: Record<string, unknown>, status: string, key: string) => void) => {
      for (const item of Object.values(paths))
        for (const operation of Object.values(item) as Operation[])
          for (const status of Object.keys(operation.responses)) {
            const response = operation.responses[status] as {
              content?: Record<string, Record<string, unknown>>;
            };
            const codes = response.content?.['application/json']?.['x-error-codes'] as string[] | undefined;
            if (codes?.length === 1) visit(operation.responses, status, JSON.stringify(response));
          }
    };
    each((responses, status, key) => {
      const codes = (responses[status] as { content: Record<string, Record<string, string[]>> }).content[
        'application/json'
      ]!['x-error-codes']!;
      uses.set(key, { count: (uses.get(key)?.count ?? 0) + 1, codes });
    });
    const shared: Record<string, unknown> = {};
    each((responses, status, key) => {
      const use = uses.get(key)!;
      if (use.count < 2) return;
      const name = pascalCase(use.codes[0]!);
      if (shared[name] && JSON.stringify(shared[name]) !== key)
        throw new Error(`two shapes of response ${name}`);
      shared[name] = responses[status];
      responses[status] = { $ref: `#/components/responses/${name}` };
    });
    return Object.fromEntries(Object.entries(shared).sort(([a], [b]) => a.localeCompare(b)));
  }

  usedExamples(): Record<string, unknown> {
    return Object.fromEntries([...this.examples].sort().map((code) => [code, this.#source.errors[code]]));
  }
}

const pascalCase = (code: string): string =>
  code.toLowerCase().replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
