import { z } from 'zod';
import { findForTenant } from '#src/db/lookup.ts';
import { toDate } from '#src/db/sql.ts';
import { Outflow } from '#src/dispatch/entities.ts';
import { outflowOut, toOutflowResource } from '#src/dispatch/resource.ts';
import { AppError } from '#src/http/errors.ts';
import {
  createdAtFilter,
  decodeCursor,
  listName,
  pageFrom,
  pageOf,
  pageQuery,
} from '#src/http/pagination.ts';
import { merchantProcedure, merchantSqlProcedure } from '#src/http/procedures.ts';
import { idParam } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { PaymentInstruction } from '#src/instructions/entities.ts';
import { isUuid } from '#src/lib/ids.ts';
import { Refund } from '#src/refunds/entities.ts';
import { refundOut, toRefundResource } from '#src/refunds/resource.ts';
import { PAYOUT_STATUSES, Payout } from './entities.ts';
import {
  instructionOut,
  payoutOut,
  readPayoutPage,
  readTenantPayout,
  toInstruction,
  toPayoutPage,
  toPayoutResource,
} from './resource.ts';
import { comparableCreateRequest, createPayout, createPayoutIn } from './service.ts';

const byPayoutId = z.strictObject({ payout_id: idParam });

const payoutListIn = pageQuery
  .extend({
    status: z.enum(PAYOUT_STATUSES).optional().describe('Only payouts in this status.'),
    merchant_reference: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('Only payouts created with exactly this merchant_reference.'),
    created_after: createdAtFilter.optional().describe('Only payouts created at or after this time.'),
    created_before: createdAtFilter.optional().describe('Only payouts created before this time.'),
  })
  .strict();

