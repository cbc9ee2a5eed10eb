import { z } from 'zod';
import { caseOfPayout } from '#src/compliance/counts.ts';
import { type HeldUnderpaidRow, heldUnderpaidPage, queuePage } from '#src/compliance/exceptions.ts';
import { complianceModelOf } from '#src/compliance/model.ts';
import { toDate } from '#src/db/sql.ts';
import { Outflow } from '#src/dispatch/entities.ts';
import { outflowOut, toOutflowResource } from '#src/dispatch/resource.ts';
import { type ComplianceMachine, complianceModelOut } from '#src/docs/compliance.ts';
import { AppError } from '#src/http/errors.ts';
import { pageOf, pageQuery } from '#src/http/pagination.ts';
import { adminProcedure } from '#src/http/procedures.ts';
import { idParam, iso, moneyJson, moneyOut, timestampOut } from '#src/http/schemas.ts';
import { router } from '#src/http/trpc.ts';
import { isUuid } from '#src/lib/ids.ts';
import { Operator } from '#src/operators/entities.ts';
import { Refund } from '#src/refunds/entities.ts';
import { refundOut, toRefundResource } from '#src/refunds/resource.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { inflowOut, toInflowResource } from '#src/settlement/resource.ts';
import { Tenant } from '#src/tenants/entities.ts';
import { WebhookDeliveryAttempt } from '#src/webhooks/delivery.entities.ts';
import { deliveryRecordOut, toDeliveryRecord } from '#src/webhooks/delivery.schemas.ts';
import { payoutOut, readPayouts, type StatusLogView, statusLogOut, toPayoutResource } from './resource.ts';

/** Most delivery records a payout's detail shows (newest first); a payout sends a handful of events. */
const DELIVERY_RECORDS = 100;

const operatorRef = z.object({ id: z.string(), name: z.string() });

/** One timeline row as operators see it: the merchant's row plus who decided, when a person did. */
const adminTimelineRowOut = statusLogOut.extend({
  /** The operator whose action wrote the row (`metadata.operator_id`; with four eyes, the approver). */
  operator: operatorRef.nullable(),
  /** With four eyes, the operator who proposed the action (`metadata.proposer_id`). */
  proposer: operatorRef.nullable(),
  /** The approval under which the action ran (`metadata.approval_id`), when four eyes applied. */
  approval_id: z.string().nullable(),
  /** The transition of the payout machine this row records (its number on the diagram). */
  transition: z.number().int().nullable(),
});

/** The way a payout went through its machine, as ids of the payout diagram's boxes and arrows. */
const takenPathOut = z.object({
  machine: z.literal('payout'),
  /** `payout/<state path>` of every state visited, in order (a state visited twice appears twice). */
  states: z.array(z.string()),
  /** The SVG ids of the arrows taken, in order. */
  edges: z.array(z.string()),
});

/** A payout held underpaid: money arrived, less than asked; a person decides (the Exceptions queue). */
const heldUnderpaidOut = z.object({
  payout_id: z.string(),
  tenant_id: z.string(),
  settlement_currency: z.string(),
  settlement_network: z.string().nullable(),
  /** What the merchant was told to pay. */
  settlement_amount: moneyOut,
  /** The sum of the settlements attributed to it so far (less than settlement_amount). */
  received_amount: moneyOut,
  created_at: timestampOut,
  /** When its first underpaid settlement arrived: since when it waits. */
  held_since: timestampOut.nullable(),
});

const toHeldUnderpaid = (r: HeldUnderpaidRow): z.output<typeof heldUnderpaidOut> => ({
  payout_id: r.id,
  tenant_id: r.tenant_id,
  settlement_currency: r.settlement_currency,
  settlement_network: r.settlement_network,
  settlement_amount: moneyJson(r.settlement_amount),
  received_amount: moneyJson(r.received_amount),
  created_at: iso(toDate(r.created_at)),
  held_since: r.held_since === null ? null : iso(toDate(r.held_since)),
});

