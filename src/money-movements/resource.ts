import { z } from 'zod';
import { isoTimestamp } from '#src/db/sql.ts';
import { timestampOut } from '#src/http/schemas.ts';
import { MOVEMENT_TEXTS, MOVEMENT_TYPES } from '#src/ledger/chart.ts';
import { toDecimal } from '#src/lib/money.ts';

/**
 * A money movement as merchants see it: one ledger entry of a payout's money (`src/ledger`), seen
 * from that money: positive when it arrived for the payout, negative when it left (paid out, kept
 * as a fee, refunded, set aside). A conversion is two movements, one per currency.
 */

const SOURCE_OBJECTS = ['inflow', 'outflow', 'refund', 'payout'] as const;

export const movementOut = z
  .object({
    id: z.string().describe('The movement (a ledger entry) id.'),
    payout_id: z.string(),
    type: z
      .enum(MOVEMENT_TYPES)
      .describe(
        `What moved the money: ${MOVEMENT_TYPES.map((t) => `\`${t}\`: ${MOVEMENT_TEXTS[t]}`).join(' ')}`,
      ),
    amount: z
      .string()
      .describe(
        "Signed decimal string, seen from the payout's money: positive when money arrived for it, negative when it left.",
      ),
    currency: z.string(),
    created_at: timestampOut,
    source: z
      .object({
        object: z.enum(SOURCE_OBJECTS).describe('The object whose change moved the money.'),
        id: z.string(),
      })
      .describe(
        'What caused the movement: the inflow received, the outflow (dispatch attempt), the refund, or the payout itself.',
      ),
  })
  .meta({ id: 'MoneyMovement', description: "One movement of a payout's money." });

export type MovementResource = z.output<typeof movementOut>;

/** A movement entry as read from the ledger. */
export interface MovementRow {
  id: string;
  payout_id: string;
  movement: string;
  amount: string;
  currency: string;
  created_at: string | Date;
  cause_object: string;
  cause_id: string;
}

/**
 * What the merchant is told caused a movement. An operator's approval is not the merchant's to
 * see: money an approved reconciliation resolution moved on a payout (the processor's return)
 * names the payout.
 */
function sourceOf(row: MovementRow): MovementResource['source'] {
  if (row.cause_object === 'approval') return { object: 'payout', id: row.payout_id };
  return { object: row.cause_object as MovementResource['source']['object'], id: row.cause_id };
}

export function toMovement(row: MovementRow): MovementResource {
  return {
    id: row.id,
    payout_id: row.payout_id,
    type: row.movement as MovementResource['type'],
    amount: toDecimal(row.amount).toFixed(),
    currency: row.currency,
    created_at: isoTimestamp(row.created_at),
    source: sourceOf(row),
  };
}

const CSV_COLUMNS = [
  'id',
  'payout_id',
  'type',
  'amount',
  'currency',
  'created_at',
  'source_object',
  'source_id',
];

/** Movements as CSV with a header row (RFC 4180; no value needs quoting but each is quoted when it would). */
export function movementsCsv(movements: readonly MovementResource[]): string {
  const cell = (v: string) => (/[",\r\n]/.test(v) ? `"${v.replaceAll('"', '""')}"` : v);
  const lines = [CSV_COLUMNS.join(',')];
  for (const m of movements) {
    lines.push(
      [m.id, m.payout_id, m.type, m.amount, m.currency, m.created_at, m.source.object, m.source.id]
        .map(cell)
        .join(','),
    );
  }
  return `${lines.join('\r\n')}\r\n`;
}
