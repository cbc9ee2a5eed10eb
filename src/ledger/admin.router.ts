import { z } from 'zod';
import { emSql, isoTimestamp } from '#src/db/sql.ts';
import { invalidField } from '#src/http/errors.ts';
import { createdAtFilter } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { idIn, iso, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { toDecimal } from '#src/lib/money.ts';
import { checkLedger, LEDGER_CHECKS } from './checks.ts';
import { LEDGER_CHECK_WINDOW_MS } from './job.ts';
import { accountBalances, balances, type EntryRow, entries, payoutEntries } from './read.ts';
import { openViolations } from './violations.ts';

/**
 * `admin.ledger.*`: where the money is, for operators, the CLI (`ledger ...`) and the console's
 * Money page. Reads are for any operator; `check` (an operator) runs the invariants now. Amounts
 * are signed decimal strings. The balances, the entries' pages and the violations read the
 * replica when there is one; one account's balance and one payout's entries read the primary.
 */

const balanceOut = z.object({
  account: z.string(),
  currency: z.string(),
  balance: z.string(),
  entries: z.number().int(),
});

export const entryOut = z.object({
  id: z.string(),
  transaction_id: z.string(),
  account: z.string(),
  currency: z.string(),
  amount: z.string(),
  tenant_id: z.string().nullable(),
  payout_id: z.string().nullable(),
  /** The merchant's movement type, when the entry is one. */
  movement: z.string().nullable(),
  cause: z.object({ object: z.string(), id: z.string(), transition: z.string() }),
  approval_id: z.string().nullable(),
  created_at: timestampOut,
});

export function toEntry(e: EntryRow): z.output<typeof entryOut> {
  return {
    id: e.id,
    transaction_id: e.transaction_id,
    account: e.account,
    currency: e.currency,
    amount: toDecimal(e.amount).toFixed(),
    tenant_id: e.tenant_id,
    payout_id: e.payout_id,
    movement: e.movement,
    cause: { object: e.cause_object, id: e.cause_id, transition: e.transition },
    approval_id: e.approval_id,
    created_at: isoTimestamp(e.created_at),
  };
}

const position = z.object({ account: z.string().min(1).max(300), created_at: createdAtFilter, id: idIn });

/** Sums of entries per currency, as decimal strings. */
function sums(rows: readonly EntryRow[], keep: (e: EntryRow) => boolean) {
  const by = new Map<string, ReturnType<typeof toDecimal>>();
  for (const e of rows.filter(keep)) by.set(e.currency, (by.get(e.currency) ?? toDecimal(0)).plus(e.amount));
  return [...by].map(([currency, amount]) => ({ currency, amount: amount.toFixed() }));
}

/** Sums of entries per account and currency, in the order accounts first appear; zero sums left out. */
function accountSums(rows: readonly EntryRow[]) {
  const accounts = [...new Set(rows.map((e) => e.account))];
  return accounts.flatMap((account) =>
    sums(rows, (e) => e.account === account)
      .filter((s) => !toDecimal(s.amount).isZero())
      .map((s) => ({ account, ...s })),
  );
}

const violationOut = z.object({
  id: z.string(),
  check: z.string(),
  subject: z.string(),
  tenant_id: z.string().nullable(),
  detail: z.record(z.string(), z.unknown()),
  first_seen_at: timestampOut,
  last_seen_at: timestampOut,
});

/** Mounted as `admin.ledger` in `src/router.ts`. */
export const ledgerAdminRouter = router({
  /**
   * Balances by account and currency of every account under `prefix` (all without one): one line
   * per account, a payout's and a virtual account's summed into their parent line.
   */
  balances: adminProcedure
    .meta({ lagTolerant: true })
    .input(z.strictObject({ prefix: z.string().max(300).optional() }).default({}))
    .output(z.object({ counted_at: timestampOut, data: z.array(balanceOut) }))
    .query(async ({ ctx, input }) => ({
      counted_at: iso(ctx.deps.clock.now()),
      data: await balances(ctx.readSql, input.prefix ?? ''),
    })),

  /** One account's own balance per currency, read from its entries (a payout's, a virtual account's). */
  account: adminProcedure
    .input(z.strictObject({ account: z.string().min(1).max(300) }))
    .output(z.object({ data: z.array(balanceOut) }))
    .query(async ({ ctx, input }) => ({ data: await accountBalances(ctx.deps.sql, input.account) })),

  /**
   * Entries of one account (`exact`) or of every account under a prefix, created in [from, to),
   * oldest first per account, a page at a time: pass `next` back as `after`.
   */
  entries: adminProcedure
    .meta({ lagTolerant: true })
    .input(
      z.strictObject({
        account: z.string().min(1).max(300),
        exact: z.boolean().default(false),
        from: createdAtFilter.optional(),
        to: createdAtFilter.optional(),
        limit: z.number().int().min(1).max(500).default(100),
        after: position.optional(),
      }),
    )
    .output(
      z.object({ data: z.array(entryOut), next: position.extend({ created_at: timestampOut }).nullable() }),
    )
    .query(async ({ ctx, input }) => {
      const from = input.from ?? new Date(0);
      const to = input.to ?? new Date('9999-12-31T00:00:00Z');
      if (from >= to) throw invalidField('to', 'must be after from');
      const rows = await entries(ctx.readSql, {
        account: input.account,
        exact: input.exact,
        from,
        to,
        limit: input.limit,
        after: input.after ?? null,
      });
      const last = rows.length === input.limit ? rows.at(-1) : undefined;
      return {
        data: rows.map(toEntry),
        next: last ? { account: last.account, created_at: isoTimestamp(last.created_at), id: last.id } : null,
      };
    }),

  /**
   * A payout's entries, oldest first, with what it holds per currency (its movements' sum), how
   * much of that is in transit (with the processor, or a refund on its way), its overpayment set
   * aside for the merchant and not yet returned, and the sum of its entries on each account: above
   * zero where its money is now (a fee, the beneficiaries, the merchant's overpayments...), below
   * zero where it came from (a rail, suspense).
   */
  payout: adminProcedure
    .input(z.strictObject({ payout_id: idIn }))
    .output(
      z.object({
        payout_id: z.string(),
        holds: z.array(z.object({ currency: z.string(), amount: z.string() })),
        in_transit: z.array(z.object({ currency: z.string(), amount: z.string() })),
        /** Its overpayment still set aside in the merchant's overpayments account, per currency. */
        set_aside: z.array(z.object({ currency: z.string(), amount: z.string() })),
        /** The sum of its entries per account and currency (zero sums left out). */
        accounts: z.array(z.object({ account: z.string(), currency: z.string(), amount: z.string() })),
        entries: z.array(entryOut),
      }),
    )
    .query(async ({ ctx, input }) => {
      const rows = await payoutEntries(ctx.deps.sql, input.payout_id);
      return {
        payout_id: input.payout_id,
        holds: sums(rows, (e) => e.movement !== null),
        in_transit: sums(rows, (e) => e.account.startsWith('transit:')),
        set_aside: sums(rows, (e) => e.account.endsWith(':to_return:overpayments')),
        accounts: accountSums(rows),
        entries: rows.map(toEntry),
      };
    }),

  /** What the checks found out of balance and is still open: the "Out of balance" queue, oldest first. */
  violations: adminProcedure
    .meta({ lagTolerant: true })
    .input(z.strictObject({ limit: z.number().int().min(1).max(500).default(100) }).default({ limit: 100 }))
    .output(z.object({ data: z.array(violationOut) }))
    .query(async ({ ctx, input }) => ({ data: await openViolations(ctx.em, input.limit) })),

  /**
   * Checks the ledger's invariants now: payouts changed within the last hour (every payout with
   * `all`) and every subject still open. Records what it finds, as the `ledger` job does.
   */
  check: adminProcedure
    .meta({ role: 'operator' })
    .input(z.strictObject({ all: z.boolean().default(false) }).default({ all: false }))
    .output(
      z.object({
        checks: z.array(z.object({ name: z.string(), description: z.string() })),
        found: z.number().int(),
        resolved: z.number().int(),
        violations: z.array(violationOut.pick({ check: true, subject: true, tenant_id: true, detail: true })),
      }),
    )
    .mutation(async ({ ctx, input }) => {
      const now = ctx.deps.clock.now();
      const run = await ctx.commit((tx) =>
        checkLedger(emSql(tx), {
          since: input.all ? null : new Date(now.getTime() - LEDGER_CHECK_WINDOW_MS),
          now,
          log: ctx.log,
        }),
      );
      if (run.found + run.resolved === 0) ctx.audit.unchanged();
      return {
        checks: LEDGER_CHECKS.map((c) => ({ name: c.name, description: c.description })),
        found: run.found,
        resolved: run.resolved,
        violations: run.violations.map((v) => ({
          check: v.check,
          subject: v.subject,
          tenant_id: v.tenantId,
          detail: v.detail,
        })),
      };
    }),
});
