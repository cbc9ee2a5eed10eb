import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '#src/http/errors.ts';
import { decryptSecret, encryptSecret, sha256Hex } from '#src/lib/crypto.ts';
import { newId } from '#src/lib/ids.ts';

/**
 * Idempotency for every write, in three steps:
 *
 * 1. `claim` (its own short transaction, committed at once): insert the key as IN_PROGRESS, or
 *    find it. A completed key with the same fingerprint replays the stored response; with a
 *    different fingerprint it is refused (422); a live claim by another request is a 409.
 * 2. The handler does its work; outbound calls happen here, outside any transaction.
 * 3. `complete` runs inside the handler's write transaction and stores the exact response, so the
 *    key becomes COMPLETE if and only if the write commits. If the handler fails, `release`
 *    deletes the claim: nothing was written, so the key stays free.
 *
 * A claim whose holder died (its `locked_until` passed) may be taken over: the write and the
 * completion are atomic, so a dead holder cannot have written anything.
 *
 * Stored responses are sealed with AES-256-GCM (`responseKey`): they hold account numbers and,
 * for webhook configuration, signing secrets shown once, which must not sit in clear at rest.
 */

export type ClaimResult =
  | { kind: 'claimed'; recordId: string; claimToken: string }
  | { kind: 'replay'; status: number; body: string };

/** Stable JSON: object keys sorted at every depth, so that key order never changes a fingerprint. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
}

/** Fingerprint of a write: which operation, with which input. */
export function requestFingerprint(operation: string, input: unknown): string {
  return sha256Hex(`${operation}\n${canonicalJson(input)}`);
}

interface Row {
  id: string;
  fingerprint: string;
  state: 'IN_PROGRESS' | 'COMPLETE';
  locked_until: Date | string | null;
  response_status: number | null;
  response_body: string | null;
}

export async function claim(
  em: EntityManager,
  args: {
    tenantId: string;
    key: string;
    fingerprint: string;
    now: Date;
    lockMs: number;
    responseKey: Buffer;
  },
): Promise<ClaimResult> {
  const claimToken = randomUUID();
  const lockedUntil = new Date(args.now.getTime() + args.lockMs);
  const inserted = await em.execute<{ id: string }[]>(
    `insert into idempotency_keys (id, tenant_id, key, fingerprint, state, claim_token, locked_until, created_at, updated_at)
     values (?, ?, ?, ?, 'IN_PROGRESS', ?, ?, ?, ?)
     on conflict (tenant_id, key) do nothing
     returning id`,
    [newId(), args.tenantId, args.key, args.fingerprint, claimToken, lockedUntil, args.now, args.now],
  );
  if (inserted[0]) return { kind: 'claimed', recordId: inserted[0].id, claimToken };

  const [existing] = await em.execute<Row[]>(
    `select id, fingerprint, state, locked_until, response_status, response_body
       from idempotency_keys where tenant_id = ? and key = ?`,
    [args.tenantId, args.key],
  );
  // Released between our insert and our read: the key is free again, so try once more.
  if (!existing) return claim(em, args);
  if (existing.state === 'COMPLETE') {
    if (existing.fingerprint !== args.fingerprint) throw new AppError('IDEMPOTENCY_KEY_REUSED');
    const body = existing.response_body ? decryptSecret(args.responseKey, existing.response_body) : '';
    return { kind: 'replay', status: existing.response_status ?? 200, body };
  }
  // Raw queries may hand timestamps back as strings, depending on the driver behind the socket.
  if (existing.locked_until && new Date(existing.locked_until) > args.now) {
    throw new AppError('IDEMPOTENCY_REQUEST_IN_PROGRESS', { headers: { 'Retry-After': '1' } });
  }
  const taken = await em.execute<{ id: string }[]>(
    `update idempotency_keys
        set fingerprint = ?, claim_token = ?, locked_until = ?, updated_at = ?
      where id = ? and state = 'IN_PROGRESS' and locked_until = ?
      returning id`,
    [args.fingerprint, claimToken, lockedUntil, args.now, existing.id, existing.locked_until],
  );
  if (!taken[0]) throw new AppError('IDEMPOTENCY_REQUEST_IN_PROGRESS', { headers: { 'Retry-After': '1' } });
  return { kind: 'claimed', recordId: existing.id, claimToken };
}

/**
 * Marks the claim COMPLETE with the response, inside the caller's write transaction. Fails the
 * transaction if the claim was lost (taken over after expiry), so a write never commits twice.
 */
export async function complete(
  em: EntityManager,
  args: {
    recordId: string;
    claimToken: string;
    status: number;
    body: string;
    now: Date;
    responseKey: Buffer;
  },
): Promise<void> {
  const updated = await em.execute<{ id: string }[]>(
    `update idempotency_keys
        set state = 'COMPLETE', response_status = ?, response_body = ?, claim_token = null, locked_until = null, updated_at = ?
      where id = ? and claim_token = ? and state = 'IN_PROGRESS'
      returning id`,
    [args.status, encryptSecret(args.responseKey, args.body), args.now, args.recordId, args.claimToken],
  );
  if (!updated[0]) throw new AppError('IDEMPOTENCY_REQUEST_IN_PROGRESS', { headers: { 'Retry-After': '1' } });
}

/** Frees a claim whose request failed; nothing was written under it. */
export async function release(
  em: EntityManager,
  args: { recordId: string; claimToken: string },
): Promise<void> {
  await em.execute(
    `delete from idempotency_keys where id = ? and claim_token = ? and state = 'IN_PROGRESS'`,
    [args.recordId, args.claimToken],
  );
}
