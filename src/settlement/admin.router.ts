import { z } from 'zod';
import { pageOf, pageQuery } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { iso } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import type { Payout } from '#src/payouts/entities.ts';
import { Inflow } from './entities.ts';
import { attributeInflow, failHeldPayout, inflowsNeedingAttention, returnInflow } from './operator.ts';

/**
 * `admin.settlement.*`: the operators' view of money that needs a decision, and the decisions
 * (product decisions §7). Unlike the merchant API, it shows payer identity. Amounts are decimal
 * strings: tRPC clients parse JSON numbers into floats. Operator notes go to the audit log line
 * of each action (the inflow has no column for them) and never onto the merchant's timeline.
 */

const INFLOW_STATES = [
  'PENDING_CONFIRMATION',
  'CONFIRMED',
  'MATCHED',
  'HELD',
  'UNMATCHED',
  'RETURNED',
] as const;

const adminInflowOut = z.object({
  id: z.string(),
  tenant_id: z.string(),
  state: z.enum(INFLOW_STATES),
  rail: z.enum(['CRYPTO', 'BANK_TRANSFER']),
  provider_name: z.string(),
  network: z.string().nullable(),
  amount: z.string(),
  currency: z.string(),
  /** Transaction hash or bank session id. */
  external_ref: z.string(),
  to_account: z.string(),
  payer_name: z.string().nullable(),
  payer_account: z.string().nullable(),
  confirmations_received: z.number().int(),
  is_matched: z.boolean(),
  is_underpaid: z.boolean(),
  payout_id: z.string().nullable(),
  /** Bank rail: the payout whose virtual account received the money, attributed or not. */
  account_payout_id: z.string().nullable(),
  overpayment_amount: z.string(),
  matched_at: z.string().nullable(),
  /** When the rail says the money arrived (block time, bank credit time): what lateness is judged by. */
  arrived_at: z.string(),
  /** When the service recorded it. */
  created_at: z.string(),
});

const payoutSummaryOut = z.object({
  id: z.string(),
  status: z.string(),
  received_amount: z.string(),
  settlement_amount: z.string(),
  settlement_currency: z.string(),
});

function toAdminInflow(
  inflow: Inflow,
  accountPayoutId: string | null = null,
): z.output<typeof adminInflowOut> {
  return {
    id: inflow.id,
    tenant_id: inflow.tenant.id,
    state: inflow.state,
    rail: inflow.rail,
    provider_name: inflow.providerName,
    network: inflow.network ?? null,
    amount: inflow.amount.toFixed(),
    currency: inflow.currency,
    external_ref: inflow.externalRef,
    to_account: inflow.toAccount,
    payer_name: inflow.payerName ?? null,
    payer_account: inflow.payerAccount ?? null,
    confirmations_received: inflow.confirmationsReceived,
    is_matched: inflow.isMatched,
    is_underpaid: inflow.isUnderpaid,
    payout_id: inflow.payout?.id ?? null,
    account_payout_id: accountPayoutId,
    overpayment_amount: inflow.overpaymentAmount.toFixed(),
    matched_at: iso(inflow.matchedAt ?? null),
    arrived_at: iso(inflow.arrivedAt),
    created_at: iso(inflow.createdAt),
  };
}

function toPayoutSummary(payout: Payout): z.output<typeof payoutSummaryOut> {
  return {
    id: payout.id,
    status: payout.status,
    received_amount: payout.receivedAmount.toFixed(),
    settlement_amount: payout.settlementAmount.toFixed(),
    settlement_currency: payout.settlementCurrency,
  };
}

const note = z.string().trim().min(1).max(1000);

/** Mounted as `admin.settlement` in `src/router.ts`. */
export const settlementAdminRouter = router({
  /** HELD and UNMATCHED inflows still waiting for a decision, oldest first. */
  inflows: adminProcedure
    .input(
      pageQuery
        .extend({ tenant_id: z.string().optional(), state: z.enum(['HELD', 'UNMATCHED']).optional() })
        .strict()
        .default({ limit: 20 }),
    )
    .output(pageOf(adminInflowOut))
    .query(async ({ ctx, input }) => {
      const page = await inflowsNeedingAttention(
        ctx.em,
        { tenantId: input.tenant_id, state: input.state },
        { limit: input.limit, cursor: input.cursor, cursorKey: ctx.deps.secrets.cursorKey },
      );
      return { data: page.items.map((r) => toAdminInflow(r.inflow, r.accountPayoutId)), meta: page.meta };
    }),

  /** Attributes an undecided inflow to a PENDING_PAYMENT payout of the same tenant and currency. */
  attribute: adminProcedure
    .meta({ role: 'operator' })
    .input(
      z.strictObject({ inflow_id: z.string().min(1), payout_id: z.string().min(1), note: note.optional() }),
    )
    .output(z.object({ inflow: adminInflowOut, payout: payoutSummaryOut }))
    .mutation(async ({ ctx, input }) => {
      const result = await ctx.commit(async (em) => {
        await attributeInflow(em, {
          inflowId: input.inflow_id,
          payoutId: input.payout_id,
          now: ctx.deps.clock.now(),
        });
        // Attribution writes with plain statements: read the row as it now is, not the entity as loaded.
        const inflow = await em.findOneOrFail(Inflow, input.inflow_id, {
          populate: ['payout'],
          refresh: true,
        });
        return { inflow: toAdminInflow(inflow), payout: toPayoutSummary(inflow.payout!) };
      });
      ctx.log.info(
        {
          action: 'settlement.attribute',
          inflow: input.inflow_id,
          payout: input.payout_id,
          note: input.note,
        },
        'operator attributed an inflow',
      );
      return result;
    }),

  /** Fails a payout held for review; its refund follows from the refunds job. */
  failPayout: adminProcedure
    .meta({ role: 'operator' })
    .input(z.strictObject({ payout_id: z.string().min(1), note: note.optional() }))
    .output(z.object({ payout: payoutSummaryOut }))
    .mutation(async ({ ctx, input }) => {
      const result = await ctx.commit(async (em) => ({
        payout: toPayoutSummary(
          await failHeldPayout(em, { payoutId: input.payout_id, now: ctx.deps.clock.now() }),
        ),
      }));
      ctx.log.info(
        { action: 'settlement.fail_payout', payout: input.payout_id, note: input.note },
        'operator failed a held payout',
      );
      return result;
    }),

  /** Records that undecided money was sent back to the merchant outside the service. */
  returnInflow: adminProcedure
    .meta({ role: 'operator' })
    .input(z.strictObject({ inflow_id: z.string().min(1), note }))
    .output(z.object({ inflow: adminInflowOut }))
    .mutation(async ({ ctx, input }) => {
      const result = await ctx.commit(async (em) => ({
        inflow: toAdminInflow(
          await returnInflow(em, { inflowId: input.inflow_id, now: ctx.deps.clock.now() }),
        ),
      }));
      ctx.log.info(
        { action: 'settlement.return_inflow', inflow: input.inflow_id, note: input.note },
        'operator recorded an inflow as returned',
      );
      return result;
    }),
});
