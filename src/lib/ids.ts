import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

// Random bytes are drawn from the CSPRNG 4 KiB at a time rather than with a call per id (each
// call is a system call; a create makes several ids). Every byte is used once.
const pool = Buffer.allocUnsafe(4096);
let poolAt = pool.length;
const clockState = { msecs: Number.NEGATIVE_INFINITY, seq: 0 };

function random16(): Buffer {
  if (poolAt + 16 > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  poolAt += 16;
  return pool.subarray(poolAt - 16, poolAt);
}

/**
 * Time-ordered UUID (v7): ids sort by creation time, which keeps primary-key indexes compact, and
 * ids made in the same millisecond still increase (a counter seeded at random, as uuid's own v7).
 */
export function newId(): string {
  const random = random16();
  const now = Date.now();
  if (now > clockState.msecs) {
    clockState.msecs = now;
    clockState.seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    clockState.seq = (clockState.seq + 1) | 0;
    if (clockState.seq === 0) clockState.msecs++;
  }
  return v7({ random, msecs: clockState.msecs, seq: clockState.seq });
}

/**
 * A request id: `req_` and 32 hex digits, the millisecond it was made (12 digits, so ids sort by
 * time) and 80 random bits. Made for every request, without the UUID's formatting.
 */
export function newRequestId(): string {
  return `req_${Date.now().toString(16).padStart(12, '0')}${random16().toString('hex', 0, 10)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for any well-formed UUID; ids in paths are checked with it before touching the database. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

export const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

export function isUuidV4(value: string): boolean {
  return UUID_V4.test(value);
}

/**
 * The smallest UUID v7 of the millisecond `at`: every id made before `at` sorts below it. A
 * range of the primary key up to it is a range of creation times, read through the index every
 * table already has.
 */
export function uuidV7Floor(at: Date): string {
  const hex = Math.max(0, Math.floor(at.getTime())).toString(16).padStart(12, '0').slice(-12);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-7000-8000-000000000000`;
}
