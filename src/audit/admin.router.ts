import { z } from 'zod';
import { createdAtFilter, listName, pageOf, pageQuery } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { idIn, iso, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import type { AuditEntry } from './entities.ts';
import { listAudit } from './service.ts';

/** One row of the audit trail as operators and the console read it. */
export const auditEntryOut = z.object({
  id: z.string(),
  operator_id: z.string(),
  operator_name: z.string(),
  operator_role: z.string(),
  /** The `admin.*` procedure called, such as `admin.settlement.attribute`. */
  action: z.string(),
  target_ids: z.array(z.string()),
  /** The call's input, secrets replaced by `[redacted]`. */
  arguments: z.record(z.string(), z.unknown()),
  outcome: z.string(),
  request_id: z.string(),
  created_at: timestampOut,
});

export function toAuditEntry(e: AuditEntry): z.output<typeof auditEntryOut> {
  return {
    id: e.id,
    operator_id: e.operatorId,
    operator_name: e.operatorName,
    operator_role: e.operatorRole,
    action: e.action,
    target_ids: e.targetIds,
    arguments: e.arguments,
    outcome: e.outcome,
    request_id: e.requestId,
    created_at: iso(e.createdAt),
  };
}

/** `admin.audit.*`: the trail of every change operators made through `admin.*`. */
export const auditAdminRouter = router({
  audit: router({
    /** Audit rows, newest first; filters combine. `since` is inclusive, `until` exclusive. */
    list: adminProcedure
      .meta({ lagTolerant: true })
      .input(
        pageQuery
          .extend({
            operator_id: idIn.optional(),
            target_id: idIn.optional(),
            since: createdAtFilter.optional(),
            until: createdAtFilter.optional(),
          })
          .strict()
          .default({ limit: 20 }),
      )
      .output(pageOf(auditEntryOut))
      .query(async ({ ctx, input }) => {
        const filter = {
          operatorId: input.operator_id,
          targetId: input.target_id,
          since: input.since,
          until: input.until,
        };
        const page = await listAudit(ctx.em, filter, {
          list: listName('admin:audit', filter),
          limit: input.limit,
          cursor: input.cursor,
          cursorKey: ctx.deps.secrets.cursorKey,
        });
        return { data: page.items.map(toAuditEntry), meta: page.meta };
      }),
  }),
});
