import type { EntityManager } from '@mikro-orm/postgresql';
import { type ApprovalEvent, type ApprovalStatus, approvalMachine } from '#machines/approval.machine.ts';
import type { AuditNote } from '#src/audit/service.ts';
import type { Deps } from '#src/deps.ts';
import { applyEvent, initialState, type Transition } from '#src/engine/engine.ts';
import { AppError, type ErrorCode, invalidField } from '#src/http/errors.ts';
import { type PageMeta, type PageRequest, paginate } from '#src/http/pagination.ts';
import { type Commit, roleRefusal } from '#src/http/procedures.ts';
import { isUuid, newId } from '#src/lib/ids.ts';
import type { OperatorIdentity } from '#src/operators/auth.ts';
import { Operator } from '#src/operators/entities.ts';
import { hasRole, type Role } from '#src/operators/roles.ts';
import { ADMIN_CHANGES, Approval, type ApprovalAction } from './entities.ts';
import type { MoneyMoveDef, MoveActor } from './moves.ts';
import { type Requirement, requirementFor } from './rules.ts';

/**
 * Four eyes on money moves (issue 18): a move becomes a proposal (an `approvals` row, PENDING,
 * with a note); a second operator's approval runs the move in the transaction that records the
 * approval, with the move's own checks. A proposal is made only of a move that would run now: it
 * is rehearsed first, with those same checks, and a move they refuse is refused with their error
 * and leaves nothing. A move refused at approval (the world changed meanwhile) leaves the proposal
 * FAILED with the reason, in a transaction of its own after the first rolled back, so nothing of
 * the move stays. The row lock the engine takes makes a second, concurrent approval wait and then
 * find the proposal decided: the move runs once. With FOUR_EYES=false the proposer's own approval
 * runs it at once.
 */

/** What the approvals need of an `admin.*` call: who calls, its audit row, its transaction. */
export interface AdminCall {
  deps: Deps;
  operator: OperatorIdentity;
  audit: AuditNote;
  commit: Commit;
}

/** Refusals of the approval itself, as opposed to refusals of the move it would run. */
const APPROVAL_REFUSALS: ReadonlySet<ErrorCode> = new Set([
  'APPROVAL_NOT_FOUND',
  'APPROVAL_NOT_PENDING',
  'SELF_APPROVAL_FORBIDDEN',
  // An outside system that cannot answer now says nothing about the world: approve again later.
  'UPSTREAM_UNAVAILABLE',
]);

const HOUR_MS = 3_600_000;

function applyApprovalEvent(
  em: EntityManager,
  id: string,
  event: ApprovalEvent,
): Promise<Transition<Approval, ApprovalEvent>> {
  return applyEvent(em, { machine: approvalMachine, entity: Approval, id, event }) as Promise<
    Transition<Approval, ApprovalEvent>
  >;
}

function notPending(approval: Pick<Approval, 'id' | 'status' | 'expiresAt'>): AppError {
  const state =
    approval.status === 'EXPIRED' ? `expired at ${approval.expiresAt.toISOString()}` : approval.status;
  return new AppError('APPROVAL_NOT_PENDING', {
    message: `Proposal ${approval.id} is ${state}; only a PENDING proposal can be decided.`,
    details: [{ field: 'approval_id', issue: `is ${approval.status}` }],
  });
}

function selfApproval(): AppError {
  return new AppError('SELF_APPROVAL_FORBIDDEN', {
    details: [
      { field: 'approval_id', issue: 'was proposed by this operator; another approver must approve it' },
    ],
  });
}

/** Reads a proposal outside any transaction (a fork of its own, so the later lock reads it afresh). */
async function findApproval(deps: Deps, approvalId: string): Promise<Approval> {
  const approval = isUuid(approvalId) ? await deps.orm.em.fork().findOne(Approval, approvalId) : null;
  if (!approval) throw new AppError('APPROVAL_NOT_FOUND');
  return approval;
}

function requireNote(note: string | undefined | null): string {
  const trimmed = note?.trim();
  if (!trimmed) throw invalidField('note', 'is required: say why, for the approver and the audit trail');
  return trimmed;
}

