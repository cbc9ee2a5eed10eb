import { z } from 'zod';
import { type Sql, statement, toDate } from '#src/db/sql.ts';
import { AppError, invalidField } from '#src/http/errors.ts';
import {
  createdAtFilter,
  decodeCursor,
  listName,
  pageFrom,
  pageOf,
  pageQuery,
} from '#src/http/pagination.ts';
import { merchantSqlProcedure } from '#src/http/procedures.ts';
import { idParam } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { MOVEMENT_TYPES } from '#src/ledger/chart.ts';
import { isUuid } from '#src/lib/ids.ts';
import { readTenantPayout } from '#src/payouts/resource.ts';
import { type MovementRow, movementOut, movementsCsv, toMovement } from './resource.ts';

/**
 * The merchants' view of the ledger: the movements of one payout's money, oldest first, and of
 * all the tenant's payouts, newest first, a page at a time or (`Accept: text/csv`) as one CSV
 * file for a period of at most {@link CSV_MAX_DAYS} days. Another tenant's payout does not exist.
 * The tenant's list reads the replica when there is one (src/db/replica.ts); one payout's
 * statement is read with the payout, from the primary, as a GET of one object is.
 */

/** The longest period one CSV export covers. */
export const CSV_MAX_DAYS = 31;

const COLUMNS =
  'id, payout_id, movement, amount::text as amount, currency, created_at, cause_object, cause_id';

export const ofPayout = statement(
  'money_movements_of_payout',
  `select ${COLUMNS} from ledger_entries
    where payout_id = $1 and tenant_id = $2 and movement is not null
    order by created_at, id`,
);

// Planned for the filters given (`replan`): the payout index for one payout, else the tenant's.
export const movementsPage = statement(
  'money_movements_page',
  `select ${COLUMNS} from ledger_entries
    where tenant_id = $1 and movement is not null
      and ($2::uuid is null or payout_id = $2)
      and ($3::text is null or movement = $3)
      and ($4::timestamptz is null or created_at >= $4)
      and ($5::timestamptz is null or created_at < $5)
      and ($6::timestamptz is null or (created_at, id) < ($6, $7::uuid))
    order by created_at desc, id desc
    limit $8`,
  { replan: true },
);

const listIn = pageQuery
  .extend({
    payout_id: z.uuid().optional().describe('Only the movements of this payout.'),
    type: z.enum(MOVEMENT_TYPES).optional().describe('Only movements of this type.'),
    created_after: createdAtFilter.optional().describe('Only movements created at or after this time.'),
    created_before: createdAtFilter.optional().describe('Only movements created before this time.'),
  })
  .strict();

type Filters = { payoutId?: string; type?: string; createdAfter?: Date; createdBefore?: Date };

function readPage(
  sql: Sql,
  tenantId: string,
  f: Filters,
  after: { createdAt: Date; id: string } | null,
  limit: number,
) {
  return sql.rows<MovementRow>(movementsPage, [
    tenantId,
    f.payoutId ?? null,
    f.type ?? null,
    f.createdAfter ?? null,
    f.createdBefore ?? null,
    after?.createdAt ?? null,
    after?.id ?? null,
    limit,
  ]);
}

/** The CSV export's period: both ends given, at most {@link CSV_MAX_DAYS} days apart. */
function csvPeriod(f: Filters): void {
  const problem = (field: string, issue: string) => {
    throw new AppError('VALIDATION_FAILED', {
      message: `A CSV export covers a period of at most ${CSV_MAX_DAYS} days: give created_after and created_before.`,
      details: [{ field, issue }],
    });
  };
  if (!f.createdAfter) problem('created_after', 'is required with Accept: text/csv');
  if (!f.createdBefore) problem('created_before', 'is required with Accept: text/csv');
  const days = (f.createdBefore!.getTime() - f.createdAfter!.getTime()) / 86_400_000;
  if (days <= 0) problem('created_before', 'must be after created_after');
  if (days > CSV_MAX_DAYS) problem('created_before', `is more than ${CSV_MAX_DAYS} days after created_after`);
}

const NO_PAYOUT = '00000000-0000-0000-0000-000000000000';

const wantsCsv = (accept: string | undefined) => /(^|,)\s*text\/csv\b/i.test(accept ?? '');

