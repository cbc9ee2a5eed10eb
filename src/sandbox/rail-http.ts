import type { Context, Next } from 'koa';
import { z } from 'zod';
import { NETWORK_NAMES, type Network, networkNamed } from '#src/corridors/corridors.ts';
import { isDay } from '#src/lib/days.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { readJson, SandboxError, validate } from './http.ts';

/**
 * Wire helpers shared by the parties that move money (chains, bank, processor): amounts, network
 * path segments, references, magic suffixes, and the errors those parties add to the sandbox's
 * vocabulary.
 */

/**
 * A failure of a money-moving party that the shared vocabulary in `http.ts` has no code for
 * (an unknown transfer or payout reference). Rendered in the same `{ error: { code, message } }`.
 */
export class RailError extends Error {
  readonly status: number;
  readonly code: string;

  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = 'RailError';
    this.status = status;
    this.code = code;
  }
}

/** Router middleware rendering RailError; anything else goes on to the sandbox's error handler. */
export async function railErrors(ctx: Context, next: Next): Promise<void> {
  try {
    await next();
  } catch (err) {
    if (!(err instanceof RailError)) throw err;
    ctx.status = err.status;
    ctx.body = { error: { code: err.code, message: err.message } };
  }
}

/**
 * A positive amount with at most `decimals` places. Decimal strings are the contract; a JSON
 * number is accepted for hand-written calls and read back through its shortest decimal form, which
 * is the literal that was sent for any amount of up to 15 significant digits.
 */
export function amountField(decimals: number) {
  return z.unknown().transform((value, ctx): Decimal => {
    const text = typeof value === 'number' && Number.isFinite(value) ? String(value) : value;
    if (typeof text !== 'string' || !/^\d+(\.\d+)?$/.test(text)) {
      ctx.addIssue({
        code: 'custom',
        message: value === undefined ? 'is required' : 'must be a positive decimal string such as "100.50"',
      });
      return z.NEVER;
    }
    const amount = toDecimal(text);
    if (!amount.isGreaterThan(0)) {
      ctx.addIssue({ code: 'custom', message: 'must be greater than 0' });
    } else if ((amount.decimalPlaces() ?? 0) > decimals) {
      ctx.addIssue({ code: 'custom', message: `must have at most ${decimals} decimal places` });
    }
    return amount;
  });
}

/** The service's idempotency reference of a money movement (an outflow, refund or instruction id). */
export const referenceField = z
  .string()
  .regex(/^[A-Za-z0-9._:-]{1,128}$/, 'must be 1 to 128 letters, digits or . _ : -');

/**
 * A network named in a request to the sandbox, case-insensitive, by its chain or its token
 * standard (`tron`, `TRON`, `TRC20` are the same chain): the chain's name.
 */
export const networkField = z
  .string()
  .transform((v) => v.toUpperCase())
  .pipe(z.enum(NETWORK_NAMES, { message: `must be one of ${NETWORK_NAMES.join(', ')}` }))
  .transform((name): Network => networkNamed(name) as Network);

const networkParam = z.object({ network: networkField });

/** The `{network}` path segment: see `networkField`. */
export function networkOf(params: Record<string, string | undefined>): Network {
  return validate(networkParam, params).network;
}

/** A path parameter the route pattern guarantees. */
export function pathParam(params: Record<string, string | undefined>, name: string): string {
  const value = params[name];
  if (value === undefined) throw new Error(`route has no :${name} parameter`);
  return value;
}

/** A JSON body, or `{}` when the request has none (curl calls of the simulation endpoints). */
export async function optionalJson(ctx: Context): Promise<unknown> {
  return ctx.request.type ? readJson(ctx) : {};
}

/** Whether the last four characters of `value` are one of the magic `suffixes`, ignoring case. */
export function hasMagicSuffix(value: string, suffixes: readonly string[]): boolean {
  const tail = value.slice(-4).toLowerCase();
  return suffixes.includes(tail);
}

/**
 * Opaque list cursors over a party's in-memory records, which only ever grow: a position in the
 * list, tagged with the party's `epoch` (random per start), so that a cursor from an earlier run
 * of the sandbox starts the new list from its beginning: all of it is new to the caller.
 */
export function positionCursors(epoch: string, length: () => number) {
  return {
    encode: (position: number): string => Buffer.from(`${epoch}.${position}`).toString('base64url'),
    /** The position a cursor stands for (0 for one of an earlier run), or null for a string that is no cursor of this API. */
    decode(cursor: string): number | null {
      const match = /^([0-9a-f]{8})\.(\d{1,15})$/.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
      if (!match) return null;
      if (match[1] !== epoch) return 0;
      return Math.min(Number(match[2]), length());
    },
    /** Where a page asked for with `cursor` starts: 0 without one; a string that is no cursor is refused. */
    after(cursor: string | null | undefined): number {
      if (!cursor) return 0;
      const position = this.decode(cursor);
      if (position === null) throw new SandboxError('INVALID_REQUEST', 'cursor: is not a cursor of this API');
      return position;
    },
  };
}

/** The `cursor` and `limit` of a list a party serves page by page. */
export function listQuery(options: { maxPage: number; defaultPage: number }) {
  return z.object({
    cursor: z.string().max(200).optional(),
    limit: z.coerce.number().int().min(1).max(options.maxPage).default(options.defaultPage),
  });
}

/** A UTC day as `YYYY-MM-DD`, as the daily reports (settlement report, statement of a day) name it. */
export const dayField = z.string().refine(isDay, 'must be a day of the calendar such as 2026-11-28');
