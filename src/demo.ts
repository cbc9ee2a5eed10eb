import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Sql } from './db/sql.ts';
import { authenticateApiKey } from './tenants/auth.ts';
import { createTenant, issueApiKey } from './tenants/service.ts';

/**
 * The demo tenant of a local start: approved, every scope. Its key is kept in DATA_DIR (local
 * development only) so that a second start prints the same key.
 */
export async function ensureDemoTenant(
  em: EntityManager,
  sql: Sql,
  dataDir: string,
): Promise<{ tenantId: string; apiKey: string }> {
  const file = path.join(dataDir, 'demo-tenant.json');
  if (existsSync(file)) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as { tenant_id: string; api_key: string };
    if (await authenticateApiKey(sql, saved.api_key))
      return { tenantId: saved.tenant_id, apiKey: saved.api_key };
  }
  const tenant = await createTenant(em, { name: 'Demo Merchant', approved: true });
  const { plaintext } = await issueApiKey(em, { tenantId: tenant.id });
  writeFileSync(file, `${JSON.stringify({ tenant_id: tenant.id, api_key: plaintext }, null, 2)}\n`, {
    mode: 0o600,
  });
  return { tenantId: tenant.id, apiKey: plaintext };
}
