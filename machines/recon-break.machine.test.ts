import { expect } from 'chai';
import { initialTransition, type SnapshotFrom, transition } from 'xstate';
import { type ReconBreakEvent, reconBreakMachine } from './recon-break.machine.ts';

type Snapshot = SnapshotFrom<typeof reconBreakMachine>;

function roundTrip(snapshot: Snapshot): Snapshot {
  return reconBreakMachine.resolveState(
    JSON.parse(JSON.stringify(reconBreakMachine.getPersistedSnapshot(snapshot))),
  );
}

function found(): Snapshot {
  const [snapshot] = initialTransition(reconBreakMachine);
  return roundTrip(snapshot);
}

function apply(snapshot: Snapshot, event: ReconBreakEvent): { next: Snapshot; taken: boolean } {
  const [next, actions] = transition(reconBreakMachine, snapshot, event);
  expect(actions.map((a) => a.type).filter((t) => !t.startsWith('xstate.'))).to.deep.equal([]);
  return { next: roundTrip(next), taken: next !== snapshot };
}

const resolve = (resolution: ReconBreakEvent['resolution'], approvalId: string | null): ReconBreakEvent => ({
  type: 'RESOLVE',
  resolution,
  note: 'why',
  operatorId: 'ada',
  approvalId,
});

describe('reconciliation break machine', () => {
  it('starts OPEN, with nothing resolved', () => {
    const open = found();
    expect(open.value).to.equal('OPEN');
    expect(open.context).to.deep.equal({ resolution: null, note: null, resolvedBy: null, approvalId: null });
  });

  it('is resolved by one operator with a note when nothing moves', () => {
    const { next, taken } = apply(found(), resolve('EXPLAINED', null));
    expect(taken).to.equal(true);
    expect(next.value).to.equal('RESOLVED');
    expect(next.status).to.equal('done');
    expect(next.context).to.deep.equal({
      resolution: 'EXPLAINED',
      note: 'why',
      resolvedBy: 'ada',
      approvalId: null,
    });
  });

  it('moves money only with an approved proposal', () => {
    for (const resolution of ['BOOKED_RAIL', 'REFUNDED_RETURN'] as const) {
      expect(apply(found(), resolve(resolution, null)).taken, resolution).to.equal(false);
      const { next } = apply(found(), resolve(resolution, 'appr-1'));
      expect(next.value).to.equal('RESOLVED');
      expect(next.context).to.include({ resolution, approvalId: 'appr-1' });
    }
  });

  it('ignores anything once resolved', () => {
    const { next } = apply(found(), resolve('EXPLAINED', null));
    expect(apply(next, resolve('BOOKED_RAIL', 'appr-2')).taken).to.equal(false);
  });
});
