import { expect } from 'chai';
import { initialTransition, type SnapshotFrom, transition } from 'xstate';
import { type ApprovalEvent, approvalMachine } from './approval.machine.ts';

type Snapshot = SnapshotFrom<typeof approvalMachine>;

const NOW = new Date('2026-01-01T12:00:00.000Z');
const EXPIRES = new Date(NOW.getTime() + 72 * 3_600_000);
const ADA = 'ada';
const BEN = 'ben';

/** What the database would hand back: the persisted snapshot as JSON, restored by the machine. */
function roundTrip(snapshot: Snapshot): Snapshot {
  return approvalMachine.resolveState(
    JSON.parse(JSON.stringify(approvalMachine.getPersistedSnapshot(snapshot))),
  );
}

function proposed(by = ADA, required?: number): Snapshot {
  const [snapshot, actions] = initialTransition(approvalMachine, {
    proposerId: by,
    expiresAt: EXPIRES.toISOString(),
    ...(required === undefined ? {} : { required }),
  });
  expect(
    actions.filter((a) => !a.type.startsWith('xstate.')),
    'no actions',
  ).to.deep.equal([]);
  return roundTrip(snapshot);
}

/** Applies an event; `taken` is false when XState hands back the very same snapshot. */
function apply(snapshot: Snapshot, event: ApprovalEvent): { next: Snapshot; taken: boolean } {
  const [next, actions] = transition(approvalMachine, snapshot, event);
  expect(actions.map((a) => a.type).filter((t) => !t.startsWith('xstate.'))).to.deep.equal([]);
  return { next: roundTrip(next), taken: next !== snapshot };
}

const approve = (approverId: string, fourEyes = true): ApprovalEvent => ({
  type: 'APPROVE',
  approverId,
  fourEyes,
  note: null,
  now: NOW,
});

