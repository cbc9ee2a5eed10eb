import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from './config.ts';
import { type Sql, statement } from './db/sql.ts';
import type { Secrets } from './deps.ts';
import { sha256Hex } from './lib/crypto.ts';
import { newId } from './lib/ids.ts';
import { ROOT_OPERATOR_ID } from './operators/entities.ts';
import { createOperator } from './operators/service.ts';
import { authenticateApiKey } from './tenants/auth.ts';
import { issueApiKey } from './tenants/service.ts';

/**
 * What `npm start` sets up and prints for a new user: the demo tenant (only when `DEMO_TENANT` is
 * on, by default only in the zero-configuration setup) and the start-up banner. Everything the
 * demo adds lives here, so that production configuration, which turns it off, never runs it.
 */

export interface DemoTenant {
  tenantId: string;
  apiKey: string;
  /** The token of the demo's second operator, an approver: four eyes need two people. */
  approverToken?: string;
}

const DEMO_FILE = 'demo-tenant.json';

/**
 * The demo tenant (approved, every scope) and a key for it. The key is kept in DATA_DIR (local
 * development only), so that a second start prints the same key. A database holds at most one
 * demo tenant (a unique index on `is_demo`): instances starting at once against one database
 * share it, and an instance that has no key of its own for it (another DATA_DIR) issues one.
 */
export async function ensureDemoTenant(
  em: EntityManager,
  sql: Sql,
  args: { dataDir: string; now: Date },
): Promise<DemoTenant> {
  const file = path.join(args.dataDir, DEMO_FILE);
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { tenant_id: string; api_key: string };
    const found = await authenticateApiKey(sql, saved.api_key);
    if (found?.principal.tenant.id === saved.tenant_id)
      return { tenantId: saved.tenant_id, apiKey: saved.api_key };
  }
  const tenantId = await demoTenantId(em, args.now);
  const { plaintext } = await issueApiKey(em, { tenantId });
  writeFileSync(file, `${JSON.stringify({ tenant_id: tenantId, api_key: plaintext }, null, 2)}\n`, {
    mode: 0o600,
  });
  return { tenantId, apiKey: plaintext };
}

const APPROVER_FILE = 'demo-approver.json';

const activeOperatorByHash = statement(
  'demo_approver_active',
  'select id from operators where token_hash = $1 and revoked_at is null',
);

/**
 * The demo's second operator, with the role approver, so that a money move proposed with the
 * admin token can be approved (four eyes are on in the demo too). Its token is kept in DATA_DIR
 * beside the demo key; an instance without it (another DATA_DIR) makes an approver of its own.
 */
export async function ensureDemoApprover(
  em: EntityManager,
  sql: Sql,
  args: { dataDir: string },
): Promise<string> {
  const file = path.join(args.dataDir, APPROVER_FILE);
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { token: string };
    const [active] = await sql.rows<{ id: string }>(activeOperatorByHash, [sha256Hex(saved.token)]);
    if (active) return saved.token;
  }
  const { operator, token } = await createOperator(em, {
    name: `demo approver ${newId().slice(-6)}`,
    role: 'approver',
    createdBy: ROOT_OPERATOR_ID,
  });
  writeFileSync(file, `${JSON.stringify({ operator_id: operator.id, token }, null, 2)}\n`, { mode: 0o600 });
  return token;
}

/** The database's demo tenant, created by whichever instance gets there first. */
async function demoTenantId(em: EntityManager, now: Date): Promise<string> {
  // A concurrent insert waits for the first to commit, then inserts nothing; the select that
  // follows (a statement of its own) sees the winner's row. No conflict target: the winner's row
  // also holds the name (tenant names are unique), which must not fail the loser either.
  const [created] = await em.execute<{ id: string }[]>(
    `insert into tenants (id, name, payouts_approved, is_demo, created_at, updated_at)
     values (?, 'Demo Merchant', true, true, ?, ?)
     on conflict do nothing
     returning id`,
    [newId(), now, now],
  );
  if (created) return created.id;
  const [existing] = await em.execute<{ id: string }[]>('select id from tenants where is_demo');
  if (!existing)
    throw new Error('no demo tenant: a tenant that is not the demo one is named "Demo Merchant" already');
  return existing.id;
}

/**
 * The lines `npm start` prints. Never a secret that came from the environment (ADMIN_TOKEN, the
 * credentials of a URL); generated secrets only in the demo setup: in production stdout ends up
 * in log storage.
 */
export function startupBanner(args: {
  config: Config;
  serviceUrl: string;
  providersUrl: string;
  secrets: Pick<Secrets, 'adminToken'>;
  demo: DemoTenant | null;
}): string {
  const { config, serviceUrl, demo } = args;
  const adminTokenFile = path.resolve(config.DATA_DIR, 'admin-token');
  const adminToken = config.ADMIN_TOKEN
    ? 'from ADMIN_TOKEN (not shown)'
    : demo
      ? args.secrets.adminToken
      : `generated, in ${adminTokenFile} (not shown)`;
  const lines = [
    '',
    `  Payout service  ${serviceUrl}`,
    config.PROVIDERS_URL
      ? `  Providers       ${withoutCredentials(args.providersUrl)} (PROVIDERS_URL)`
      : `  Sandbox         ${args.providersUrl}`,
    `  Database        ${config.DATABASE_URL ? 'DATABASE_URL' : `embedded PostgreSQL in ${path.resolve(config.DATA_DIR, 'pgdata')}`}`,
    `  Background jobs ${config.JOBS.length > 0 ? config.JOBS.join(', ') : 'none (JOBS=none)'}`,
    '',
  ];
  if (demo) lines.push(`  Demo API key    ${demo.apiKey}`);
  lines.push(`  Admin token     ${adminToken}`);
  if (demo?.approverToken) {
    lines.push(
      `  Approver token  ${demo.approverToken}`,
      '                  a second operator: money moves proposed with the admin token need its approval',
      `                  OPERATOR_TOKEN=${demo.approverToken} npm run -s admin -- approval approve APPROVAL_ID`,
    );
  }
  lines.push(
    `  API reference   ${serviceUrl}/docs   (state diagrams: ${serviceUrl}/docs/machines)`,
    `  Console         ${serviceUrl}/console   (operators: sign in with the admin token)`,
    '',
  );
  if (demo) {
    lines.push(
      `  Try: curl -H "X-API-Key: ${demo.apiKey}" "${serviceUrl}/v1/banks?country=NG&currency=NGN&destination_type=BANK_ACCOUNT"`,
    );
  } else {
    lines.push(
      '  No demo tenant (DEMO_TENANT is off). Create tenants and keys with the admin CLI:',
      '    npm run -s admin -- tenant create --name NAME --approved',
    );
  }
  lines.push('');
  return lines.join('\n');
}

/** A URL as it may be shown: no user name, password or query string. */
function withoutCredentials(raw: string): string {
  const url = URL.parse(raw);
  if (!url) return '(not shown)';
  return `${url.protocol}//${url.host}${url.pathname === '/' ? '' : url.pathname}`;
}
