import type { EntityManager } from '@mikro-orm/postgresql';
import { constantTimeEqual, randomToken, sha256Hex } from '#src/lib/crypto.ts';
import { ApiKey, type Tenant } from './entities.ts';

/** What an authenticated merchant request carries. */
export interface Principal {
  tenant: Tenant;
  keyId: string;
  scopes: ReadonlySet<string>;
}

const KEY_PREFIX = 'sk_';
const KEY_BYTES = 32;
/** Characters of the key kept in clear as its visible prefix (`sk_` plus 8). */
const VISIBLE_PREFIX = KEY_PREFIX.length + 8;

/** A new API key: 256 random bits. The caller shows `plaintext` once and stores only the rest. */
export function generateApiKey(): { plaintext: string; prefix: string; hash: string } {
  const plaintext = `${KEY_PREFIX}${randomToken(KEY_BYTES)}`;
  return { plaintext, prefix: plaintext.slice(0, VISIBLE_PREFIX), hash: sha256Hex(plaintext) };
}

/** The principal behind an X-API-Key value, or null for a missing, unknown or revoked key. */
export async function authenticateApiKey(
  em: EntityManager,
  presented: string | undefined,
): Promise<Principal | null> {
  if (typeof presented !== 'string' || presented.length > 128 || !presented.startsWith(KEY_PREFIX))
    return null;
  const key = await em.findOne(
    ApiKey,
    { hash: sha256Hex(presented), revokedAt: null },
    { populate: ['tenant'] },
  );
  if (!key) return null;
  return { tenant: key.tenant, keyId: key.id, scopes: new Set(key.scopes) };
}

/** Checks an `Authorization: Bearer` header against the admin token in constant time. */
export function isAdminAuthorized(header: string | undefined, adminToken: string): boolean {
  const match = /^Bearer (.+)$/.exec(header ?? '');
  return match?.[1] !== undefined && constantTimeEqual(match[1], adminToken);
}
