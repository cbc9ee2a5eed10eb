import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { iso, timestampOut } from '#src/http/schemas.ts';
import { APPROVAL_ACTIONS, APPROVAL_STATUSES, type Approval } from './entities.ts';
import { approversOf, operatorNames } from './service.ts';

/** A proposal as operators, the CLI and the console see it. */
export const approvalOut = z.object({
  id: z.string(),
  /** The money move: inflow.attribute, inflow.return, payout.fail, refund.retry, refund.raise, overpayment.return... */
  action: z.enum(APPROVAL_ACTIONS),
  state: z.enum(APPROVAL_STATUSES),
  /** The move's arguments (ids), as proposed. */
  args: z.record(z.string(), z.unknown()),
  target_ids: z.array(z.string()),
  /** What it puts at stake, as it was when proposed: the tenant whose money it is, the amount, the target's state. */
  tenant_id: z.string().nullable(),
  amount: z.string().nullable(),
  currency: z.string().nullable(),
  target_state: z.string().nullable(),
  /** How many distinct approvers it needs and the roles they may have (its rule's, when proposed), and who approved so far. */
  required_approvers: z.number().int(),
  approver_roles: z.array(z.string()),
  approved_by_ids: z.array(z.string()),
  /** The approval rule that set what it needs; null for the default (one approver or admin). */
  rule_id: z.string().nullable(),
  /** Why the proposer wants it. */
  note: z.string(),
  proposer_id: z.string(),
  proposer_name: z.string().nullable(),
  /** Who approved or rejected it (for FAILED: who approved in vain); null while PENDING and once EXPIRED. */
  decided_by_id: z.string().nullable(),
  decided_by_name: z.string().nullable(),
  decision_note: z.string().nullable(),
  /** FAILED only: the catalogue code of the move's refusal, and the reason in words. */
  failure_code: z.string().nullable(),
  failure_reason: z.string().nullable(),
  /** APPROVED only: what the move returned (the inflow and payout, the refund...). */
  result: z.record(z.string(), z.unknown()).nullable(),
  created_at: timestampOut,
  expires_at: timestampOut,
  decided_at: timestampOut.nullable(),
});
export type ApprovalView = z.output<typeof approvalOut>;

/** What the five money-move procedures answer: the proposal, decided already with four eyes off. */
export const proposalOut = z.object({ approval: approvalOut });

export function toApprovalView(a: Approval, names: ReadonlyMap<string, string>): ApprovalView {
  return {
    id: a.id,
    action: a.action,
    state: a.status,
    args: a.args,
    target_ids: a.targetIds,
    tenant_id: a.stake?.['tenantId'] ?? null,
    amount: a.stake?.['amount'] ?? null,
    currency: a.stake?.['currency'] ?? null,
    target_state: a.stake?.['targetState'] ?? null,
    required_approvers: a.requiredApprovers,
    approver_roles: a.approverRoles,
    approved_by_ids: approversOf(a),
    rule_id: a.ruleId ?? null,
    note: a.note,
    proposer_id: a.proposerId,
    proposer_name: names.get(a.proposerId) ?? null,
    decided_by_id: a.deciderId ?? null,
    decided_by_name: a.deciderId ? (names.get(a.deciderId) ?? null) : null,
    decision_note: a.decisionNote ?? null,
    failure_code: a.failureCode ?? null,
    failure_reason: a.failureReason ?? null,
    result: a.result ?? null,
    created_at: iso(a.createdAt),
    expires_at: iso(a.expiresAt),
    decided_at: iso(a.decidedAt ?? null),
  };
}

/** Proposals with their operators' names, read in one query. */
export async function toApprovalViews(em: EntityManager, approvals: Approval[]): Promise<ApprovalView[]> {
  const names = await operatorNames(
    em,
    approvals.flatMap((a) => [a.proposerId, a.deciderId ?? null]),
  );
  return approvals.map((a) => toApprovalView(a, names));
}

export async function toProposal(
  em: EntityManager,
  approval: Approval,
): Promise<z.output<typeof proposalOut>> {
  const [view] = await toApprovalViews(em, [approval]);
  return { approval: view! };
}
