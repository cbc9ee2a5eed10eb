import { defineEntity, type InferEntity, p } from '@mikro-orm/postgresql';
import type { ApprovalStatus } from '#machines/approval.machine.ts';
import { idColumn, timestamps } from '#src/db/columns.ts';
import { MONEY_MOVES } from './money-moves.ts';

export const APPROVAL_STATUSES = [
  'PENDING',
  'APPROVED',
  'REJECTED',
  'EXPIRED',
  'FAILED',
] as const satisfies readonly ApprovalStatus[];

export { MONEY_MOVES, type MoneyMove } from './money-moves.ts';

/**
 * Changes that move no money but need a second admin all the same: an approval rule set (made or
 * changed), and an operator's role raised to approver or admin once two admins exist.
 */
export const ADMIN_CHANGES = ['approval_rule.set', 'operator.role'] as const;
export type AdminChange = (typeof ADMIN_CHANGES)[number];

/** Everything a proposal can be of. */
export const APPROVAL_ACTIONS = [...MONEY_MOVES, ...ADMIN_CHANGES] as const;
export type ApprovalAction = (typeof APPROVAL_ACTIONS)[number];

/**
 * A proposal to move money (four eyes): what to do, why, who proposed it, and how it ended. Its
 * status is owned by `machines/approval.machine.ts` through the engine, like every other status.
 */
export const Approval = defineEntity({
  name: 'Approval',
  tableName: 'approvals',
  indexes: [
    { name: 'approvals_status_created_idx', properties: ['status', 'createdAt', 'id'] },
    // An operator's own proposals (the console's Approvals, Mine).
    { name: 'approvals_proposer_created_idx', properties: ['proposerId', 'createdAt', 'id'] },
    {
      name: 'approvals_pending_expiry_idx',
      expression:
        'create index "approvals_pending_expiry_idx" on "approvals" ("expires_at") where "status" = \'PENDING\'',
    },
  ],
  properties: {
    id: idColumn(),
    status: p.enum(APPROVAL_STATUSES),
    snapshot: p.json<Record<string, unknown>>(),
    action: p.enum(APPROVAL_ACTIONS),
    /** The action's arguments, as the admin procedure took them (without the note). */
    args: p.json<Record<string, unknown>>(),
    /** Ids of the objects the action concerns (inflow, payout, refund). */
    targetIds: p.array().$type<string[]>(),
    /** Why the proposer wants it. */
    note: p.text(),
    proposerId: p.uuid(),
    /** Who approved or rejected it (or approved in vain: FAILED). */
    deciderId: p.uuid().nullable(),
    decisionNote: p.text().nullable(),
    failureCode: p.string().length(64).nullable(),
    failureReason: p.text().nullable(),
    /** What it put at stake when proposed: `tenantId`, `amount`, `currency`, `targetState` (`./stakes.ts`). */
    stake: p.json<Record<string, string | null>>().nullable(),
    /** What the action returned when it ran. */
    result: p.json<Record<string, unknown>>().nullable(),
    /** How many distinct approvers it needs, and the roles they may have: its rule's, when proposed. */
    requiredApprovers: p.integer().default(1),
    approverRoles: p.array().$type<string[]>().defaultRaw(`'{approver,admin}'`),
    /** The approval rule that set what it needs; null for the default. */
    ruleId: p.uuid().nullable(),
    expiresAt: p.datetime(),
    decidedAt: p.datetime().nullable(),
    ...timestamps(),
  },
});
export type Approval = InferEntity<typeof Approval>;
