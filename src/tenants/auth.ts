import { type Sql, statement } from '#src/db/sql.ts';
import { randomToken, sha256Hex } from '#src/lib/crypto.ts';
import type { PayeePolicy } from '#src/payees/name-match.ts';

/** The tenant behind a request, as authentication reads it. */
export interface TenantInfo {
  id: string;
  name: string;
  payoutsApproved: boolean;
  /** What a payout whose payee name does not match becomes (src/payees). */
  payeeNamePolicy: PayeePolicy;
}

/** What an authenticated merchant request carries. */
export interface Principal {
  tenant: TenantInfo;
  keyId: string;
  scopes: ReadonlySet<string>;
}

/** A response stored under an Idempotency-Key: what a repeated request is answered with. */
export interface StoredResponse {
  fingerprint: string;
  status: number;
  /** The body, sealed (AES-256-GCM with the idempotency key). */
  sealedBody: string;
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

// One round trip per request: the key, its tenant and, for a write, the response already stored
// under the request's Idempotency-Key (a replay then costs nothing more).
const authenticateStatement = statement(
  'authenticate',
  `select k.id as key_id, k.scopes, t.id as tenant_id, t.name as tenant_name, t.payouts_approved,
          t.payee_name_policy, i.fingerprint, i.response_status, i.response_body
     from api_keys k
     join tenants t on t.id = k.tenant_id
     left join idempotency_keys i on i.tenant_id = k.tenant_id and i.key = $2::uuid
    where k.hash = $1 and k.revoked_at is null`,
);

interface AuthenticateRow {
  key_id: string;
  scopes: string[];
  tenant_id: string;
  tenant_name: string;
  payouts_approved: boolean;
  payee_name_policy: PayeePolicy;
  fingerprint: string | null;
  response_status: number | null;
  response_body: string | null;
}

/**
 * The principal behind an X-API-Key value, or null for a missing, unknown or revoked key; with
 * `idempotencyKey` (a well-formed UUID), also the response stored under it for this tenant.
 */
export async function authenticateApiKey(
  sql: Sql,
  presented: string | undefined,
  idempotencyKey: string | null = null,
): Promise<{ principal: Principal; stored: StoredResponse | null } | null> {
  if (typeof presented !== 'string' || presented.length > 128 || !presented.startsWith(KEY_PREFIX))
    return null;
  const [row] = await sql.rows<AuthenticateRow>(authenticateStatement, [
    sha256Hex(presented),
    idempotencyKey,
  ]);
  if (!row) return null;
  return {
    principal: {
      tenant: {
        id: row.tenant_id,
        name: row.tenant_name,
        payoutsApproved: row.payouts_approved,
        payeeNamePolicy: row.payee_name_policy,
      },
      keyId: row.key_id,
      scopes: new Set(row.scopes),
    },
    stored:
      row.fingerprint !== null && row.response_status !== null && row.response_body !== null
        ? { fingerprint: row.fingerprint, status: row.response_status, sealedBody: row.response_body }
        : null,
  };
}
