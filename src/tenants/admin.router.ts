import { z } from 'zod';
import { pageOf, pageQuery, paginate } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { iso, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { PAYEE_POLICIES } from '#src/payees/name-match.ts';
import { ApiKey, Tenant } from './entities.ts';
import { MERCHANT_SCOPES } from './scopes.ts';
import { approveTenant, createTenant, issueApiKey, revokeApiKey } from './service.ts';

const tenantOut = z.object({
  id: z.string(),
  name: z.string(),
  payouts_approved: z.boolean(),
  /** What a payout whose payee name does not match becomes: `allow`, `hold` or `refuse` (docs/payee-check.md). */
  payee_name_policy: z.enum(PAYEE_POLICIES),
});
const toTenant = (t: Tenant) => ({
  id: t.id,
  name: t.name,
  payouts_approved: t.payoutsApproved,
  payee_name_policy: t.payeeNamePolicy,
});

/** A key as operators see it: never the key itself nor its hash, only its visible start. */
const keyOut = z.object({
  id: z.string(),
  prefix: z.string(),
  scopes: z.array(z.string()),
  created_at: timestampOut,
  revoked_at: timestampOut.nullable(),
});
const toKey = (k: ApiKey): z.output<typeof keyOut> => ({
  id: k.id,
  prefix: k.prefix,
  scopes: k.scopes,
  created_at: iso(k.createdAt),
  revoked_at: iso(k.revokedAt ?? null),
});

/** `admin.tenant.*` and `admin.key.*`: provisioning, used by the admin CLI. */
export const tenantAdminRouter = router({
  tenant: router({
    create: adminProcedure
      .meta({ role: 'operator' })
      .input(
        z.strictObject({
          name: z.string().trim().min(1).max(200),
          approved: z.boolean().default(false),
          payee_name_policy: z.enum(PAYEE_POLICIES).default('allow'),
        }),
      )
      .output(tenantOut)
      .mutation(({ ctx, input }) =>
        ctx.commit(async (em) =>
          toTenant(
            await createTenant(em, {
              name: input.name,
              approved: input.approved,
              payeeNamePolicy: input.payee_name_policy,
            }),
          ),
        ),
      ),
    approve: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ tenant_id: z.uuid() }))
      .output(tenantOut)
      .mutation(({ ctx, input }) =>
        ctx.commit(async (em) => toTenant(await approveTenant(em, input.tenant_id))),
      ),
    /** Tenants, newest first. */
    list: adminProcedure
      .meta({ lagTolerant: true })
      .input(pageQuery.strict().default({ limit: 20 }))
      .output(pageOf(tenantOut))
      .query(async ({ ctx, input }) => {
        const page = await paginate(ctx.em, Tenant, {
          where: {},
          list: 'admin:tenants',
          limit: input.limit,
          cursor: input.cursor,
          cursorKey: ctx.deps.secrets.cursorKey,
        });
        return { data: page.items.map(toTenant), meta: page.meta };
      }),
  }),
  key: router({
    /** A tenant's API keys, newest first, revoked ones included. */
    list: adminProcedure
      .meta({ role: 'viewer', lagTolerant: true })
      .input(pageQuery.extend({ tenant_id: z.uuid() }).strict())
      .output(pageOf(keyOut))
      .query(async ({ ctx, input }) => {
        const page = await paginate(ctx.em, ApiKey, {
          where: { tenant: input.tenant_id },
          list: `admin:keys:${input.tenant_id}`,
          limit: input.limit,
          cursor: input.cursor,
          cursorKey: ctx.deps.secrets.cursorKey,
        });
        return { data: page.items.map(toKey), meta: page.meta };
      }),
    issue: adminProcedure
      .meta({ role: 'operator' })
      .input(
        z.strictObject({ tenant_id: z.uuid(), scopes: z.array(z.enum(MERCHANT_SCOPES)).min(1).optional() }),
      )
      .output(
        z.object({ id: z.string(), api_key: z.string(), prefix: z.string(), scopes: z.array(z.string()) }),
      )
      .mutation(({ ctx, input }) =>
        ctx.commit(async (em) => {
          const { key, plaintext } = await issueApiKey(em, {
            tenantId: input.tenant_id,
            scopes: input.scopes,
          });
          return { id: key.id, api_key: plaintext, prefix: key.prefix, scopes: key.scopes };
        }),
      ),
    revoke: adminProcedure
      .meta({ role: 'operator' })
      .input(z.strictObject({ key_id: z.uuid() }))
      .output(z.object({ id: z.string(), revoked_at: z.string() }))
      .mutation(({ ctx, input }) =>
        ctx.commit(async (em) => {
          const key = await revokeApiKey(em, input.key_id, ctx.deps.clock.now());
          return { id: key.id, revoked_at: (key.revokedAt ?? ctx.deps.clock.now()).toISOString() };
        }),
      ),
  }),
});
