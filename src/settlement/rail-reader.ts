import { type Sql, statement } from '#src/db/sql.ts';
import type { Deps } from '#src/deps.ts';
import { newId } from '#src/lib/ids.ts';
import type { RailSource } from './entities.ts';

/**
 * Reading a rail from a persisted cursor, the one way settlement pulls what reached the
 * service's accounts: a chain's transfers (`chain-scan.ts`) and the bank's statement of credits
 * (`bank-statement.ts`). The rail's cursor row is leased (a token and an expiry, set in a short
 * transaction, SKIP LOCKED), so that two instances never read one rail at once and no transaction
 * stays open while the rail is asked; each page's records are saved with the new cursor in one
 * transaction that first checks the lease is still ours. A crash mid-way re-reads the page once
 * the lease lapses; the unique (rail, external_ref) index of inflows makes the re-read record
 * nothing twice.
 *
 * The row also keeps `read_through`, in the rail's own time: every transfer or credit before it
 * has been recorded. Instruction expiry waits for it (`src/instructions/service.ts`), so that
 * money that arrived in time is never judged late because the service found it late.
 */

/** One page a rail listed. */
export interface RailPage<T> {
  items: readonly T[];
  /** Where the next read resumes; null keeps the cursor where it was. */
  nextCursor: string | null;
  /** The rail's time up to which its listing is complete when this page is the last one. */
  asOf: Date;
  /** A chain's latest block; undefined for a rail without blocks. */
  tip?: number;
}

/** How to read one rail: list a page after a cursor, and record a page in the caller's transaction. */
export interface RailReader<T> {
  source: RailSource;
  /** How long after one read the next is due; null reads the rail on every pass. */
  intervalMs: number | null;
  list(cursor: string | null, limit: number): Promise<RailPage<T>>;
  /** When the rail says an item (a transfer, a credit) happened. */
  timeOf(item: T): Date;
  /** Records the page's items inside `tx`; returns how many were new. */
  save(tx: Sql, page: RailPage<T>, now: Date): Promise<number>;
}

/** What one read of a rail did. */
export interface RailRead {
  /** False when the rail was not due, or another instance held its cursor: it is reading it now. */
  read: boolean;
  /** Items recorded as new inflows (an item seen before is never recorded again). */
  recorded: number;
  /** Pages saved. */
  pages: number;
  /** The rail's time before which everything has now been read; null when nothing was read. */
  readThrough: Date | null;
}

/** How long one instance may hold a rail's read before another may take it over. */
const READ_LEASE_MS = 60_000;

/**
 * Reads `reader`'s rail from its cursor to its present, a page at a time (at most `maxPages`),
 * unless another instance holds the rail or its next read is not due yet.
 */
export async function readRail<T>(
  deps: Deps,
  reader: RailReader<T>,
  options: { pageSize: number; maxPages: number },
): Promise<RailRead> {
  const result: RailRead = { read: false, recorded: 0, pages: 0, readThrough: null };
  const lease = await takeLease(deps, reader.source);
  if (!lease) return result;
  try {
    let cursor = lease.cursor;
    for (let page = 0; page < options.maxPages; page++) {
      const listed = await reader.list(cursor, options.pageSize);
      const next = listed.nextCursor ?? cursor;
      const more = listed.items.length >= options.pageSize && next !== cursor;
      // A full page says nothing of what comes after its last item, which may share its time
      // (its block): everything before that time has been read.
      const last = listed.items.at(-1);
      const readThrough = more && last ? reader.timeOf(last) : listed.asOf;
      const saved = await deps.sql.transaction(async (tx) => {
        const now = deps.clock.now();
        const [held] = await tx.rows(holdLease, [reader.source, lease.token]);
        if (!held) return null;
        const recorded = await reader.save(tx, listed, now);
        await tx.rows(moveCursor, [
          reader.source,
          next,
          listed.tip ?? null,
          readThrough,
          new Date(now.getTime() + READ_LEASE_MS),
          now,
        ]);
        return recorded;
      });
      if (saved === null) break;
      result.read = true;
      result.recorded += saved;
      result.pages++;
      result.readThrough = readThrough;
      cursor = next;
      if (!more) break;
    }
  } finally {
    const now = deps.clock.now();
    await deps.sql.rows(releaseLease, [
      reader.source,
      lease.token,
      reader.intervalMs === null ? null : new Date(now.getTime() + reader.intervalMs),
      now,
    ]);
  }
  return result;
}

const createCursor = statement(
  'rail_cursor_create',
  `insert into rail_cursors (source, cursor, tip, read_through, due_at, created_at, updated_at)
   values ($1, null, null, null, null, $2, $2) on conflict (source) do nothing`,
);

// SKIP LOCKED: a row being saved by the lease holder right now is simply not ours to take.
const leaseCursor = statement(
  'rail_cursor_lease',
  `update rail_cursors set lease_token = $2, lease_until = $3, updated_at = $4
    where source = (select source from rail_cursors
                     where source = $1 and (lease_until is null or lease_until < $4)
                       and (due_at is null or due_at <= $4)
                     for update skip locked)
    returning cursor`,
);

const holdLease = statement(
  'rail_cursor_hold_lease',
  'select source from rail_cursors where source = $1 and lease_token = $2 for update',
);

// The tip and the time read through never go back: a provider lagging behind another changes nothing.
const moveCursor = statement(
  'rail_cursor_move',
  `update rail_cursors
      set cursor = $2, tip = greatest(tip, $3::int),
          read_through = greatest(read_through, $4::timestamptz), lease_until = $5, updated_at = $6
    where source = $1`,
);

const releaseLease = statement(
  'rail_cursor_release',
  `update rail_cursors set lease_token = null, lease_until = null, due_at = $3, updated_at = $4
    where source = $1 and lease_token = $2`,
);

/** Leases the rail's cursor row, creating it on first use; null when it is not due or another instance holds it. */
async function takeLease(
  deps: Deps,
  source: RailSource,
): Promise<{ token: string; cursor: string | null } | null> {
  const now = deps.clock.now();
  await deps.sql.rows(createCursor, [source, now]);
  const token = newId();
  const [leased] = await deps.sql.rows<{ cursor: string | null }>(leaseCursor, [
    source,
    token,
    new Date(now.getTime() + READ_LEASE_MS),
    now,
  ]);
  return leased ? { token, cursor: leased.cursor } : null;
}
