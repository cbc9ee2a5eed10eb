import { z } from 'zod';
import { operatorNames, proposeMove } from '#src/approvals/service.ts';
import { proposalOut, toProposal } from '#src/approvals/view.ts';
import { AppError } from '#src/http/errors.ts';
import { listName, pageOf, pageQuery, paginate } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { idIn, iso, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { isDay } from '#src/lib/days.ts';
import { isUuid } from '#src/lib/ids.ts';
import { BREAK_RESOLUTIONS } from '#src/reconciliation/entities.ts';
import { reconMoves, resolveBreakIn } from './breaks.ts';
import {
  BREAK_KINDS,
  BREAK_STATUSES,
  RECON_RAILS,
  ReconAccount,
  type ReconBreak,
  ReconBreak as ReconBreakEntity,
  ReconRun,
} from './entities.ts';
import { runReconciliation } from './service.ts';

/**
 * `admin.recon.*`: reconciliation runs and their breaks (`docs/reconciliation.md`), behind the
 * CLI's `recon run`, `recon list` and `recon breaks`, and the console's Reconciliation page.
 * Amounts are decimal strings, as everywhere in `admin.*`.
 */

const note = z.string().trim().min(1).max(1000);
const day = z.string().refine(isDay, 'must be a day written YYYY-MM-DD, such as 2026-11-27');

const accountOut = z.object({
  account: z.string(),
  currency: z.string(),
  matched_count: z.number().int(),
  matched_amount: z.string(),
  ledger_count: z.number().int(),
  ledger_amount: z.string(),
  rail_count: z.number().int(),
  rail_amount: z.string(),
  breaks: z.number().int(),
  /** Collection accounts: all the rail ever showed arriving, and the ledger's balance, as money received. */
  rail_balance: z.string().nullable(),
  ledger_balance: z.string().nullable(),
});

const runOut = z.object({
  id: z.string(),
  day: z.string(),
  rail: z.enum(RECON_RAILS),
  state: z.enum(['RUNNING', 'DONE', 'FAILED']),
  /** Whether the day was over at the rail when its record was read (a run of today is partial). */
  rail_complete: z.boolean(),
  attempts: z.number().int(),
  started_by: z.string().nullable(),
  started_at: timestampOut.nullable(),
  finished_at: timestampOut.nullable(),
  error: z.string().nullable(),
  accounts: z.array(accountOut),
  created_at: timestampOut,
});

const breakOut = z.object({
  id: z.string(),
  run_id: z.string(),
  day: z.string(),
  rail: z.enum(RECON_RAILS),
  account: z.string(),
  kind: z.enum(BREAK_KINDS),
  reference: z.string(),
  currency: z.string(),
  ledger_amount: z.string().nullable(),
  rail_amount: z.string().nullable(),
  ledger_state: z.string().nullable(),
  rail_state: z.string().nullable(),
  tenant_id: z.string().nullable(),
  payout_id: z.string().nullable(),
  inflow_id: z.string().nullable(),
  outflow_id: z.string().nullable(),
  /** The difference in plain words. */
  summary: z.string(),
  status: z.enum(BREAK_STATUSES),
  resolution: z.enum(BREAK_RESOLUTIONS).nullable(),
  resolution_note: z.string().nullable(),
  resolved_by: z.string().nullable(),
  resolved_by_name: z.string().nullable(),
  resolved_at: timestampOut.nullable(),
  /** The four-eyes proposal that resolved it, for a resolution that moved money. */
  approval_id: z.string().nullable(),
  created_at: timestampOut,
});

function toBreak(b: ReconBreak, names: ReadonlyMap<string, string>): z.output<typeof breakOut> {
  return {
    id: b.id,
    run_id: b.run.id,
    day: b.day,
    rail: b.rail,
    account: b.account,
    kind: b.kind,
    reference: b.reference,
    currency: b.currency,
    ledger_amount: b.ledgerAmount?.toFixed() ?? null,
    rail_amount: b.railAmount?.toFixed() ?? null,
    ledger_state: b.ledgerState ?? null,
    rail_state: b.railState ?? null,
    tenant_id: b.tenantId ?? null,
    payout_id: b.payoutId ?? null,
    inflow_id: b.inflowId ?? null,
    outflow_id: b.outflowId ?? null,
    summary: b.summary,
    status: b.status,
    resolution: b.resolution ?? null,
    resolution_note: b.resolutionNote ?? null,
    resolved_by: b.resolvedBy ?? null,
    resolved_by_name: b.resolvedBy ? (names.get(b.resolvedBy) ?? null) : null,
    resolved_at: iso(b.resolvedAt ?? null),
    approval_id: b.approvalId ?? null,
    created_at: iso(b.createdAt),
  };
}

function toRun(r: ReconRun, accounts: ReconAccount[]): z.output<typeof runOut> {
  return {
    id: r.id,
    day: r.day,
    rail: r.rail,
    state: r.state,
    rail_complete: r.railComplete,
    attempts: r.attempts,
    started_by: r.startedBy ?? null,
    started_at: iso(r.startedAt ?? null),
    finished_at: iso(r.finishedAt ?? null),
    error: r.error ?? null,
    accounts: accounts.map((a) => ({
      account: a.account,
      currency: a.currency,
      matched_count: a.matchedCount,
      matched_amount: a.matchedAmount.toFixed(),
      ledger_count: a.ledgerCount,
      ledger_amount: a.ledgerAmount.toFixed(),
      rail_count: a.railCount,
      rail_amount: a.railAmount.toFixed(),
      breaks: a.breaks,
      rail_balance: a.railBalance?.toFixed() ?? null,
      ledger_balance: a.ledgerBalance?.toFixed() ?? null,
    })),
    created_at: iso(r.createdAt),
  };
}

/** Mounted as `admin.recon` in `src/router.ts`. */
export const reconAdminRouter = router({
  /**
   * Runs the reconciliation of one day (UTC), for one rail or all three, now; running a day again
   * redoes its run. A rail another instance is running right now is reported as `busy`.
   */
  run: adminProcedure
    .meta({ role: 'operator' })
    .input(z.strictObject({ date: day, rail: z.enum(RECON_RAILS).optional() }))
    .output(z.object({ runs: z.array(runOut), busy: z.array(z.enum(RECON_RAILS)) }))
    .mutation(async ({ ctx, input }) => {
      const rails = input.rail ? [input.rail] : [...RECON_RAILS];
      const ids: string[] = [];
      const busy: (typeof RECON_RAILS)[number][] = [];
      for (const rail of rails) {
        const done = await runReconciliation(ctx.deps, {
          day: input.date,
          rail,
          operatorId: ctx.operator.id,
        });
        if (done) ids.push(done.runId);
        else busy.push(rail);
      }
      ctx.audit.target(...ids);
      await ctx.commit(async () => undefined);
      const em = ctx.em.fork();
      const runs = await em.find(ReconRun, { id: { $in: ids } }, { orderBy: { rail: 'asc' } });
      const accounts = await em.find(ReconAccount, { run: { $in: ids } }, { orderBy: { account: 'asc' } });
      return {
        runs: runs.map((r) =>
          toRun(
            r,
            accounts.filter((a) => a.run.id === r.id),
          ),
        ),
        busy,
      };
    }),

  /** Runs, newest first, each with its counts per rail account. */
  runs: adminProcedure
    .meta({ lagTolerant: true })
    .input(
      pageQuery
        .extend({ rail: z.enum(RECON_RAILS).optional() })
        .strict()
        .default({ limit: 20 }),
    )
    .output(pageOf(runOut))
    .query(async ({ ctx, input }) => {
      const filter = input.rail ? { rail: input.rail } : {};
      const page = await paginate(ctx.em, ReconRun, {
        where: filter,
        list: listName('admin:recon:runs', filter),
        limit: input.limit,
        cursor: input.cursor,
        cursorKey: ctx.deps.secrets.cursorKey,
      });
      const ids = page.items.map((r) => r.id);
      const accounts = ids.length
        ? await ctx.em.find(ReconAccount, { run: { $in: ids } }, { orderBy: { account: 'asc' } })
        : [];
      return {
        data: page.items.map((r) =>
          toRun(
            r,
            accounts.filter((a) => a.run.id === r.id),
          ),
        ),
        meta: page.meta,
      };
    }),

  /** Breaks, newest first; `open: true` is the queue waiting for an operator. */
  breaks: adminProcedure
    .meta({ lagTolerant: true })
    .input(
      pageQuery
        .extend({
          open: z.boolean().optional(),
          rail: z.enum(RECON_RAILS).optional(),
          run_id: z.uuid().optional(),
        })
        .strict()
        .default({ limit: 20 }),
    )
    .output(pageOf(breakOut))
    .query(async ({ ctx, input }) => {
      const filter = {
        ...(input.open === undefined
          ? {}
          : { status: input.open ? ('OPEN' as const) : ('RESOLVED' as const) }),
        ...(input.rail ? { rail: input.rail } : {}),
        ...(input.run_id ? { run: input.run_id } : {}),
      };
      const page = await paginate(ctx.em, ReconBreakEntity, {
        where: filter,
        list: listName('admin:recon:breaks', filter),
        limit: input.limit,
        cursor: input.cursor,
        cursorKey: ctx.deps.secrets.cursorKey,
      });
      const names = await operatorNames(
        ctx.em,
        page.items.map((b) => b.resolvedBy ?? null),
      );
      return { data: page.items.map((b) => toBreak(b, names)), meta: page.meta };
    }),

  /** One break. */
  break: adminProcedure
    .input(z.strictObject({ break_id: idIn }))
    .output(breakOut)
    .query(async ({ ctx, input }) => {
      const found = isUuid(input.break_id) ? await ctx.em.findOne(ReconBreakEntity, input.break_id) : null;
      if (!found) throw new AppError('NOT_FOUND', { details: [{ field: 'break_id', issue: 'is no break' }] });
      return toBreak(found, await operatorNames(ctx.em, [found.resolvedBy ?? null]));
    }),

  /** Resolves a break that moves no money, with a note saying why it is explained (one operator). */
  resolve: adminProcedure
    .meta({ role: 'operator' })
    .input(z.strictObject({ break_id: idIn, note }))
    .output(breakOut)
    .mutation(async ({ ctx, input }) => {
      ctx.audit.target(input.break_id);
      const resolved = await ctx.commit((em) =>
        resolveBreakIn(em, {
          breakId: input.break_id,
          resolution: 'EXPLAINED',
          note: input.note,
          operatorId: ctx.operator.id,
          approvalId: null,
          now: ctx.deps.clock.now(),
        }),
      );
      return toBreak(resolved, new Map([[ctx.operator.id, ctx.operator.name]]));
    }),

  /**
   * Proposes a resolution that moves money: BOOKED_RAIL (the books take what the rail shows) or
   * REFUNDED_RETURN (money the processor returned goes back to the merchant as a refund). It runs
   * once a second operator approves (at once with FOUR_EYES=false).
   */
  propose: adminProcedure
    .meta({ role: 'operator' })
    .input(z.strictObject({ break_id: idIn, resolution: z.enum(['BOOKED_RAIL', 'REFUNDED_RETURN']), note }))
    .output(proposalOut)
    .mutation(async ({ ctx, input }) => {
      const { note: why, ...args } = input;
      return toProposal(ctx.em, await proposeMove(ctx, reconMoves['recon.resolve'], args, why));
    }),
});
