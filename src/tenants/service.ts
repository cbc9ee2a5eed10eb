import { type EntityManager, UniqueConstraintViolationException } from '@mikro-orm/postgresql';
import { AppError } from '#src/http/errors.ts';
import type { PayeePolicy } from '#src/payees/name-match.ts';
import { generateApiKey } from './auth.ts';
import { ApiKey, Tenant } from './entities.ts';
import { MERCHANT_SCOPES, type Scope } from './scopes.ts';

/**
 * Creates a tenant. Names are unique ignoring case and surrounding spaces (a unique index, so two
 * creates at once cannot both win): a second one is refused with TENANT_NAME_TAKEN, naming the
 * tenant that has the name.
 */
export async function createTenant(
  em: EntityManager,
  args: { name: string; approved: boolean; payeeNamePolicy?: PayeePolicy },
): Promise<Tenant> {
  const name = args.name.trim();
  const taken = await tenantNamed(em, name);
  if (taken) throw nameTaken(taken);
  const tenant = em.create(Tenant, {
    name,
    payoutsApproved: args.approved,
    payeeNamePolicy: args.payeeNamePolicy ?? 'allow',
  });
  try {
    await em.flush();
  } catch (err) {
    if (!(err instanceof UniqueConstraintViolationException)) throw err;
    // Another create of the same name committed between the look-up and the insert (the
    // transaction is aborted now: nothing more can be read in it).
    throw nameTaken({ id: null, name });
  }
  return tenant;
}

/** The tenant whose name equals `name` ignoring case and surrounding spaces, as the unique index compares. */
async function tenantNamed(em: EntityManager, name: string): Promise<{ id: string; name: string } | null> {
  const [row] = await em.execute<{ id: string; name: string }[]>(
    'select id, name from tenants where lower(btrim(name)) = lower(btrim(?)) limit 1',
    [name],
  );
  return row ?? null;
}

function nameTaken(existing: { id: string | null; name: string }): AppError {
  return new AppError('TENANT_NAME_TAKEN', {
    message: `A tenant named "${existing.name}" exists already: choose another name.`,
    details: [{ field: 'name', issue: `is taken by tenant ${existing.id ?? existing.name}` }],
  });
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
