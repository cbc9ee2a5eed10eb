import { z } from 'zod';
import { complianceModelOut } from '#src/docs/compliance.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { iso, noInput, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { COUNTED_TABLES, caseCounts, stateCounts, withCounts } from './counts.ts';
import { EXCEPTION_QUEUES, exceptionQueues, QUEUE_INFO } from './exceptions.ts';
import { complianceModelOf } from './model.ts';
import { overdueHours, overdueVariable } from './queues.ts';

/**
 * `admin.machines` and `admin.exceptions`: what the operators' console shows on its Machines and
 * Exceptions pages. Both are reads (role `viewer`). Their output shapes are a contract with the
 * console: add fields, never rename or remove one.
 */

/**
 * `admin.machines` output:
 *
 *     { counted_at: ISO time,
 *       money_places: [{ code, label, text, color }],        // where money can be, in words
 *       actors: [{ code, label, text, color }],              // who can cause transitions
 *       machines: [{ name, title, summary, source, holds_money, counted,
 *                    states: [{ path, key, parent, children, initial, final, description,
 *                               money, count,             // count: objects in it now
 *                               cases: [{ code, label, money, description, ledger, test, count }],
 *                               waiting }],               // cases: where the ledger tells the money apart
 *                    transitions: [{ number, from, from_any, to, stays, event, guard: { code, text } | null,
 *                                    description, by, effects, causes, caused_by, diagram_edges }],
 *                    guards: [{ name, holds, fails }], thresholds: [{ name, value, display, source }],
 *                    diagram: { svg } }],                  // svg: the path of /docs/machines/<name>.svg
 *       links: [{ from: { machine, transition }, to: { kind, machine, event, transitions, note, text } }] }
 *
 * `count` of a state with inner states is the sum of theirs; it is null in a machine whose objects
 * are not counted (`counted: false`). Field meanings: `src/docs/compliance.ts`.
 */
export const machinesOut = complianceModelOut.extend({
  counted_at: timestampOut,
  machines: z.array(
    complianceModelOut.shape.machines.element.extend({
      /** Whether its states carry live counts. */
      counted: z.boolean(),
    }),
  ),
});

/**
 * `admin.exceptions` output:
 *
 *     { counted_at: ISO time,
 *       queues: [{ code, title, description, machine, state, since, list,
 *                  count,                 // objects waiting now
 *                  oldest_at,             // ISO time the oldest started waiting; null when empty
 *                  oldest_age_seconds,    // counted_at - oldest_at, whole seconds; null when empty
 *                  overdue_after_hours,   // the queue's overdue age in force (OVERDUE_<QUEUE>_HOURS)
 *                  overdue_setting,       // that variable's name
 *                  overdue,               // objects that have waited longer than that
 *                  overdue_since,         // ISO time before which a waiting object is overdue
 *                  afterwards }] }        // what the service does on its own once one is overdue
 *
 * Queues, always all of them and in this order: PAYOUTS_HELD_UNDERPAID, PAYOUTS_HELD_PAYEE_NAME, INFLOWS_UNMATCHED,
 * REFUNDS_FAILED, MONEY_HELD_NO_REFUND_DESTINATION, PAYOUTS_OVERPAYMENT_TO_RETURN, WEBHOOK_DELIVERIES_DEAD,
 * APPROVALS_PENDING, RECONCILIATION_BREAKS, OUT_OF_BALANCE. `list` names the
 * `admin.*` query that lists the queue's objects (null when none does yet); `machine` and `state`
 * say where they are in the compliance view.
 */
export const exceptionsOut = z.object({
  counted_at: timestampOut,
  queues: z.array(
    z.object({
      code: z.enum(EXCEPTION_QUEUES),
      title: z.string(),
      description: z.string(),
      machine: z.string(),
      state: z.string(),
      since: z.string(),
      list: z.string().nullable(),
      count: z.number().int(),
      oldest_at: timestampOut.nullable(),
      oldest_age_seconds: z.number().int().nullable(),
      overdue_after_hours: z.number().int(),
      overdue_setting: z.string(),
      overdue: z.number().int(),
      overdue_since: timestampOut,
      afterwards: z.string(),
    }),
  ),
});

export const complianceAdminRouter = router({
  /** Every machine in plain words (the compliance view of `/docs/machines`), with live counts per state. */
  machines: adminProcedure
    .meta({ role: 'viewer', lagTolerant: true })
    .input(noInput)
    .output(machinesOut)
    .query(async ({ ctx }) => {
      const model = complianceModelOf(ctx.deps.config, ctx.deps.corridors);
      const counted = withCounts(
        model,
        await stateCounts(ctx.readSql, model),
        await caseCounts(ctx.readSql, model),
      );
      return {
        ...counted,
        counted_at: iso(ctx.deps.clock.now()),
        machines: counted.machines.map((m) => ({ ...m, counted: m.name in COUNTED_TABLES })),
      };
    }),

  /** The queues where money waits for a person: how many objects each holds, and the oldest's age. */
  exceptions: adminProcedure
    .meta({ role: 'viewer', lagTolerant: true })
    .input(noInput)
    .output(exceptionsOut)
    .query(async ({ ctx }) => {
      const now = ctx.deps.clock.now();
      const hours = overdueHours(ctx.deps.config);
      const queues = await exceptionQueues(ctx.readSql, { now, hours });
      return {
        counted_at: iso(now),
        queues: queues.map((q) => ({
          code: q.queue,
          ...QUEUE_INFO[q.queue],
          overdue_after_hours: hours[q.queue],
          overdue_setting: overdueVariable(q.queue),
          overdue: q.overdue,
          overdue_since: iso(new Date(now.getTime() - hours[q.queue] * 3_600_000)),
          afterwards: QUEUE_INFO[q.queue].overdue.afterwards,
          count: q.count,
          oldest_at: q.oldestAt ? iso(q.oldestAt) : null,
          oldest_age_seconds: q.oldestAt
            ? Math.max(0, Math.floor((now.getTime() - q.oldestAt.getTime()) / 1000))
            : null,
        })),
      };
    }),
});
