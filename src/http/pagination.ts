import { createHash } from 'node:crypto';
import { type EntityManager, type EntityName, type FilterQuery, raw } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { constantTimeEqual, hmacSha256 } from '#src/lib/crypto.ts';
import { isUuid } from '#src/lib/ids.ts';
import { AppError } from './errors.ts';

/**
 * Keyset pagination over (created_at, id), newest first (or oldest first, for the operators'
 * queues of work waiting its turn), for every cursor-paginated list.
 * A cursor is `<payload>.<mac>`: the position and the list it belongs to, authenticated with
 * HMAC-SHA256, so a forged, edited or foreign cursor is a 400 rather than a surprise.
 */

/** What every cursor this API issues looks like: `<base64url payload>.<32 base64url characters>`. */
export const CURSOR_PATTERN = '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]{32}$';

export const pageQuery = z.object({
  limit: z.coerce.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100.'),
  cursor: z
    .string()
    .min(1)
    .max(512)
    .optional()
    .describe('meta.next_cursor of the previous page; opaque: never decode or build one.')
    // The form every issued cursor has (see encodeCursor); anything else is INVALID_CURSOR.
    .meta({ pattern: CURSOR_PATTERN }),
});

/**
 * A list filter on creation time: an ISO-8601 timestamp with its offset. A `+` sent unencoded in
 * a query string arrives as a space; the offset is read back as the `+` it was.
 */
export const createdAtFilter = z.preprocess(
  (value) => (typeof value === 'string' ? value.replace(/ (\d\d:?\d\d)$/, '+$1') : value),
  z.iso
    .datetime({
      offset: true,
      error: 'must be an ISO-8601 timestamp with an offset, e.g. 2026-11-26T09:00:00Z',
    })
    .transform((value) => new Date(value)),
);

/** A `true` or `false` list filter. */
export const booleanFilter = z.enum(['true', 'false']).transform((value) => value === 'true');

/**
 * The name a cursor is bound to: the list and the filters it was read with. A cursor then pages
 * only the list it came from with the very same filters; with other filters it is INVALID_CURSOR,
 * never a page that skips or repeats rows. Filters are hashed, so long values keep cursors short.
 */
export function listName(list: string, filters: Record<string, string | boolean | Date | undefined>): string {
  const given = Object.entries(filters)
    .filter(([, value]) => value !== undefined)
    .map(([name, value]) => [name, value instanceof Date ? value.toISOString() : value])
    .sort(([a], [b]) => String(a).localeCompare(String(b)));
  if (given.length === 0) return list;
  return `${list}?${createHash('sha256').update(JSON.stringify(given)).digest('base64url').slice(0, 22)}`;
}

export const pageMeta = z
  .object({
    next_cursor: z.string().nullable().describe('Pass as cursor for the next page.'),
    has_more: z.boolean().describe('Whether another page follows: stop when false.'),
    limit: z.number().int(),
  })
  .meta({ id: 'PageMeta' });

export type PageMeta = z.infer<typeof pageMeta>;

/** Which page to read: its size, the cursor the previous page gave (none for the first), the key that signs cursors. */
export interface PageRequest {
  limit: number;
  cursor?: string | undefined;
  cursorKey: Buffer;
}

/**
 * The `{ data, meta }` envelope of a cursor-paginated list, named after its item in the OpenAPI
 * document (`PayoutPage` for `Payout`).
 */
export function pageOf<T extends z.ZodType>(item: T) {
  const name = z.globalRegistry.get(item)?.id;
  const page = z.object({ data: z.array(item), meta: pageMeta });
  return name
    ? page.meta({ id: `${name}Page`, description: `One page of ${name} items, newest first.` })
    : page;
}

interface Position {
  /** The list (and filter) the cursor was issued for. */
  l: string;
  /** created_at, ISO-8601 with milliseconds. */
  c: string;
  /** id of the last row of the page. */
  i: string;
}

function mac(key: Buffer, payload: string): string {
  return hmacSha256(key, payload).digest('base64url').slice(0, 32);
}

export function encodeCursor(key: Buffer, position: Position): string {
  const payload = Buffer.from(JSON.stringify(position)).toString('base64url');
  return `${payload}.${mac(key, payload)}`;
}

export function decodeCursor(key: Buffer, cursor: string, list: string): { createdAt: Date; id: string } {
  const invalid = () =>
    new AppError('INVALID_CURSOR', {
      details: [{ field: 'cursor', issue: 'is not a cursor issued for this list with these filters' }],
    });
  const [payload, signature, extra] = cursor.split('.');
  if (!payload || !signature || extra !== undefined) throw invalid();
  if (!constantTimeEqual(signature, mac(key, payload))) throw invalid();
  let position: Partial<Position>;
  try {
    position = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as Partial<Position>;
  } catch {
    throw invalid();
  }
  const createdAt = new Date(position.c ?? '');
  if (position.l !== list || Number.isNaN(createdAt.getTime()) || !position.i || !isUuid(position.i))
    throw invalid();
  return { createdAt, id: position.i };
}

interface Keyed {
  id: string;
  createdAt: Date;
}

/**
 * One page of `entity` matching `where`, newest first unless `order` is `asc`. `list` names the
 * list and its filters: a cursor only works on the list that issued it (and its order).
 */
export async function paginate<T extends Keyed>(
  em: EntityManager,
  entity: EntityName<T>,
  args: PageRequest & {
    where: FilterQuery<T>;
    list: string;
    populate?: readonly string[];
    order?: 'asc' | 'desc';
  },
): Promise<{ items: T[]; meta: z.infer<typeof pageMeta> }> {
  const order = args.order ?? 'desc';
  const list = order === 'desc' ? args.list : `${args.list}:asc`;
  let where = args.where;
  if (args.cursor) {
    const after = decodeCursor(args.cursorKey, args.cursor, list);
    // A row comparison, not the equivalent OR: the index on (…, created_at, id) starts at it.
    const position = raw(
      (alias: string) => `(${alias}.created_at, ${alias}.id) ${order === 'desc' ? '<' : '>'} (?, ?)`,
      [after.createdAt, after.id],
    );
    where = { $and: [args.where, { [position]: [] }] } as FilterQuery<T>;
  }
  const rows = await em.find(entity, where, {
    orderBy: { createdAt: order, id: order } as never,
    limit: args.limit + 1,
    populate: (args.populate ?? []) as never,
  });
  return pageFrom(rows, { ...args, list, createdAtOf: (row) => row.createdAt });
}

/**
 * The page of `rows` read with `limit + 1` (the extra row only says that more exist) and its
 * meta, with the cursor of its last row.
 */
export function pageFrom<T extends { id: string }>(
  rows: T[],
  args: { list: string; limit: number; cursorKey: Buffer; createdAtOf: (row: T) => Date },
): { items: T[]; meta: z.infer<typeof pageMeta> } {
  const hasMore = rows.length > args.limit;
  const items = hasMore ? rows.slice(0, args.limit) : rows;
  const last = items.at(-1);
  const nextCursor =
    hasMore && last
      ? encodeCursor(args.cursorKey, { l: args.list, c: args.createdAtOf(last).toISOString(), i: last.id })
      : null;
  return { items, meta: { next_cursor: nextCursor, has_more: hasMore, limit: args.limit } };
}
