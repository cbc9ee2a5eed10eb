import { type Sql, statement } from '#src/db/sql.ts';
import { constantTimeEqual, randomToken, sha256Hex } from '#src/lib/crypto.ts';
import { ROOT_OPERATOR_ID, ROOT_OPERATOR_NAME } from './entities.ts';
import type { Role } from './roles.ts';

/** Who is calling `admin.*`: the operator behind the bearer token. */
export interface OperatorIdentity {
  id: string;
  name: string;
  role: Role;
}

/** The bootstrap operator, behind ADMIN_TOKEN. */
export const ROOT_OPERATOR: OperatorIdentity = Object.freeze({
  id: ROOT_OPERATOR_ID,
  name: ROOT_OPERATOR_NAME,
  role: 'admin',
});

const TOKEN_PREFIX = 'op_';
const TOKEN_BYTES = 32;
/** Characters of a token kept in clear as its visible prefix (`op_` plus 8). */
const VISIBLE_PREFIX = TOKEN_PREFIX.length + 8;

/** A new operator token: 256 random bits. The caller shows `plaintext` once and stores only the rest. */
export function generateOperatorToken(): { plaintext: string; prefix: string; hash: string } {
  const plaintext = `${TOKEN_PREFIX}${randomToken(TOKEN_BYTES)}`;
  return { plaintext, prefix: plaintext.slice(0, VISIBLE_PREFIX), hash: sha256Hex(plaintext) };
}

const operatorByHash = statement(
  'operator_by_token',
  `select id, name, role from operators where token_hash = $1 and revoked_at is null`,
);

/**
 * The operator behind an `Authorization: Bearer` header: root for ADMIN_TOKEN (compared in
 * constant time), an operator whose token it is and who is not revoked, or null. The one check
 * of operator tokens: `admin.*` and anything else guarded by them (metrics) use it.
 */
export async function operatorOfBearer(
  sql: Sql,
  header: string | undefined,
  adminToken: string,
): Promise<OperatorIdentity | null> {
  const token = /^Bearer (\S+)$/.exec(header ?? '')?.[1];
  if (token === undefined || token.length > 256) return null;
  if (constantTimeEqual(token, adminToken)) return ROOT_OPERATOR;
  if (!token.startsWith(TOKEN_PREFIX)) return null;
  // The lookup is by hash: a token's bytes never meet a comparison that could leak them.
  const [row] = await sql.rows<OperatorIdentity>(operatorByHash, [sha256Hex(token)]);
  return row ?? null;
}
