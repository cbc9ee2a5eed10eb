import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '#src/http/errors.ts';
import type { PayeePolicy } from '#src/payees/name-match.ts';
import { generateApiKey } from './auth.ts';
import { ApiKey, Tenant } from './entities.ts';
import { MERCHANT_SCOPES, type Scope } from './scopes.ts';

export async function createTenant(
  em: EntityManager,
  args: { name: string; approved: boolean; payeeNamePolicy?: PayeePolicy },
): Promise<Tenant> {
  const tenant = em.create(Tenant, {
    name: args.name,
    payoutsApproved: args.approved,
    payeeNamePolicy: args.payeeNamePolicy ?? 'allow',
  });
  await em.flush();
  return tenant;
}

export async function approveTenant(em: EntityManager, tenantId: string): Promise<Tenant> {
  const tenant = await em.findOne(Tenant, tenantId);
  if (!tenant) throw new AppError('NOT_FOUND', { message: 'No tenant with that id.' });
  tenant.payoutsApproved = true;
  await em.flush();
  return tenant;
}

/** Issues a key; the plaintext is returned here and never again. */
export async function issueApiKey(
  em: EntityManager,
  args: { tenantId: string; scopes?: readonly Scope[] },
): Promise<{ key: ApiKey; plaintext: string }> {
  const tenant = await em.findOne(Tenant, args.tenantId);
  if (!tenant) throw new AppError('NOT_FOUND', { message: 'No tenant with that id.' });
  const generated = generateApiKey();
  const key = em.create(ApiKey, {
    tenant,
    prefix: generated.prefix,
    hash: generated.hash,
    scopes: [...new Set(args.scopes ?? MERCHANT_SCOPES)],
  });
  await em.flush();
  return { key, plaintext: generated.plaintext };
}

export async function revokeApiKey(em: EntityManager, keyId: string, now: Date): Promise<ApiKey> {
  const key = await em.findOne(ApiKey, keyId);
  if (!key) throw new AppError('NOT_FOUND', { message: 'No API key with that id.' });
  key.revokedAt ??= now;
  await em.flush();
  return key;
}
