import { expect } from 'chai';
import { initialTransition, type SnapshotFrom, transition } from 'xstate';
import { type OutflowEvent, outflowMachine } from './outflow.machine.ts';

type Snapshot = SnapshotFrom<typeof outflowMachine>;

const NOW = new Date('2026-01-01T12:00:00.000Z');

/** What the database would hand back: the persisted snapshot as JSON, restored by the machine. */
function roundTrip(snapshot: Snapshot): Snapshot {
  return outflowMachine.resolveState(
    JSON.parse(JSON.stringify(outflowMachine.getPersistedSnapshot(snapshot))),
  );
}

function persisted(snapshot: Snapshot): unknown {
  return JSON.parse(JSON.stringify(outflowMachine.getPersistedSnapshot(snapshot)));
}

function fresh(): Snapshot {
  const [snapshot] = initialTransition(outflowMachine);
  return roundTrip(snapshot);
}

/**
 * The ledger flows an outcome posts, by the state it finds the attempt in: taken by the processor
 * (SENT), paid (PAID), failed after it was taken (CAME_BACK); refused before, nothing moved.
 */
function postsOf(from: string, event: OutflowEvent['type']): string[] {
  if (event === 'ACCEPTED') return ['SENT'];
  if (event === 'SUCCEEDED') return from === 'PENDING' ? ['SENT', 'PAID'] : ['PAID'];
  return from === 'PROCESSING' ? ['CAME_BACK'] : [];
}

/** Applies an event that must be taken; the only side effect an outflow asks for is the money it moves. */
function apply(snapshot: Snapshot, event: OutflowEvent): Snapshot {
  const [next, actions] = transition(outflowMachine, snapshot, event);
  expect(next, `${event.type} must be taken`).to.not.equal(snapshot);
  const custom = actions.map(({ type, params }) => ({ type, params }));
  expect(custom).to.deep.equal(
    postsOf(String(snapshot.value), event.type).map((flow) => ({ type: 'post', params: { flow } })),
  );
  return roundTrip(next);
}

/** Asserts that an event is ignored: the very same snapshot comes back. */
function expectIgnored(snapshot: Snapshot, event: OutflowEvent): void {
  const [next, actions] = transition(outflowMachine, snapshot, event);
  expect(actions).to.deep.equal([]);
  expect(next, `${event.type} is ignored`).to.equal(snapshot);
  expect(persisted(next)).to.deep.equal(persisted(snapshot));
}

const EVENTS = {
  accepted: { type: 'ACCEPTED', processorReference: 'prc-1', now: NOW },
  succeeded: { type: 'SUCCEEDED', now: NOW },
  rejected: {
    type: 'REJECTED',
    failureCode: 'INVALID_ACCOUNT',
    failureReason: 'account number failed validation',
    retryable: false,
    now: NOW,
  },
  failed: {
    type: 'FAILED',
    failureCode: 'TIMEOUT_AT_BANK',
    failureReason: 'the beneficiary bank timed out',
    retryable: true,
    now: NOW,
  },
} satisfies Record<string, OutflowEvent>;
type EventName = keyof typeof EVENTS;

/** Every event but `taken` must leave the snapshot untouched. */
function expectOnlyTaken(snapshot: Snapshot, taken: EventName[]): void {
  for (const [name, event] of Object.entries(EVENTS) as [EventName, OutflowEvent][]) {
    if (taken.includes(name)) apply(snapshot, event);
    else expectIgnored(snapshot, event);
  }
}

const processing = () => apply(fresh(), EVENTS.accepted);
const none = { processorReference: null, failureCode: null, failureReason: null, retryable: null };

describe('outflow machine', () => {
  it('starts PENDING with nothing recorded and asks for nothing', () => {
    const [snapshot, actions] = initialTransition(outflowMachine);
    expect(actions).to.deep.equal([]);
    expect(snapshot.value).to.equal('PENDING');
    expect(snapshot.context).to.deep.equal(none);
  });

  it('persists as plain JSON and cannot be driven from raw JSON without resolveState', () => {
    const raw = persisted(fresh()) as Snapshot;
    expect(raw).to.include({ value: 'PENDING', status: 'active' });
    expect(() => transition(outflowMachine, raw, EVENTS.accepted)).to.throw();
  });

  describe('from PENDING', () => {
    it("ACCEPTED moves to PROCESSING and keeps the processor's reference", () => {
      const next = processing();
      expect(next.value).to.equal('PROCESSING');
      expect(next.context).to.deep.equal({ ...none, processorReference: 'prc-1' });
    });

    it('ACCEPTED without a reference is accepted all the same', () => {
      expect(apply(fresh(), { type: 'ACCEPTED', now: NOW }).context).to.deep.equal(none);
    });

    it('SUCCEEDED (success reported at dispatch) moves straight to SUCCESSFUL', () => {
      const next = apply(fresh(), { type: 'SUCCEEDED', processorReference: 'prc-2', now: NOW });
      expect(next.value).to.equal('SUCCESSFUL');
      expect(next.status).to.equal('done');
      expect(next.context.processorReference).to.equal('prc-2');
    });

    it('REJECTED moves to FAILED with the code, reason and retryability', () => {
      const next = apply(fresh(), EVENTS.rejected);
      expect(next.value).to.equal('FAILED');
      expect(next.status).to.equal('done');
      expect(next.context).to.deep.equal({
        processorReference: null,
        failureCode: 'INVALID_ACCOUNT',
        failureReason: 'account number failed validation',
        retryable: false,
      });
    });

    it('FAILED (a failure callback that overtook the acceptance) moves to FAILED too', () => {
      const next = apply(fresh(), EVENTS.failed);
      expect(next.value).to.equal('FAILED');
      expect(next.context).to.include({ failureCode: 'TIMEOUT_AT_BANK', retryable: true });
    });

    it('takes every event', () => {
      expectOnlyTaken(fresh(), ['accepted', 'succeeded', 'rejected', 'failed']);
    });
  });

  describe('from PROCESSING', () => {
    it('SUCCEEDED moves to SUCCESSFUL and keeps the reference given at acceptance', () => {
      const next = apply(processing(), EVENTS.succeeded);
      expect(next.value).to.equal('SUCCESSFUL');
      expect(next.status).to.equal('done');
      expect(next.context).to.deep.equal({ ...none, processorReference: 'prc-1' });
    });

    it('FAILED moves to FAILED with the code, reason and retryability', () => {
      const next = apply(processing(), EVENTS.failed);
      expect(next.value).to.equal('FAILED');
      expect(next.context).to.deep.equal({
        processorReference: 'prc-1',
        failureCode: 'TIMEOUT_AT_BANK',
        failureReason: 'the beneficiary bank timed out',
        retryable: true,
      });
    });

    it('ignores a second acceptance and a rejection after acceptance', () => {
      expectOnlyTaken(processing(), ['succeeded', 'failed']);
    });
  });

  describe('terminal rows are immutable', () => {
    const terminals: [string, () => Snapshot][] = [
      ['SUCCESSFUL after processing', () => apply(processing(), EVENTS.succeeded)],
      ['SUCCESSFUL at dispatch', () => apply(fresh(), EVENTS.succeeded)],
      ['FAILED after processing', () => apply(processing(), EVENTS.failed)],
      ['REJECTED at dispatch', () => apply(fresh(), EVENTS.rejected)],
    ];
    for (const [name, reach] of terminals) {
      it(`${name} absorbs every event, duplicates and contradictions alike`, () => {
        expectOnlyTaken(reach(), []);
      });
    }
  });
});