/** APPROVE, then the move, inside the caller's transaction; the row carries the result. */
async function runApproved(
  em: EntityManager,
  deps: Deps,
  args: {
    approvalId: string;
    def: MoneyMoveDef;
    approverId: string;
    fourEyes: boolean;
    note: string | null;
    prepared: unknown;
    now: Date;
  },
): Promise<Approval> {
  const { now } = args;
  const t = await applyApprovalEvent(em, args.approvalId, {
    type: 'APPROVE',
    approverId: args.approverId,
    fourEyes: args.fourEyes,
    note: args.note,
    now,
  });
  if (!t.taken) throw t.row.status === 'PENDING' ? selfApproval() : notPending(t.row);
  const row = t.row;
  // One approval of several: recorded, and the move waits for the next approver.
  if (row.status === 'PENDING') return row;
  const actor: MoveActor = { approverId: args.approverId, proposerId: row.proposerId, approvalId: row.id };
  row.result = await args.def.run(em, deps, { args: row.args, actor, now, prepared: args.prepared });
  row.deciderId = args.approverId;
  row.decisionNote = args.note;
  row.decidedAt = now;
  return row;
}

/** Thrown out of a rehearsal's transaction, so that it rolls back. */
class Rehearsed extends Error {}

/**
 * Runs a move as an approval would run it now, on an EntityManager of its own (nothing it loads
 * reaches the caller's), in a transaction that always rolls back (so no observer is told of its
 * status changes): the move's own checks say whether it would run. Their refusal, an AppError, is
 * thrown as it is, like any other error; `prepared` is what `def.prepare` returned, outside any
 * transaction.
 */
async function rehearse(
  deps: Deps,
  def: MoneyMoveDef,
  call: { args: Record<string, unknown>; actor: MoveActor; now: Date; prepared: unknown },
): Promise<void> {
  try {
    await deps.orm.em.fork().transactional(async (tx) => {
      await def.run(tx, deps, call);
      // Flushed, so that what the database itself would refuse is refused now too.
      await tx.flush();
      throw new Rehearsed();
    });
  } catch (err) {
    if (!(err instanceof Rehearsed)) throw err;
  }
}

/**
 * An operator's money move: a PENDING proposal with four eyes on; with them off, the move runs at
 * once and is recorded as a proposal approved by its proposer. Either way a move that its checks
 * refuse now is refused with their error and leaves no proposal (and no audit row): with four eyes
 * on, the move is rehearsed first and rolled back, and runs for real only once approved.
 */
export async function proposeMove(
  call: AdminCall,
  def: MoneyMoveDef,
  rawArgs: Record<string, unknown>,
  note: string | undefined,
): Promise<Approval> {
  const { deps, operator, audit } = call;
  const reason = requireNote(note);
  const args = def.args.parse(rawArgs);
  const fourEyes = deps.config.FOUR_EYES;
  // Checks that ask an outside system, before any transaction opens (and again at approval).
  const prepared = def.prepare ? await def.prepare(deps, args) : undefined;
  const now = deps.clock.now();
  const id = newId();
  if (fourEyes) {
    // Nobody has approved yet: the rehearsal's actor is the proposer, on the proposal to be.
    const actor: MoveActor = { approverId: operator.id, proposerId: operator.id, approvalId: id };
    await rehearse(deps, def, { args, actor, now, prepared });
  }
  const expiresAt = new Date(now.getTime() + deps.config.APPROVAL_TTL_HOURS * HOUR_MS);
  const targetIds = def.targets(args);
  return call.commit(async (em) => {
    await refuseDuplicate(em, def.action, targetIds[0]);
    const stake = await def.stake(em, args);
    const needs = await requirementOf(em, def.action, stake);
    const initial = initialState(approvalMachine, {
      proposerId: operator.id,
      expiresAt: expiresAt.toISOString(),
      required: needs.approvers,
    });
    const approval = em.create(Approval, {
      id,
      status: initial.status as ApprovalStatus,
      snapshot: initial.snapshot,
      action: def.action,
      args,
      targetIds,
      stake: { ...stake },
      requiredApprovers: needs.approvers,
      approverRoles: needs.roles,
      ruleId: needs.ruleId,
      note: reason,
      proposerId: operator.id,
      deciderId: null,
      decisionNote: null,
      failureCode: null,
      failureReason: null,
      result: null,
      expiresAt,
      decidedAt: null,
    });
    await em.flush();
    audit.target(approval.id, ...approval.targetIds);
    if (fourEyes) {
      audit.outcome = 'PENDING';
      return approval;
    }
    audit.outcome = 'APPROVED';
    return runApproved(em, deps, {
      approvalId: approval.id,
      def,
      approverId: operator.id,
      fourEyes: false,
      note: null,
      prepared,
      now,
    });
  });
}

