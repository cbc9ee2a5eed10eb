import { z } from 'zod';
import { proposeMove } from '#src/approvals/service.ts';
import { approvalOut, toApprovalViews } from '#src/approvals/view.ts';
import { pageOf, pageQuery, paginate } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { iso, noInput, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { Operator } from './entities.ts';
import { changeableOperator, isRaise, roleChanges, roleGrantNeedsApproval } from './role-change.ts';
import { ROLES } from './roles.ts';
import { createOperator, revokeOperator } from './service.ts';

const operatorIdentityOut = z.object({ id: z.string(), name: z.string(), role: z.enum(ROLES) });

const operatorOut = operatorIdentityOut.extend({
  /** The visible start of the operator's token; null for root, whose token is ADMIN_TOKEN. */
  token_prefix: z.string().nullable(),
  created_by: z.string().nullable(),
  created_at: timestampOut,
  revoked_at: timestampOut.nullable(),
});

const toOperator = (o: Operator): z.output<typeof operatorOut> => ({
  id: o.id,
  name: o.name,
  role: o.role,
  token_prefix: o.tokenPrefix ?? null,
  created_by: o.createdBy ?? null,
  created_at: iso(o.createdAt),
  revoked_at: iso(o.revokedAt ?? null),
});

/** `admin.me` and `admin.operators.*`: who is signed in, and the operators themselves (admins manage them). */
export const operatorAdminRouter = router({
  /** The operator behind the bearer token: what a console shows and which buttons it offers. */
  me: adminProcedure
    .meta({ role: 'viewer' })
    .input(noInput)
    .output(operatorIdentityOut)
    .query(({ ctx }) => ({ id: ctx.operator.id, name: ctx.operator.name, role: ctx.operator.role })),

  operators: router({
    /** Operators, newest first; revoked ones too unless `active` is set. */
    list: adminProcedure
      .meta({ role: 'viewer', lagTolerant: true })
      .input(pageQuery.extend({ active: z.boolean().optional() }).strict().default({ limit: 20 }))
      .output(pageOf(operatorOut))
      .query(async ({ ctx, input }) => {
        const page = await paginate(ctx.em, Operator, {
          where: input.active ? { revokedAt: null } : {},
          list: `admin:operators:${input.active ? 'active' : '*'}`,
          limit: input.limit,
          cursor: input.cursor,
          cursorKey: ctx.deps.secrets.cursorKey,
        });
        return { data: page.items.map(toOperator), meta: page.meta };
      }),

    /**
     * A new operator; its token is in this response and nowhere else, ever. Once two admins exist,
     * an approver or admin is created as a viewer with a proposal (`approval`) to raise it, which
     * another admin approves; `role` is the role it has now.
     */
    create: adminProcedure
      .meta({ role: 'admin' })
      .input(z.strictObject({ name: z.string().trim().min(1).max(100), role: z.enum(ROLES) }))
      .output(operatorIdentityOut.extend({ token: z.string(), approval: approvalOut.nullable() }))
      .mutation(async ({ ctx, input }) => {
        const guarded = await roleGrantNeedsApproval(ctx.em, input.role);
        const created = await ctx.commit(async (em) => {
          const role = guarded ? 'viewer' : input.role;
          const { operator, token } = await createOperator(em, {
            ...input,
            role,
            createdBy: ctx.operator.id,
          });
          return { id: operator.id, name: operator.name, role: operator.role, token };
        });
        if (!guarded) return { ...created, approval: null };
        const proposal = await proposeMove(
          ctx,
          roleChanges['operator.role'],
          { operator_id: created.id, role: input.role },
          `new operator ${created.name} as ${input.role}`,
        );
        return { ...created, approval: (await toApprovalViews(ctx.em, [proposal]))[0]! };
      }),

    /**
     * Changes an operator's role. Lowering it is immediate (a security action, like revoking).
     * Raising it to approver or admin, once two admins exist, is a proposal (`approval`) another
     * admin approves; otherwise immediate. The same role again changes nothing.
     */
    role: adminProcedure
      .meta({ role: 'admin' })
      .input(
        z.strictObject({
          operator_id: z.string().min(1).max(64),
          role: z.enum(ROLES),
          note: z.string().trim().min(1).max(1000).optional(),
        }),
      )
      .output(z.object({ operator: operatorOut, approval: approvalOut.nullable() }))
      .mutation(async ({ ctx, input }) => {
        const current = await changeableOperator(ctx.em, input.operator_id);
        if (isRaise(current.role, input.role) && (await roleGrantNeedsApproval(ctx.em, input.role))) {
          const proposal = await proposeMove(
            ctx,
            roleChanges['operator.role'],
            { operator_id: current.id, role: input.role },
            input.note ?? `raise ${current.name} from ${current.role} to ${input.role}`,
          );
          return { operator: toOperator(current), approval: (await toApprovalViews(ctx.em, [proposal]))[0]! };
        }
        return ctx.commit(async (em) => {
          const operator = await changeableOperator(em, input.operator_id);
          if (operator.role === input.role) ctx.audit.unchanged();
          operator.role = input.role;
          await em.flush();
          return { operator: toOperator(operator), approval: null };
        });
      }),

    /** Revokes an operator: its token stops working at once; its history stays. */
    revoke: adminProcedure
      .meta({ role: 'admin' })
      .input(z.strictObject({ operator_id: z.string().min(1).max(64) }))
      .output(operatorOut)
      .mutation(({ ctx, input }) =>
        ctx.commit(async (em) => {
          const { operator, changed } = await revokeOperator(em, {
            operatorId: input.operator_id,
            revokedBy: ctx.operator.id,
            now: ctx.deps.clock.now(),
          });
          if (!changed) ctx.audit.unchanged();
          return toOperator(operator);
        }),
      ),
  }),
});