export const adminPayoutOut = z.object({
  /** Every field the merchant sees, exactly as `GET /v1/payouts/{id}` shows it. */
  payout: payoutOut,
  tenant: z.object({ id: z.string(), name: z.string() }),
  timeline: z.array(adminTimelineRowOut),
  /** The merchant's Inflow resource plus where it is in its machine, which merchants do not see. */
  inflows: z.array(
    inflowOut.extend({
      /** The inflow machine's state (`CONFIRMED`, `MATCHED`, `HELD`, `RETURNED`...). */
      state: z.string(),
      /** Its inner state when it has one (`attributed` or `unattributed` of `HELD`), else null. */
      sub_state: z.string().nullable(),
    }),
  ),
  outflows: z.array(outflowOut),
  refund: refundOut.nullable(),
  /** Webhook delivery records of the payout's events, newest first. */
  deliveries: z.array(deliveryRecordOut),
  path: takenPathOut,
  /**
   * Where the payout's money is, when its state alone cannot say (a FAILED payout): the money case
   * the ledger tells, as the Machines page counts it; null in every other state.
   */
  money_case: complianceModelOut.shape.machines.element.shape.states.element.shape.cases.element
    .omit({ count: true, test: true })
    .nullable(),
});

/** The inner state of a persisted machine snapshot (`{ value: { HELD: 'attributed' } }`), if any. */
function innerState(snapshot: Record<string, unknown>): string | null {
  const value = snapshot['value'];
  if (!value || typeof value !== 'object') return null;
  const inner = Object.values(value as Record<string, unknown>)[0];
  return typeof inner === 'string' ? inner : null;
}

/** A money case as the payout page shows it: without the Machines page's count and its test. */
const withoutCountAndTest = ({
  count: _count,
  test: _test,
  ...shown
}: ComplianceMachine['states'][number]['cases'][number]) => shown;

const top = (path: string): string => path.split('.')[0]!;

/** The state a transition into `path` ends in: its initial inner state, down to a leaf. */
function settle(machine: ComplianceMachine, path: string): string {
  let state = machine.states.find((s) => s.path === path);
  while (state && state.children.length > 0) {
    state = machine.states.find((s) => state!.children.includes(s.path) && s.initial) ?? undefined;
  }
  return state?.path ?? path;
}

/** Whether a transition declared on `from` applies in the state `current`. */
const appliesIn = (from: string, current: string | null): boolean =>
  current !== null && (from === current || current.startsWith(`${from}.`));

/**
 * The path a payout took, read from its timeline: each row is matched to the payout machine's
 * transition that writes it (same statuses, the row's reason code, leaving the state the payout
 * was in), and the arrow drawn for it from that state. Rows are the machine's own records, so
 * every row finds its transition; a row that would not (a machine changed under old rows) is
 * shown unmatched rather than guessed.
 */