/** Changes that move no money (a rule, a role) are approved by one other admin; money moves per their rule. */
function requirementOf(
  em: EntityManager,
  action: ApprovalAction,
  stake: Parameters<typeof requirementFor>[2],
): Promise<Requirement> | Requirement {
  if ((ADMIN_CHANGES as readonly string[]).includes(action)) {
    return { approvers: 1, roles: ['admin'], ruleId: null };
  }
  return requirementFor(em, action, stake);
}

/**
 * Refuses a second PENDING proposal of `action` on the same target (its first target id: the
 * object it acts on), naming the open one. Proposals of one action and target take a lock in
 * turn, held until the transaction ends, so two at once cannot both pass.
 */
async function refuseDuplicate(em: EntityManager, action: string, target: string | undefined): Promise<void> {
  if (target === undefined) return;
  await em.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`approval/${action}/${target}`]);
  const [open] = await em.execute<{ id: string; created_at: Date | string }[]>(
    `select id, created_at from approvals
      where status = 'PENDING' and action = ? and target_ids[1] = ? order by created_at limit 1`,
    [action, target],
  );
  if (!open) return;
  throw new AppError('APPROVAL_ALREADY_PENDING', {
    message: `Proposal ${open.id} (${action} of ${target}) is already PENDING: decide or withdraw it first.`,
    details: [
      { field: 'approval_id', issue: `${open.id} is the PENDING proposal of ${action} on ${target}` },
    ],
  });
}

/** Who has approved a proposal so far (its machine's context). */
export function approversOf(approval: Pick<Approval, 'snapshot'>): string[] {
  const context = (approval.snapshot as { context?: { approverIds?: string[] } }).context;
  return context?.approverIds ?? [];
}

/** Why a move was refused, in words, from its AppError. */
function reasonOf(err: AppError): string {
  // The code is kept beside it (failure_code): the reason is the words a person reads.
  const details = err.details.map((d) => `${d.field} ${d.issue}`).join('; ');
  return (details || err.message).slice(0, 1000);
}

/**
 * Approves a proposal and runs its move in the same transaction. Refused: an unknown or decided
 * proposal, its own proposer (with four eyes on), a lapsed one (which is recorded EXPIRED). A
 * move refused by its checks leaves the proposal FAILED with the reason and answers
 * APPROVAL_ACTION_FAILED.
 */
export async function approveMove(
  call: AdminCall,
  moves: Readonly<Record<ApprovalAction, MoneyMoveDef>>,
  approvalId: string,
  note: string | undefined,
): Promise<Approval> {
  const { deps, operator, audit } = call;
  const found = await findApproval(deps, approvalId);
  if (found.status !== 'PENDING') throw notPending(found);
  const fourEyes = deps.config.FOUR_EYES;
  if (fourEyes && found.proposerId === operator.id) throw selfApproval();
  if (fourEyes) {
    const roles = found.approverRoles as Role[];
    if (!roles.includes(operator.role)) {
      throw roleRefusal(operator, roles.includes('approver') ? 'approver' : 'admin');
    }
    if (approversOf(found).includes(operator.id)) {
      throw new AppError('SELF_APPROVAL_FORBIDDEN', {
        message: `Operator ${operator.name} approved proposal ${found.id} already; it needs ${found.requiredApprovers} different approvers.`,
        details: [
          { field: 'approval_id', issue: 'was approved by this operator already; another approver must' },
        ],
      });
    }
  }
  audit.target(found.id, ...found.targetIds);
  const now = deps.clock.now();
  if (now >= found.expiresAt) {
    audit.outcome = 'EXPIRED';
    const expired = await call.commit(async (em) => {
      const t = await applyApprovalEvent(em, found.id, { type: 'EXPIRE', now });
      if (t.taken) t.row.decidedAt = now;
      return t.row;
    });
    throw notPending(expired);
  }
  const def = moves[found.action];
  try {
    const prepared = def.prepare ? await def.prepare(deps, found.args) : undefined;
    const last = !fourEyes || approversOf(found).length + 1 >= found.requiredApprovers;
    audit.outcome = last
      ? 'APPROVED'
      : `APPROVED_${approversOf(found).length + 1}_OF_${found.requiredApprovers}`;
    return await call.commit((em) =>
      runApproved(em, deps, {
        approvalId: found.id,
        def,
        approverId: operator.id,
        fourEyes,
        note: note?.trim() || null,
        prepared,
        now,
      }),
    );
  } catch (err) {
    if (!(err instanceof AppError) || APPROVAL_REFUSALS.has(err.code)) throw err;
    const reason = reasonOf(err);
    audit.outcome = 'FAILED';
    const failed = await call.commit(async (em) => {
      const t = await applyApprovalEvent(em, found.id, {
        type: 'ACTION_FAILED',
        approverId: operator.id,
        code: err.code,
        reason,
        now,
      });
      if (!t.taken) return null;
      Object.assign(t.row, {
        deciderId: operator.id,
        decisionNote: note?.trim() || null,
        failureCode: err.code,
        failureReason: reason,
        decidedAt: now,
      });
      return t.row;
    });
    // Decided by someone else meanwhile: their decision stands, and this one's refusal is the answer.
    if (!failed) throw err;
    throw new AppError('APPROVAL_ACTION_FAILED', {
      message: `The ${found.action} of proposal ${found.id} is no longer possible, so the proposal is FAILED and nothing moved: ${err.message}`,
      details: err.details,
    });
  }
}

