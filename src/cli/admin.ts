/**
 * The admin CLI: `npm run -s admin -- <command>`. Talks to the running service over tRPC
 * (`admin.*` procedures at SERVICE_URL/trpc) with ADMIN_TOKEN, and prints one JSON object per
 * command on stdout. Errors go to stderr as JSON with a non-zero exit.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createTRPCClient, httpLink, TRPCClientError } from '@trpc/client';
import type { AppRouter } from '#src/router.ts';
import { isScope, type Scope } from '#src/tenants/scopes.ts';

const USAGE = `usage: npm run -s admin -- <command>
  tenant create --name NAME [--approved]
  tenant approve TENANT_ID
  tenant list
  key issue --tenant TENANT_ID [--scopes s1,s2]
  key revoke KEY_ID
  refund list-failed [--limit N]
  refund held [--limit N]
  refund retry REFUND_ID
  refund raise PAYOUT_ID
  webhooks dead [--tenant TENANT_ID] [--limit N] [--cursor CURSOR]
  inflow list [--tenant TENANT_ID] [--state HELD|UNMATCHED] [--limit N]
  inflow attribute INFLOW_ID --payout PAYOUT_ID [--note TEXT]
  inflow return INFLOW_ID --note TEXT
  payout fail PAYOUT_ID [--note TEXT]

environment: SERVICE_URL (default http://127.0.0.1:3000), ADMIN_TOKEN (default: DATA_DIR/admin-token of a local start)`;

class UsageError extends Error {}

function adminToken(): string {
  if (process.env.ADMIN_TOKEN) return process.env.ADMIN_TOKEN;
  const file = path.join(process.env.DATA_DIR ?? './.data', 'admin-token');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  throw new UsageError('ADMIN_TOKEN is not set and no local admin-token file was found');
}

/** A `--limit` value for the list commands (default 100). */
function limitOf(value: string | undefined): number {
  if (value === undefined) return 100;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 500)
    throw new UsageError('--limit must be an integer from 1 to 500');
  return n;
}

/** Runs one CLI command and returns the object to print. */
export async function run(argv: string[], env: { serviceUrl: string; token: string }): Promise<unknown> {
  const client = createTRPCClient<AppRouter>({
    links: [
      httpLink({
        url: `${env.serviceUrl.replace(/\/$/, '')}/trpc`,
        headers: { authorization: `Bearer ${env.token}` },
      }),
    ],
  });
  const [noun, verb, ...rest] = argv;
  const { values, positionals } = parseArgs({
    args: rest,
    allowPositionals: true,
    options: {
      name: { type: 'string' },
      approved: { type: 'boolean', default: false },
      tenant: { type: 'string' },
      scopes: { type: 'string' },
      limit: { type: 'string' },
      cursor: { type: 'string' },
      payout: { type: 'string' },
      note: { type: 'string' },
      state: { type: 'string' },
    },
  });
  const one = (what: string): string => {
    const value = positionals[0];
    if (!value || positionals.length > 1) throw new UsageError(`expected exactly one ${what}`);
    return value;
  };
  switch (`${noun} ${verb}`) {
    case 'tenant create':
      if (!values.name) throw new UsageError('tenant create needs --name');
      return client.admin.tenant.create.mutate({ name: values.name, approved: values.approved });
    case 'tenant approve':
      return client.admin.tenant.approve.mutate({ tenant_id: one('TENANT_ID') });
    case 'tenant list':
      return client.admin.tenant.list.query();
    case 'key issue': {
      if (!values.tenant) throw new UsageError('key issue needs --tenant');
      let scopes: Scope[] | undefined;
      if (values.scopes) {
        const list = values.scopes
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean);
        const unknown = list.filter((s) => !isScope(s));
        if (unknown.length > 0) throw new UsageError(`unknown scope(s): ${unknown.join(', ')}`);
        scopes = list as Scope[];
      }
      const issued = await client.admin.key.issue.mutate({ tenant_id: values.tenant, scopes });
      return { id: issued.id, api_key: issued.api_key, scopes: issued.scopes };
    }
    case 'key revoke':
      return client.admin.key.revoke.mutate({ key_id: one('KEY_ID') });
    case 'refund list-failed':
      return client.admin.refunds.failed.query({ limit: limitOf(values.limit) });
    case 'refund held':
      return client.admin.refunds.held.query({ limit: limitOf(values.limit) });
    case 'refund retry':
      return client.admin.refunds.retry.mutate({ refund_id: one('REFUND_ID') });
    case 'refund raise':
      return client.admin.refunds.raise.mutate({ payout_id: one('PAYOUT_ID') });
    case 'webhooks dead': {
      const limit = values.limit === undefined ? undefined : Number(values.limit);
      if (limit !== undefined && !(Number.isInteger(limit) && limit >= 1 && limit <= 100))
        throw new UsageError('--limit must be an integer from 1 to 100');
      return client.admin.webhooks.dead.query({ tenant_id: values.tenant, limit, cursor: values.cursor });
    }
    case 'inflow list':
      if (values.state !== undefined && values.state !== 'HELD' && values.state !== 'UNMATCHED')
        throw new UsageError('--state must be HELD or UNMATCHED');
      return client.admin.settlement.inflows.query({
        tenant_id: values.tenant,
        state: values.state,
        limit: limitOf(values.limit),
      });
    case 'inflow attribute':
      if (!values.payout) throw new UsageError('inflow attribute needs --payout');
      return client.admin.settlement.attribute.mutate({
        inflow_id: one('INFLOW_ID'),
        payout_id: values.payout,
        note: values.note,
      });
    case 'inflow return':
      if (!values.note) throw new UsageError('inflow return needs --note');
      return client.admin.settlement.returnInflow.mutate({ inflow_id: one('INFLOW_ID'), note: values.note });
    case 'payout fail':
      return client.admin.settlement.failPayout.mutate({ payout_id: one('PAYOUT_ID'), note: values.note });
    default:
      throw new UsageError(`unknown command: ${[noun, verb].filter(Boolean).join(' ') || '(none)'}`);
  }
}

if (import.meta.main) {
  try {
    const result = await run(process.argv.slice(2), {
      serviceUrl: process.env.SERVICE_URL ?? 'http://127.0.0.1:3000',
      token: adminToken(),
    });
    process.stdout.write(`${JSON.stringify(result)}\n`);
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(
        `${JSON.stringify({ error: { code: 'USAGE', message: err.message } })}\n${USAGE}\n`,
      );
      process.exit(2);
    }
    if (err instanceof TRPCClientError) {
      const data = err.data as { app_code?: string; details?: unknown } | undefined;
      process.stderr.write(
        `${JSON.stringify({ error: { code: data?.app_code ?? 'ERROR', message: err.message, details: data?.details ?? [] } })}\n`,
      );
      process.exit(1);
    }
    process.stderr.write(
      `${JSON.stringify({ error: { code: 'CONNECTION_FAILED', message: (err as Error).message } })}\n`,
    );
    process.exit(1);
  }
}
