import { z } from 'zod';
import { proposeMove } from '#src/approvals/service.ts';
import { proposalOut, toProposal } from '#src/approvals/view.ts';
import { queuePage } from '#src/compliance/exceptions.ts';
import { toDate } from '#src/db/sql.ts';
import { AppError } from '#src/http/errors.ts';
import { pageOf, pageQuery } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { idIn, iso, moneyJson, moneyOut, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { Tenant } from '#src/tenants/entities.ts';
import { type HeldPayeeRow, heldPayeePage } from './held.ts';
import { payeeMoves } from './moves.ts';
import { PAYEE_CHECKS, PAYEE_POLICIES } from './name-match.ts';

const note = z.string().trim().min(1).max(1000);

/** A payout held by the payee name check: the names side by side, for an operator's decision. */
const heldPayeeOut = z.object({
  payout_id: z.string(),
  tenant_id: z.string(),
  tenant_name: z.string(),
  destination_type: z.string(),
  destination_provider_name: z.string(),
  destination_amount: moneyOut,
  destination_currency: z.string(),
  /** The name the merchant gave. */
  given_name: z.string().nullable(),
  /** The name the institution holds; null when it knows no such account or could not answer. */
  institution_name: z.string().nullable(),
  check: z.enum(PAYEE_CHECKS).nullable(),
  created_at: timestampOut,
  /** When the check held it: since when it waits. */
  held_since: timestampOut.nullable(),
});

const toHeldPayee = (r: HeldPayeeRow): z.output<typeof heldPayeeOut> => ({
  payout_id: r.id,
  tenant_id: r.tenant_id,
  tenant_name: r.tenant_name,
  destination_type: r.destination_type,
  destination_provider_name: r.destination_provider_name,
  destination_amount: moneyJson(r.destination_amount),
  destination_currency: r.destination_currency,
  given_name: r.destination_account_name,
  institution_name: r.payee_institution_name,
  check: r.payee_check,
  created_at: iso(toDate(r.created_at)),
  held_since: r.held_since === null ? null : iso(toDate(r.held_since)),
});

const policyOut = z.object({
  tenant_id: z.string(),
  name: z.string(),
  payee_name_policy: z.enum(PAYEE_POLICIES),
});

/** `admin.payees.*`: the payee name check's queue, its decision, and each tenant's policy. */
export const payeeAdminRouter = router({
  payees: router({
    /** Payouts held by the payee name check (CREATED.payeeHeld), oldest first: the queue PAYOUTS_HELD_PAYEE_NAME. */
    held: adminProcedure
      .meta({ role: 'viewer', lagTolerant: true })
      .input(pageQuery.strict().default({ limit: 20 }))
      .output(pageOf(heldPayeeOut))
      .query(async ({ ctx, input }) => {
        const page = await queuePage<HeldPayeeRow>(
          ctx.deps,
          heldPayeePage,
          { list: 'admin:payees:held:asc', ...input },
          ctx.readSql,
        );
        return { data: page.items.map(toHeldPayee), meta: page.meta };
      }),

    /**
     * Proposes accepting the payee's name of a held payout as it is (the merchant confirmed the
     * beneficiary): once approved, the payout gets its payment instruction. To refuse it instead,
     * propose `admin.settlement.failPayout`.
     */
    accept: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ payout_id: idIn, note }))
      .output(proposalOut)
      .mutation(async ({ ctx, input }) => {
        const { note: why, ...args } = input;
        return toProposal(ctx.em, await proposeMove(ctx, payeeMoves['payee.accept'], args, why));
      }),

    /**
     * Sets a tenant's payee name policy: `allow` pays a NO_MATCH, `hold` holds it for an
     * operator's decision, `refuse` refuses it at creation. Applies to payouts created from now on.
     */
    setPolicy: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ tenant_id: z.uuid(), policy: z.enum(PAYEE_POLICIES) }))
      .output(policyOut)
      .mutation(({ ctx, input }) =>
        ctx.commit(async (em) => {
          const tenant = await em.findOne(Tenant, input.tenant_id);
          if (!tenant) throw new AppError('NOT_FOUND', { message: 'No tenant with that id.' });
          tenant.payeeNamePolicy = input.policy;
          return { tenant_id: tenant.id, name: tenant.name, payee_name_policy: tenant.payeeNamePolicy };
        }),
      ),
  }),
});