/**
 * Rejects a PENDING proposal, with the note saying why: an approver or admin other than its
 * proposer decides so, or its proposer (whatever the role) withdraws it.
 */
export async function rejectMove(call: AdminCall, approvalId: string, note: string): Promise<Approval> {
  const { deps, operator, audit } = call;
  const reason = requireNote(note);
  const found = await findApproval(deps, approvalId);
  const own = found.proposerId === operator.id;
  if (!own && !hasRole(operator.role, 'approver')) throw roleRefusal(operator, 'approver');
  if (found.status !== 'PENDING') throw notPending(found);
  audit.target(found.id, ...found.targetIds);
  audit.outcome = own ? 'WITHDRAWN' : 'REJECTED';
  const now = deps.clock.now();
  return call.commit(async (em) => {
    const t = await applyApprovalEvent(em, found.id, {
      type: 'REJECT',
      operatorId: operator.id,
      note: reason,
      now,
    });
    if (!t.taken) throw notPending(t.row);
    Object.assign(t.row, { deciderId: operator.id, decisionNote: reason, decidedAt: now });
    return t.row;
  });
}

/**
 * Expires PENDING proposals past their time, up to `limit`, in one transaction that claims them
 * `FOR UPDATE SKIP LOCKED` (instances running the job side by side expire different rows, and a
 * proposal being approved right now is left to its approver). Returns how many expired.
 */
export async function expireDueApprovals(deps: Deps, limit = 100): Promise<number> {
  const now = deps.clock.now();
  const expired = await deps.orm.em.fork().transactional(async (em) => {
    const due = await em.execute<{ id: string }[]>(
      `select id from approvals where status = 'PENDING' and expires_at <= ?
        order by expires_at limit ? for update skip locked`,
      [now, limit],
    );
    const expired: Approval[] = [];
    for (const { id } of due) {
      const t = await applyApprovalEvent(em, id, { type: 'EXPIRE', now });
      if (!t.taken) continue;
      t.row.decidedAt = now;
      expired.push(t.row);
    }
    return expired;
  });
  // Nothing is dropped: what the proposal concerned is still in its own queue, overdue there.
  for (const a of expired) {
    deps.log.warn(
      { approval_id: a.id, action: a.action, target_ids: a.targetIds, proposer_id: a.proposerId },
      'proposal expired undecided; its target still waits in its queue',
    );
  }
  return expired.length;
}

export interface ApprovalFilter {
  state?: ApprovalStatus;
  /** true: decided (any state but PENDING); false: PENDING. */
  decided?: boolean;
  action?: ApprovalAction;
  targetId?: string;
  proposerId?: string;
}

/** Proposals, newest first, a page at a time. */
export async function listApprovals(
  em: EntityManager,
  filter: ApprovalFilter,
  page: PageRequest & { list: string },
): Promise<{ items: Approval[]; meta: PageMeta }> {
  return paginate(em, Approval, {
    where: {
      ...(filter.decided === undefined
        ? {}
        : { status: filter.decided ? { $ne: 'PENDING' as const } : 'PENDING' }),
      ...(filter.state ? { status: filter.state } : {}),
      ...(filter.proposerId ? { proposerId: filter.proposerId } : {}),
      ...(filter.action ? { action: filter.action } : {}),
      ...(filter.targetId ? { targetIds: { $contains: [filter.targetId] } } : {}),
    },
    ...page,
  });
}

/** Names of the operators behind `ids`, revoked ones included. */
export async function operatorNames(
  em: EntityManager,
  ids: Iterable<string | null>,
): Promise<Map<string, string>> {
  const wanted = [...new Set([...ids].filter((id): id is string => id !== null))];
  if (wanted.length === 0) return new Map();
  const rows = await em.find(Operator, { id: { $in: wanted } }, { fields: ['id', 'name'] });
  return new Map(rows.map((o) => [o.id, o.name]));
}
