import { expect } from 'chai';
import { initialTransition, type SnapshotFrom, transition } from 'xstate';
import { type RefundEvent, refundMachine } from './refund.machine.ts';

type Snapshot = SnapshotFrom<typeof refundMachine>;
type Action = { type: string; params: unknown };

const NOW = new Date('2026-01-01T12:00:00.000Z');

/** What the database would hand back: the persisted snapshot as JSON, restored by the machine. */
function roundTrip(snapshot: Snapshot): Snapshot {
  return refundMachine.resolveState(JSON.parse(JSON.stringify(refundMachine.getPersistedSnapshot(snapshot))));
}

function persisted(snapshot: Snapshot): unknown {
  return JSON.parse(JSON.stringify(refundMachine.getPersistedSnapshot(snapshot)));
}

/** Actions as the engine's hook receives them; each must be plain data it can store. */
function data(actions: readonly { type: string; params?: unknown }[]): Action[] {
  return actions.map(({ type, params }) => {
    expect(type, 'only custom actions reach the engine').to.be.oneOf(['emit', 'schedule', 'post']);
    expect(params, `params of ${type}`).to.be.an('object');
    return { type, params };
  });
}

function start(): { snapshot: Snapshot; actions: Action[] } {
  const [snapshot, actions] = initialTransition(refundMachine);
  return { snapshot: roundTrip(snapshot), actions: data(actions) };
}

/** Applies an event that must be taken: the engine sees that as a new snapshot object. */
function take(snapshot: Snapshot, event: RefundEvent): { next: Snapshot; actions: Action[] } {
  const [next, actions] = transition(refundMachine, snapshot, event);
  expect(next, `${event.type} must be taken`).to.not.equal(snapshot);
  return { next: roundTrip(next), actions: data(actions) };
}

const apply = (snapshot: Snapshot, event: RefundEvent): Snapshot => take(snapshot, event).next;

/** Asserts that an event is ignored: the very same snapshot comes back and nothing is asked for. */
function expectIgnored(snapshot: Snapshot, event: RefundEvent): void {
  const [next, actions] = transition(refundMachine, snapshot, event);
  expect(actions, `${event.type} asks for nothing`).to.deep.equal([]);
  expect(next, `${event.type} is ignored`).to.equal(snapshot);
  expect(persisted(next)).to.deep.equal(persisted(snapshot));
}

const emit = (event: string): Action => ({ type: 'emit', params: { event } });
const schedule = (task: string): Action => ({ type: 'schedule', params: { task } });
const post = (flow: string): Action => ({ type: 'post', params: { flow } });

const EVENTS = {
  dispatched: { type: 'DISPATCHED', processorReference: 'ref-1', now: NOW },
  confirmed: { type: 'CONFIRMED', now: NOW },
  failed: { type: 'FAILED', failureReason: 'address on the wrong chain', now: NOW },
  retryCorrected: { type: 'OPERATOR_RETRY', destinationCorrected: true, now: NOW },
  retryUncorrected: { type: 'OPERATOR_RETRY', destinationCorrected: false, now: NOW },
} satisfies Record<string, RefundEvent>;
type EventName = keyof typeof EVENTS;

/** Every event but `taken` must leave the snapshot untouched. */
function expectOnlyTaken(snapshot: Snapshot, taken: EventName[]): void {
  for (const [name, event] of Object.entries(EVENTS) as [EventName, RefundEvent][]) {
    if (taken.includes(name)) take(snapshot, event);
    else expectIgnored(snapshot, event);
  }
}

const pending = () => start().snapshot;
const processing = () => apply(pending(), EVENTS.dispatched);
const failed = () => apply(processing(), EVENTS.failed);