export const moneyMovementsRouter = router({
  ofPayout: merchantSqlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/payouts/{payout_id}/money-movements',
        operationId: 'listPayoutMoneyMovements',
        tags: ['Payouts', 'Money movements'],
        summary: "The payout's money movements, oldest first",
        description:
          "Every movement of the payout's money, as a bare array, oldest first: money received, converted at the " +
          'locked rate, paid out, kept as fees, refunded, set aside. Amounts are signed decimal strings seen from the ' +
          "payout's money. A payout in a final state sums to exactly zero in every currency; a payout still holding " +
          'money sums to what it holds.',
      },
      scope: 'payouts:read',
      errors: ['PAYOUT_NOT_FOUND'],
    })
    .input(z.strictObject({ payout_id: idParam }))
    .output(z.array(movementOut))
    .query(async ({ ctx, input }) => {
      const tenantId = ctx.principal.tenant.id;
      if (!isUuid(input.payout_id)) throw new AppError('PAYOUT_NOT_FOUND');
      const payout = await readTenantPayout(ctx.deps.sql, tenantId, input.payout_id);
      if (!payout) throw new AppError('PAYOUT_NOT_FOUND');
      return (await ctx.deps.sql.rows<MovementRow>(ofPayout, [payout.id, tenantId])).map(toMovement);
    }),

  list: merchantSqlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/money-movements',
        operationId: 'listMoneyMovements',
        tags: ['Money movements'],
        summary: 'Money movements of every payout, newest first, optionally filtered',
        description:
          'Filters combine; created_after is inclusive and created_before exclusive. A cursor pages only the filters ' +
          `it was issued with. With \`Accept: text/csv\` the answer is every page of the filter as one CSV file with a ` +
          `header row (columns id, payout_id, type, amount, currency, created_at, source_object, source_id), for a ` +
          `period of at most ${CSV_MAX_DAYS} days given by created_after and created_before; a longer or open ` +
          'period is 400 VALIDATION_FAILED.',
      },
      scope: 'payouts:read',
      csv: 'Every movement of the filter, newest first, as CSV with a header row.',
    })
    .input(listIn)
    .output(pageOf(movementOut))
    .query(async ({ ctx, input }) => {
      const tenantId = ctx.principal.tenant.id;
      const cursorKey = ctx.deps.secrets.cursorKey;
      const filters: Filters = {
        payoutId: input.payout_id,
        type: input.type,
        createdAfter: input.created_after,
        createdBefore: input.created_before,
      };
      const list = listName('money-movements', filters);
      // An id that cannot exist has no movements.
      if (input.payout_id !== undefined && !isUuid(input.payout_id)) filters.payoutId = NO_PAYOUT;
      if (wantsCsv(ctx.headers.accept)) {
        if (input.cursor)
          throw invalidField('cursor', 'is not taken with Accept: text/csv: the file holds every page');
        csvPeriod(filters);
        // Every page from the one database, so that the file is one consistent view.
        const all = await ctx.deps.reads.read(tenantId, async ({ sql }) => {
          const rows: MovementRow[] = [];
          let after: { createdAt: Date; id: string } | null = null;
          for (;;) {
            const page = await readPage(sql, tenantId, filters, after, 5000);
            rows.push(...page);
            if (page.length < 5000) return rows;
            const last = page.at(-1)!;
            after = { createdAt: toDate(last.created_at), id: last.id };
          }
        });
        if (ctx.response) {
          ctx.response.rendered = movementsCsv(all.map(toMovement));
          ctx.response.contentType = 'text/csv; charset=utf-8';
        }
        return { data: [], meta: { next_cursor: null, has_more: false, limit: input.limit } };
      }
      const after = input.cursor ? decodeCursor(cursorKey, input.cursor, list) : null;
      const rows = await ctx.deps.reads.read(tenantId, ({ sql }) =>
        readPage(sql, tenantId, filters, after, input.limit + 1),
      );
      const result = pageFrom(rows, {
        list,
        limit: input.limit,
        cursorKey,
        createdAtOf: (r) => toDate(r.created_at),
      });
      return { data: result.items.map(toMovement), meta: result.meta };
    }),
});