describe('approval machine', () => {
  it('starts PENDING with the proposer and its expiry, decided by nobody', () => {
    const s = proposed();
    expect(s.value).to.equal('PENDING');
    expect(s.context).to.deep.equal({
      proposerId: ADA,
      expiresAt: EXPIRES.toISOString(),
      required: 1,
      approverIds: [],
      deciderId: null,
      decisionNote: null,
      failure: null,
    });
  });

  it('is approved by a second operator, and never by its proposer while four eyes are on', () => {
    expect(apply(proposed(), approve(ADA)).taken, 'self-approval').to.equal(false);
    const { next, taken } = apply(proposed(), { ...approve(BEN), note: 'checked' } as ApprovalEvent);
    expect(taken).to.equal(true);
    expect(next.value).to.equal('APPROVED');
    expect(next.status).to.equal('done');
    expect(next.context).to.include({ deciderId: BEN, decisionNote: 'checked' });
  });

  it('lets the proposer approve its own only with four eyes off', () => {
    const { next, taken } = apply(proposed(), approve(ADA, false));
    expect(taken).to.equal(true);
    expect(next.value).to.equal('APPROVED');
    expect(next.context.deciderId).to.equal(ADA);
  });

  it('ends FAILED with the code and reason when the approved action is refused', () => {
    const { next } = apply(proposed(), {
      type: 'ACTION_FAILED',
      approverId: BEN,
      code: 'VALIDATION_FAILED',
      reason: 'payout_id is FAILED, not held for review',
      now: NOW,
    });
    expect(next.value).to.equal('FAILED');
    expect(next.context).to.deep.include({
      deciderId: BEN,
      failure: { code: 'VALIDATION_FAILED', reason: 'payout_id is FAILED, not held for review' },
    });
  });

  it('ends REJECTED with the rejecter and the note', () => {
    const { next } = apply(proposed(), { type: 'REJECT', operatorId: BEN, note: 'not yet', now: NOW });
    expect(next.value).to.equal('REJECTED');
    expect(next.context).to.deep.equal({
      proposerId: ADA,
      expiresAt: EXPIRES.toISOString(),
      required: 1,
      approverIds: [],
      deciderId: BEN,
      decisionNote: 'not yet',
      failure: null,
    });
  });

  it('needs as many distinct approvers as its rule asks, none of them its proposer; the last one approves', () => {
    const CY = 'cy';
    const first = apply(proposed(ADA, 3), approve(BEN));
    expect(first.taken).to.equal(true);
    expect(first.next.value).to.equal('PENDING');
    expect(first.next.context).to.include({ deciderId: null });
    expect(first.next.context.approverIds).to.deep.equal([BEN]);
    expect(apply(first.next, approve(BEN)).taken, 'the same approver twice').to.equal(false);
    expect(apply(first.next, approve(ADA)).taken, 'its proposer').to.equal(false);
    const second = apply(first.next, approve(CY));
    expect(second.next.value).to.equal('PENDING');
    const third = apply(second.next, approve('dee'));
    expect(third.next.value).to.equal('APPROVED');
    expect(third.next.context.approverIds).to.deep.equal([BEN, CY, 'dee']);
    expect(third.next.context.deciderId).to.equal('dee');
  });

  /** A proposal as persisted before rules: no `required`, no `approverIds` (or only one of them). */
  const persistedBeforeRules = (extra: { required?: number; approverIds?: string[] } = {}): Snapshot =>
    approvalMachine.resolveState({
      value: 'PENDING',
      context: {
        proposerId: ADA,
        expiresAt: EXPIRES.toISOString(),
        deciderId: null,
        decisionNote: null,
        failure: null,
        ...extra,
      },
    } as never);

  it('treats a proposal persisted before rules as needing one approval, approved by nobody yet', () => {
    const { next } = apply(persistedBeforeRules(), approve(BEN));
    expect(next.value).to.equal('APPROVED');
    expect(next.context.approverIds).to.deep.equal([BEN]);
    expect(next.context.deciderId).to.equal(BEN);
  });

  it('counts a missing list of approvers as nobody, and a missing rule as one approval, each on its own', () => {
    const first = apply(persistedBeforeRules({ required: 2 }), approve(BEN));
    expect(first.next.value, 'one approval of two').to.equal('PENDING');
    expect(first.next.context.approverIds).to.deep.equal([BEN]);
    const second = apply(first.next, approve('cy'));
    expect(second.next.value).to.equal('APPROVED');
    expect(second.next.context.approverIds).to.deep.equal([BEN, 'cy']);
    const { next } = apply(persistedBeforeRules({ approverIds: [] }), approve(BEN));
    expect(next.value, 'no rule: one approval').to.equal('APPROVED');
  });

  it('with four eyes off, runs the action at the first approval whatever the rule asks', () => {
    for (const required of [2, 3]) {
      const { next, taken } = apply(proposed(ADA, required), approve(ADA, false));
      expect(taken).to.equal(true);
      expect(next.value, `required ${required}`).to.equal('APPROVED');
      expect(next.context.approverIds).to.deep.equal([ADA]);
      expect(next.context.deciderId).to.equal(ADA);
    }
  });

  it('expires only once its time has come', () => {
    const early = new Date(EXPIRES.getTime() - 1);
    expect(apply(proposed(), { type: 'EXPIRE', now: early }).taken).to.equal(false);
    const { next, taken } = apply(proposed(), { type: 'EXPIRE', now: EXPIRES });
    expect(taken).to.equal(true);
    expect(next.value).to.equal('EXPIRED');
    expect(next.context).to.include({ deciderId: null, decisionNote: null, failure: null });
  });

  it('ignores every decision once decided: a proposal is decided once', () => {
    const decided = [
      apply(proposed(), approve(BEN)).next,
      apply(proposed(), { type: 'REJECT', operatorId: BEN, note: 'no', now: NOW }).next,
      apply(proposed(), { type: 'EXPIRE', now: EXPIRES }).next,
      apply(proposed(), { type: 'ACTION_FAILED', approverId: BEN, code: 'X', reason: 'y', now: NOW }).next,
    ];
    const events: ApprovalEvent[] = [
      approve('cy'),
      { type: 'REJECT', operatorId: 'cy', note: 'late', now: NOW },
      { type: 'EXPIRE', now: new Date(EXPIRES.getTime() + 1) },
      { type: 'ACTION_FAILED', approverId: 'cy', code: 'X', reason: 'y', now: NOW },
    ];
    for (const snapshot of decided) {
      // Final: the proposal's actor is done, whichever way it was decided.
      expect(snapshot.status, `${snapshot.value} is final`).to.equal('done');
      for (const event of events) {
        expect(apply(snapshot, event).taken, `${snapshot.value} ${event.type}`).to.equal(false);
      }
    }
  });
});

describe('approval guards, each on its own', () => {
  const guards = approvalMachine.implementations.guards as Record<
    string,
    (args: { context: unknown; event: ApprovalEvent }) => boolean
  >;
  const context = proposed().context;
  const reject: ApprovalEvent = { type: 'REJECT', operatorId: BEN, note: 'no', now: EXPIRES };

  it('a second person approves; no other event passes for an approval', () => {
    expect(guards.bySecondPerson!({ context, event: approve(BEN) })).to.equal(true);
    expect(guards.bySecondPerson!({ context, event: approve(ADA) })).to.equal(false);
    expect(guards.bySecondPerson!({ context, event: reject })).to.equal(false);
  });

  it('more approvals are needed only with four eyes on and fewer approvers than the rule asks', () => {
    const needsTwo = proposed(ADA, 2).context;
    expect(guards.moreApprovalsNeeded!({ context: needsTwo, event: approve(BEN) })).to.equal(true);
    expect(guards.moreApprovalsNeeded!({ context: needsTwo, event: approve(BEN, false) })).to.equal(false);
    expect(guards.moreApprovalsNeeded!({ context, event: approve(BEN) })).to.equal(false);
    expect(guards.moreApprovalsNeeded!({ context: needsTwo, event: reject })).to.equal(false);
  });

  it('past its time: an EXPIRE at or after the expiry, no other event', () => {
    expect(guards.pastItsTime!({ context, event: { type: 'EXPIRE', now: EXPIRES } })).to.equal(true);
    expect(guards.pastItsTime!({ context, event: reject })).to.equal(false);
  });
});