describe('refund machine', () => {
  it('is raised PENDING: payout.refunded, then refund.created, and asks for the dispatch', () => {
    const { snapshot, actions } = start();
    expect(snapshot.value).to.equal('PENDING');
    expect(snapshot.context).to.deep.equal({ processorReference: null, failureReason: null });
    expect(actions).to.deep.equal([
      emit('payout.refunded'),
      emit('refund.created'),
      schedule('DISPATCH_REFUND'),
    ]);
  });

  it('persists as plain JSON and cannot be driven from raw JSON without resolveState', () => {
    const raw = persisted(pending()) as Snapshot;
    expect(raw).to.include({ value: 'PENDING', status: 'active' });
    expect(() => transition(refundMachine, raw, EVENTS.dispatched)).to.throw();
  });

  describe('from PENDING', () => {
    it('DISPATCHED moves to PROCESSING, announces refund.processing and sends the money (SENT)', () => {
      const { next, actions } = take(pending(), EVENTS.dispatched);
      expect(next.value).to.equal('PROCESSING');
      expect(next.context.processorReference).to.equal('ref-1');
      expect(actions).to.deep.equal([emit('refund.processing'), post('SENT')]);
    });

    it('DISPATCHED without a processor reference records none: null, never left out', () => {
      for (const event of [
        { type: 'DISPATCHED', now: NOW },
        { type: 'DISPATCHED', processorReference: null, now: NOW },
      ] satisfies RefundEvent[]) {
        const [next] = transition(refundMachine, pending(), event);
        expect(next.value).to.equal('PROCESSING');
        expect(next.context).to.deep.equal({ processorReference: null, failureReason: null });
        expect(roundTrip(next).context).to.deep.equal({ processorReference: null, failureReason: null });
      }
    });

    it('FAILED (the rail refused it before accepting) moves to FAILED and announces refund.failed', () => {
      const { next, actions } = take(pending(), EVENTS.failed);
      expect(next.value).to.equal('FAILED');
      expect(next.status).to.equal('active');
      expect(next.context.failureReason).to.equal('address on the wrong chain');
      expect(actions).to.deep.equal([emit('refund.failed')]);
    });

    it('ignores a confirmation before the dispatch and any operator retry', () => {
      expectOnlyTaken(pending(), ['dispatched', 'failed']);
    });
  });

  describe('from PROCESSING', () => {
    it('CONFIRMED moves to SUCCESSFUL, announces refund.successful and delivers the money (DELIVERED)', () => {
      const { next, actions } = take(processing(), EVENTS.confirmed);
      expect(next.value).to.equal('SUCCESSFUL');
      expect(next.status).to.equal('done');
      expect(actions).to.deep.equal([emit('refund.successful'), post('DELIVERED')]);
    });

    it('FAILED moves to FAILED, announces refund.failed and brings the money back (BOUNCED)', () => {
      const { next, actions } = take(processing(), EVENTS.failed);
      expect(next.value).to.equal('FAILED');
      expect(next.context).to.deep.equal({
        processorReference: 'ref-1',
        failureReason: 'address on the wrong chain',
      });
      expect(actions).to.deep.equal([emit('refund.failed'), post('BOUNCED')]);
    });

    it('ignores a second dispatch and any operator retry', () => {
      expectOnlyTaken(processing(), ['confirmed', 'failed']);
    });
  });

  describe('from FAILED', () => {
    it('is not final: it waits for an operator', () => {
      expect(failed().status).to.equal('active');
    });

    it('OPERATOR_RETRY with a corrected destination goes back to PENDING, clean, and asks for a dispatch', () => {
      const { next, actions } = take(failed(), EVENTS.retryCorrected);
      expect(next.value).to.equal('PENDING');
      expect(next.context).to.deep.equal({ processorReference: null, failureReason: null });
      // No second payout.refunded / refund.created: those belong to raising the refund, once.
      expect(actions).to.deep.equal([schedule('DISPATCH_REFUND')]);
    });

    it('OPERATOR_RETRY without a corrected destination changes nothing', () => {
      expectIgnored(failed(), EVENTS.retryUncorrected);
    });

    it('ignores late processor news', () => {
      expectOnlyTaken(failed(), ['retryCorrected']);
    });

    it('a retried refund runs the same course again', () => {
      const retried = apply(failed(), EVENTS.retryCorrected);
      const { next, actions } = take(apply(retried, EVENTS.dispatched), EVENTS.confirmed);
      expect(next.value).to.equal('SUCCESSFUL');
      expect(actions).to.deep.equal([emit('refund.successful'), post('DELIVERED')]);
    });
  });

  it('SUCCESSFUL is final and absorbs every event', () => {
    const successful = apply(processing(), EVENTS.confirmed);
    expect(successful.status).to.equal('done');
    expectOnlyTaken(successful, []);
  });

  it('continues after a JSON round trip from FAILED', () => {
    const restored = refundMachine.resolveState(JSON.parse(JSON.stringify(persisted(failed()))));
    expect(restored.value).to.equal('FAILED');
    expect(restored.context.failureReason).to.equal('address on the wrong chain');
    expect(apply(restored, EVENTS.retryCorrected).value).to.equal('PENDING');
  });
});

describe('refund guard, on its own', () => {
  const guards = refundMachine.implementations.guards as Record<
    string,
    (args: { context: unknown; event: RefundEvent }) => boolean
  >;
  const context = pending().context;

  it('a destination is corrected only by an operator retry that says so; no other event passes', () => {
    expect(guards.destinationCorrected!({ context, event: EVENTS.retryCorrected })).to.equal(true);
    expect(guards.destinationCorrected!({ context, event: EVENTS.retryUncorrected })).to.equal(false);
    for (const event of [EVENTS.dispatched, EVENTS.confirmed, EVENTS.failed])
      expect(guards.destinationCorrected!({ context, event }), event.type).to.equal(false);
  });
});
