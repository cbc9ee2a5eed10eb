import { type Sql, statement } from '#src/db/sql.ts';
import { AppError } from '#src/http/errors.ts';
import { decryptSecret, encryptSecret, sha256Hex } from '#src/lib/crypto.ts';
import { newId } from '#src/lib/ids.ts';
import type { StoredResponse } from '#src/tenants/auth.ts';

/**
 * Idempotency for every write. A key is written once, with the exact response, by the very
 * transaction that makes the write: the key exists if and only if the write committed.
 *
 * 1. Authentication reads the response already stored under the key (same round trip). If there
 *    is one, the request is answered with it (same fingerprint) or refused (422), and nothing runs.
 * 2. Otherwise the handler does its work: outbound calls first (read-only ones: directory, DNS,
 *    rates, name enquiry), then its write transaction, which ends by inserting the key with the
 *    response (`storeResponse`, or the handler's own statement on the hot path).
 * 3. A request with the same key that committed first makes that insert conflict: the write rolls
 *    back and the request is answered with the stored response instead ({@link KeyTaken}). Two
 *    concurrent requests with one key thus make one write, and both get its response; a request
 *    that fails stores nothing, so its key stays free for the retry.
 * 4. A write transaction that does more than insert (uses a quote, replaces a destination) first
 *    claims the key ({@link claimKey}): it waits for any other transaction of the same key to end
 *    and gives way if that one stored a response. Otherwise the overlapping request would run its
 *    checks against what the winner just wrote (a quote now USED) and refuse, where it must
 *    answer with the winner's response.
 *
 * Stored responses are sealed with AES-256-GCM (`responseKey`): they hold account numbers and,
 * for webhook configuration, signing secrets shown once, which must not sit in clear at rest.
 */

/** Stable JSON: object keys sorted at every depth, so that key order never changes a fingerprint. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  // Keys in code-unit order (sort's own), each appended in place: every request's fingerprint runs this.
  let out = '';
  for (const key of Object.keys(record).sort()) {
    const field = record[key];
    if (field === undefined) continue;
    out += `${out === '' ? '' : ','}${JSON.stringify(key)}:${canonicalJson(field)}`;
  }
  return `{${out}}`;
}

/** Fingerprint of a write: which operation, with which input. */
export function requestFingerprint(operation: string, input: unknown): string {
  return sha256Hex(`${operation}\n${canonicalJson(input)}`);
}

/** What a write stores with its response, and how a handler that writes the key itself gets it. */
export interface IdempotentWrite {
  tenantId: string;
  /** The Idempotency-Key, lower-cased. */
  key: string;
  fingerprint: string;
  /** HTTP status of the response. */
  status: number;
  /** The response body as stored: sealed. */
  seal(body: string): string;
}

/**
 * Thrown inside a write transaction whose key turned out to be taken by a request that committed
 * first: the transaction rolls back and the middleware answers with the stored response.
 */
export class KeyTaken extends Error {
  override name = 'KeyTaken';
  constructor() {
    super('the Idempotency-Key was used by a request that committed first');
  }
}

/**
 * The response to answer a repeated request with: the stored status and bytes when the request is
 * the same as the first, else 422 IDEMPOTENCY_KEY_REUSED.
 */
export function replayOf(
  stored: StoredResponse,
  fingerprint: string,
  responseKey: Buffer,
): { status: number; body: string } {
  if (stored.fingerprint !== fingerprint) throw new AppError('IDEMPOTENCY_KEY_REUSED');
  return { status: stored.status, body: decryptSecret(responseKey, stored.sealedBody) };
}

/** Seals a response body for storage. */
export function sealResponse(responseKey: Buffer, body: string): string {
  return encryptSecret(responseKey, body);
}

const insertKey = statement(
  'idempotency_insert',
  `insert into idempotency_keys (id, tenant_id, key, fingerprint, response_status, response_body, created_at, updated_at)
   values ($1, $2, $3, $4, $5, $6, $7, $7)
   on conflict (tenant_id, key) do nothing
   returning id`,
);

/**
 * Stores the response of `write` inside the caller's write transaction. Throws {@link KeyTaken}
 * when another request stored one first (after waiting for it to commit or roll back, which the
 * unique index does), so that the caller's transaction rolls back.
 */
export async function storeResponse(
  tx: Sql,
  write: IdempotentWrite,
  args: { body: string; now: Date },
): Promise<void> {
  const inserted = await tx.rows(insertKey, [
    newId(),
    write.tenantId,
    write.key,
    write.fingerprint,
    write.status,
    write.seal(args.body),
    args.now,
  ]);
  if (inserted.length === 0) throw new KeyTaken();
}

const lockKey = statement(
  'idempotency_lock',
  `select pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 0))`,
);

/**
 * Called first in a write transaction: holds the key until the transaction ends (a transaction
 * lock, so a crash or a rollback frees it), after waiting for any other transaction holding it.
 * Throws {@link KeyTaken} when the key has a stored response by then.
 */
export async function claimKey(tx: Sql, write: Pick<IdempotentWrite, 'tenantId' | 'key'>): Promise<void> {
  await tx.rows(lockKey, [write.tenantId, write.key]);
  if (await findStoredResponse(tx, write)) throw new KeyTaken();
}

const findKey = statement(
  'idempotency_find',
  `select fingerprint, response_status, response_body from idempotency_keys where tenant_id = $1 and key = $2`,
);

/** The response stored under a key, or null when none is. */
export async function findStoredResponse(
  sql: Sql,
  args: { tenantId: string; key: string },
): Promise<StoredResponse | null> {
  const [row] = await sql.rows<{ fingerprint: string; response_status: number; response_body: string }>(
    findKey,
    [args.tenantId, args.key],
  );
  return row
    ? { fingerprint: row.fingerprint, status: row.response_status, sealedBody: row.response_body }
    : null;
}
