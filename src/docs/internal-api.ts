import type { AnyRouter } from '@trpc/server';
import { z } from 'zod';
import type { ProcedureMeta } from '#src/http/trpc.ts';
import { requiredRole } from '#src/operators/roles.ts';

/**
 * `docs/internal-api.md`: how internal tools call the service over tRPC, and every procedure of
 * the router, listed from the router itself (`npm run docs`), so that the list cannot drift.
 */

export interface ProcedureDef {
  type: 'query' | 'mutation' | 'subscription';
  meta?: ProcedureMeta;
  inputs: z.ZodType[];
}

export interface JsonSchema {
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
  properties?: Record<string, unknown>;
  required?: string[];
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
}

/** Field names of an object schema, in order, and those every variant requires (unions merged). */
export function fieldsOf(
  given: JsonSchema,
  defs: Record<string, JsonSchema> = given.$defs ?? {},
): { names: string[]; required: Set<string> } {
  const ref = given.$ref?.startsWith('#/$defs/') ? defs[given.$ref.slice('#/$defs/'.length)] : undefined;
  const schema = ref ?? given;
  if (schema.properties) {
    return { names: Object.keys(schema.properties), required: new Set(schema.required ?? []) };
  }
  const variants = schema.anyOf ?? schema.oneOf;
  const parts = (variants ?? schema.allOf ?? []).map((v) => fieldsOf(v, defs));
  const names = [...new Set(parts.flatMap((p) => p.names))];
  const required = variants
    ? new Set(names.filter((n) => parts.every((p) => p.required.has(n))))
    : new Set(parts.flatMap((p) => [...p.required]));
  return { names, required };
}

/**
 * The JSON Schema of what a procedure's input accepts (a part it cannot express, such as a
 * transform, accepts anything); null when zod cannot write one.
 */
export function inputJsonSchema(input: z.ZodType): JsonSchema | null {
  try {
    return z.toJSONSchema(input, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
  } catch {
    return null;
  }
}

/** The input's fields as `name` or `name?` (optional), from its JSON Schema; `(none)` without input. */
function inputFields(inputs: readonly z.ZodType[]): string {
  const fields: string[] = [];
  for (const input of inputs) {
    const schema = inputJsonSchema(input);
    if (!schema) {
      fields.push('(see the code)');
      continue;
    }
    const { names, required } = fieldsOf(schema);
    for (const name of names) fields.push(required.has(name) ? name : `${name}?`);
  }
  return fields.length > 0 ? fields.map((f) => `\`${f}\``).join(', ') : '(none)';
}

function whoMayCall(def: ProcedureDef, path: string): string {
  if (path.startsWith('admin.')) return `operator, role \`${requiredRole(def.meta, def.type)}\` or above`;
  if (def.meta?.scope) return `API key with \`${def.meta.scope}\``;
  return 'anyone';
}

/** One table row per procedure, in the router's order. */
export function procedureRows(appRouter: AnyRouter): string[] {
  const rows: string[] = [];
  for (const [path, procedure] of Object.entries(appRouter._def.procedures)) {
    const def = (procedure as { _def: ProcedureDef })._def;
    const rest = def.meta?.openapi ? `\`${def.meta.openapi.method} ${def.meta.openapi.path}\`` : '';
    rows.push(
      `| \`${path}\` | ${def.type} | ${whoMayCall(def, path)} | ${inputFields(def.inputs)} | ${rest} |`,
    );
  }
  return rows;
}

const INTRO = `# The internal API (tRPC)

Internal tools (the admin CLI, the console, scripts of operations) call the service's one tRPC
router at \`/trpc\` on the service's port. It is the same router that serves merchants: every
merchant procedure below is also a REST route under \`/v1\` (its last column), with the same
validation, errors and idempotency. Types come from the router itself, so a tool written in
TypeScript gets every procedure's input and output checked at compile time.

## The \`AppRouter\` type

\`src/router.ts\` exports the router and its type:

\`\`\`ts
export const appRouter = router({ payouts, outflows, inflows, refunds, banks, rates, refundDestinations, webhooks, admin });
export type AppRouter = typeof appRouter;
\`\`\`

A client is \`@trpc/client\` typed with it (no transformer: inputs and outputs are plain JSON):

\`\`\`ts
import { createTRPCClient, httpLink } from '@trpc/client';
import type { AppRouter } from '#src/router.ts';

const trpc = createTRPCClient<AppRouter>({
  links: [httpLink({ url: 'http://127.0.0.1:3000/trpc', headers: { authorization: \`Bearer \${process.env.OPERATOR_TOKEN}\` } })],
});
const held = await trpc.admin.refunds.held.query({ limit: 20 });
\`\`\`

\`src/cli/admin.ts\` is a complete example.

## Calling it

- **Operators' procedures** (\`admin.*\`) take \`Authorization: Bearer <token>\`: an operator's
  token, or \`ADMIN_TOKEN\` (the root operator, role admin). Each needs a least role (viewer,
  operator, approver, admin: the [operations guide](operations.md#operators-and-roles)); every
  change is recorded in the audit trail with the operator who made it.
- **Merchants' procedures** take \`X-API-Key\` (and \`Idempotency-Key\` on writes) exactly as on
  REST.
- Queries are \`GET /trpc/<procedure>?input=<url-encoded JSON>\`, mutations
  \`POST /trpc/<procedure>\` with the JSON input as the body. A refusal carries the catalogue's
  code in \`error.data.app_code\` ([errors over tRPC](errors.md#errors-over-trpc)).

## From a tool outside this repository

The router's type ships as a package of its own, \`@payout-service/router\`: one \`.d.ts\` that
stands alone (it needs only \`@trpc/server\`, which \`@trpc/client\` brings), so none of the
service's code or dependencies comes with it. \`npm run client:pack\` in the service's checkout
writes it to \`dist/packages/\`, beside the merchant client:

\`\`\`sh
npm install ../payout-service/dist/packages/payout-service-router-<version>.tgz @trpc/client@11
\`\`\`

\`\`\`ts
import type { AppRouter } from '@payout-service/router';
\`\`\`

A \`tsconfig.json\` as \`tsc --init\` writes it is enough (a test installs the package into such a
project, type-checks it and calls the service). Amounts are typed as the JSON numbers they are on
the wire. Build the package from the commit of the service the tool calls: the procedures' inputs
and outputs are the contract between the two, and a tool built against a newer router than the
running service may call a procedure that does not exist there yet (\`ROUTE_NOT_FOUND\`).

Tools in another language use the same HTTP shapes: the merchant procedures' schemas are in
[\`openapi.json\`](openapi.json); an operator procedure's input is the JSON object whose fields
the table below lists, and its output is what the procedure's code returns.

## Every procedure

Generated from the router. Input fields marked \`?\` are optional.

| Procedure | Kind | Who may call | Input | REST route |
|---|---|---|---|---|
`;

export function internalApiMarkdown(appRouter: AnyRouter): string {
  const generatedBy =
    '<!-- Generated from src/router.ts by `npm run docs` (src/docs/internal-api.ts). Do not edit: change the code and run it again. -->';
  return `${generatedBy}\n\n${INTRO}${procedureRows(appRouter).join('\n')}\n`;
}