export const payoutsRouter = router({
  create: merchantSqlProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/v1/payouts',
        operationId: 'createPayout',
        tags: ['Payouts'],
        summary: 'Create a payout',
        description:
          'Creates the payout in CREATED with settlement_amount 0 and payment_instruction null; the instruction is ' +
          'generated right after (event payout.pending_payment). Needs a refund destination for the settlement currency ' +
          'and a tenant approved for payouts. Optional quote_id uses a PENDING or ACCEPTED quote of the same currencies and amount.',
      },
      scope: 'payouts:write',
      exactOutput: true,
      idempotent: true,
      comparable: (raw, deps) => comparableCreateRequest(deps.corridors, raw),
      successStatus: 201,
      errors: [
        'TENANT_NOT_APPROVED',
        'REFUND_DESTINATION_REQUIRED',
        'CORRIDOR_NOT_SUPPORTED',
        'PROVIDER_CODE_UNKNOWN',
        'WEBHOOK_URL_INVALID',
        'QUOTE_NOT_FOUND',
        'QUOTE_EXPIRED',
        'QUOTE_NOT_ACCEPTABLE',
        'QUOTE_MISMATCH',
        'PAYEE_NAME_MISMATCH',
        'UPSTREAM_UNAVAILABLE',
      ],
    })
    .input(createPayoutIn)
    .output(payoutOut)
    .mutation(async ({ ctx, input }) => {
      const { resource, rendered } = await createPayout(ctx.deps, {
        tenant: ctx.principal.tenant,
        input,
        requestId: ctx.requestId,
        commit: ctx.commit,
        idempotent: ctx.idempotent,
      });
      if (rendered && ctx.response) ctx.response.rendered = rendered;
      // Committed: start instruction generation (and deliver payout.created) now, not at the next sweep.
      ctx.deps.jobs?.kick('instructions');
      ctx.deps.jobs?.kick('webhooks');
      return resource;
    }),

  list: merchantSqlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/payouts',
        operationId: 'listPayouts',
        tags: ['Payouts'],
        summary: 'List payouts, newest first, optionally filtered',
        description:
          'Filters combine (every one given must hold). created_after is inclusive and created_before exclusive, so ' +
          'consecutive windows neither overlap nor leave gaps. A cursor pages only the filters it was issued with: ' +
          'send the same filters with it, or get 400 INVALID_CURSOR.',
      },
      scope: 'payouts:read',
      exactOutput: true,
    })
    .input(payoutListIn)
    .output(pageOf(payoutOut))
    .query(async ({ ctx, input }) => {
      const cursorKey = ctx.deps.secrets.cursorKey;
      const filters = {
        status: input.status,
        merchantReference: input.merchant_reference,
        createdAfter: input.created_after,
        createdBefore: input.created_before,
      };
      const list = listName('payouts', filters);
      const after = input.cursor ? decodeCursor(cursorKey, input.cursor, list) : null;
      const tenantId = ctx.principal.tenant.id;
      const rows = await ctx.deps.reads.read(tenantId, ({ sql }) =>
        readPayoutPage(sql, { tenantId, limit: input.limit + 1, after, filters }),
      );
      const page = pageFrom(rows, {
        list,
        limit: input.limit,
        cursorKey,
        createdAtOf: (row) => toDate(row.created_at),
      });
      return toPayoutPage(page.items, page.meta);
    }),

  get: merchantSqlProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/payouts/{id}',
        operationId: 'getPayout',
        tags: ['Payouts'],
        summary: 'Get a payout with its instruction and timeline',
      },
      scope: 'payouts:read',
      exactOutput: true,
      errors: ['PAYOUT_NOT_FOUND'],
    })
    .input(z.strictObject({ id: idParam }))
    .output(payoutOut)
    .query(async ({ ctx, input }) => {
      const payout = isUuid(input.id)
        ? await readTenantPayout(ctx.deps.sql, ctx.principal.tenant.id, input.id)
        : null;
      if (!payout) throw new AppError('PAYOUT_NOT_FOUND');
      return toPayoutResource(payout);
    }),

  paymentInstruction: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/payouts/{payout_id}/payment-instruction',
        operationId: 'getPaymentInstruction',
        tags: ['Payouts'],
        summary: 'The payout’s payment instruction',
        description:
          '404 PAYMENT_INSTRUCTION_NOT_FOUND until instruction generation has run: not yet existing, not an invalid payout.',
      },
      scope: 'payouts:read',
      errors: ['PAYOUT_NOT_FOUND', 'PAYMENT_INSTRUCTION_NOT_FOUND'],
    })
    .input(byPayoutId)
    .output(instructionOut)
    .query(async ({ ctx, input }) => {
      const payout = await findForTenant(ctx.em, Payout, {
        id: input.payout_id,
        tenantId: ctx.principal.tenant.id,
        notFound: 'PAYOUT_NOT_FOUND',
      });
      // With the tenant: the read stays on the tenant's node (docs/scaling.md, Citus).
      const instruction = await ctx.em.findOne(PaymentInstruction, {
        payout: payout.id,
        tenant: payout.tenant,
      });
      if (!instruction) throw new AppError('PAYMENT_INSTRUCTION_NOT_FOUND');
      return toInstruction(instruction, payout.id);
    }),

  outflows: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/payouts/{payout_id}/outflows',
        operationId: 'listPayoutOutflows',
        tags: ['Payouts'],
        summary: 'Dispatch attempts, oldest first',
        description: 'Every attempt to pay the beneficiary, one row per attempt; a retry adds a row.',
      },
      scope: 'payouts:read',
      errors: ['PAYOUT_NOT_FOUND'],
    })
    .input(byPayoutId)
    .output(z.array(outflowOut))
    .query(async ({ ctx, input }) => {
      const payout = await findForTenant(ctx.em, Payout, {
        id: input.payout_id,
        tenantId: ctx.principal.tenant.id,
        notFound: 'PAYOUT_NOT_FOUND',
      });
      const outflows = await ctx.em.find(
        Outflow,
        { payout: payout.id, tenant: payout.tenant },
        { orderBy: { attemptNumber: 'asc' } },
      );
      return outflows.map(toOutflowResource);
    }),

  refunds: merchantProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/v1/payouts/{payout_id}/refunds',
        operationId: 'listPayoutRefunds',
        tags: ['Payouts', 'Refunds'],
        summary: 'Refunds of the payout (at most one)',
      },
      scope: 'refunds:read',
      errors: ['PAYOUT_NOT_FOUND'],
    })
    .input(byPayoutId)
    .output(z.array(refundOut))
    .query(async ({ ctx, input }) => {
      const payout = await findForTenant(ctx.em, Payout, {
        id: input.payout_id,
        tenantId: ctx.principal.tenant.id,
        notFound: 'PAYOUT_NOT_FOUND',
      });
      const refunds = await ctx.em.find(Refund, { payout: payout.id, tenant: payout.tenant });
      return refunds.map(toRefundResource);
    }),
});