export function takenPath(
  machine: ComplianceMachine,
  timeline: readonly Pick<StatusLogView, 'from_status' | 'to_status' | 'reason_code'>[],
): { path: z.output<typeof takenPathOut>; transitions: (number | null)[] } {
  const states: string[] = [];
  const edges: string[] = [];
  const transitions: (number | null)[] = [];
  let current: string | null = null;
  for (const row of timeline) {
    const candidates = machine.transitions.filter(
      (t) =>
        (row.from_status === null ? t.from === null : t.from !== null && top(t.from) === row.from_status) &&
        top(t.to) === row.to_status,
    );
    const rank = (t: (typeof candidates)[number]): number =>
      (t.effects.timeline.includes(row.reason_code)
        ? 4
        : t.effects.timeline.some((r) => r.startsWith('('))
          ? 2
          : 0) + (t.from === null || appliesIn(t.from, current) ? 1 : 0);
    const best = candidates.reduce<(typeof candidates)[number] | null>(
      (a, t) => (a === null || rank(t) > rank(a) ? t : a),
      null,
    );
    if (!best || rank(best) < 2) {
      transitions.push(null);
      current = settle(machine, row.to_status);
      states.push(`payout/${current}`);
      continue;
    }
    transitions.push(best.number);
    const edge =
      best.diagram_edges.find((e) => e.from === current) ??
      best.diagram_edges.find((e) => e.from !== null && appliesIn(e.from, current)) ??
      best.diagram_edges[0];
    if (edge) edges.push(edge.id);
    if (!best.stays) current = settle(machine, best.to);
    if (current !== null) states.push(`payout/${current}`);
  }
  return { path: { machine: 'payout', states, edges }, transitions };
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** `admin.payouts.*`: one payout whole, for the console's detail page. */
export const payoutAdminRouter = router({
  payouts: router({
    /**
     * Payouts held underpaid (PENDING_PAYMENT.held), oldest first, one row per payout: the
     * Exceptions queue PAYOUTS_HELD_UNDERPAID, read from its partial index.
     */
    heldUnderpaid: adminProcedure
      .meta({ role: 'viewer', lagTolerant: true })
      .input(pageQuery.strict().default({ limit: 20 }))
      .output(pageOf(heldUnderpaidOut))
      .query(async ({ ctx, input }) => {
        const page = await queuePage<HeldUnderpaidRow>(
          ctx.deps,
          heldUnderpaidPage,
          { list: 'admin:payouts:held-underpaid:asc', ...input },
          ctx.readSql,
        );
        return { data: page.items.map(toHeldUnderpaid), meta: page.meta };
      }),
    /**
     * A payout of any tenant with everything that happened to it: the merchant's fields, the
     * timeline with the operators who acted, inflows, outflows, refund, webhook deliveries, and
     * the path it took through its machine.
     */
    get: adminProcedure
      .input(z.strictObject({ payout_id: idParam }))
      .output(adminPayoutOut)
      .query(async ({ ctx, input }) => {
        const [view] = isUuid(input.payout_id) ? await readPayouts(ctx.deps.sql, [input.payout_id]) : [];
        if (!view) throw new AppError('PAYOUT_NOT_FOUND');
        const em = ctx.em;
        const model = complianceModelOf(ctx.deps.config, ctx.deps.corridors);
        const [tenant, inflows, outflows, refund, deliveries, moneyCase] = await Promise.all([
          em.findOneOrFail(Tenant, view.tenant_id),
          em.find(Inflow, { payout: view.id }, { orderBy: { createdAt: 'asc', id: 'asc' } }),
          em.find(Outflow, { payout: view.id }, { orderBy: { attemptNumber: 'asc' } }),
          em.findOne(Refund, { payout: view.id }),
          em.find(
            WebhookDeliveryAttempt,
            { tenant: view.tenant_id, payoutId: view.id },
            { orderBy: { createdAt: 'desc', id: 'desc' }, limit: DELIVERY_RECORDS },
          ),
          caseOfPayout(ctx.deps.sql, model, view),
        ]);
        const operatorIds = [
          ...new Set(
            view.timeline
              .flatMap((r) => [text(r.metadata?.['operator_id']), text(r.metadata?.['proposer_id'])])
              .filter((id) => id !== null && isUuid(id)),
          ),
        ];
        const operators =
          operatorIds.length === 0 ? [] : await em.find(Operator, { id: { $in: operatorIds } });
        const names = new Map(operators.map((o) => [o.id, o.name]));
        const payoutMachine = model.machines.find((m) => m.name === 'payout')!;
        const { path, transitions } = takenPath(payoutMachine, view.timeline);
        const resource = toPayoutResource(view);
        return {
          payout: resource,
          tenant: { id: tenant.id, name: tenant.name },
          timeline: resource.status_timeline.map((row, i) => {
            const operatorId = text(row.metadata?.['operator_id']);
            const proposerId = text(row.metadata?.['proposer_id']);
            return {
              ...row,
              operator: operatorId ? { id: operatorId, name: names.get(operatorId) ?? operatorId } : null,
              proposer: proposerId ? { id: proposerId, name: names.get(proposerId) ?? proposerId } : null,
              approval_id: text(row.metadata?.['approval_id']),
              transition: transitions[i] ?? null,
            };
          }),
          inflows: inflows.map((i) => ({
            ...toInflowResource(i),
            state: i.state,
            sub_state: innerState(i.snapshot),
          })),
          outflows: outflows.map(toOutflowResource),
          refund: refund ? toRefundResource(refund) : null,
          deliveries: deliveries.map(toDeliveryRecord),
          path,
          money_case: moneyCase ? withoutCountAndTest(moneyCase) : null,
        };
      }),
  }),
});
