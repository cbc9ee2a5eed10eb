import { expect } from 'chai';
import { initialTransition, type SnapshotFrom, transition } from 'xstate';
import { type PaymentInstructionEvent, paymentInstructionMachine } from './payment-instruction.machine.ts';

type Snapshot = SnapshotFrom<typeof paymentInstructionMachine>;

const EXPIRES = new Date('2026-01-01T12:30:00.000Z');
const BEFORE = new Date(EXPIRES.getTime() - 1);
const AFTER = new Date(EXPIRES.getTime() + 1);

/** What the database would hand back: the persisted snapshot as JSON, restored by the machine. */
function roundTrip(snapshot: Snapshot): Snapshot {
  return paymentInstructionMachine.resolveState(
    JSON.parse(JSON.stringify(paymentInstructionMachine.getPersistedSnapshot(snapshot))),
  );
}

function persisted(snapshot: Snapshot): unknown {
  return JSON.parse(JSON.stringify(paymentInstructionMachine.getPersistedSnapshot(snapshot)));
}

function fresh(): Snapshot {
  const [snapshot] = initialTransition(paymentInstructionMachine, { expiresAt: EXPIRES.toISOString() });
  return roundTrip(snapshot);
}

/** Applies an event that must be taken; instructions ask the caller for no side effects. */
function apply(snapshot: Snapshot, event: PaymentInstructionEvent): Snapshot {
  const [next, actions] = transition(paymentInstructionMachine, snapshot, event);
  expect(next, `${event.type} must be taken`).to.not.equal(snapshot);
  expect(actions).to.deep.equal([]);
  return roundTrip(next);
}

/** Asserts that an event is ignored: the very same snapshot comes back. */
function expectIgnored(snapshot: Snapshot, event: PaymentInstructionEvent): void {
  const [next, actions] = transition(paymentInstructionMachine, snapshot, event);
  expect(actions).to.deep.equal([]);
  expect(next, `${event.type} is ignored`).to.equal(snapshot);
  expect(persisted(next)).to.deep.equal(persisted(snapshot));
}

const everyEvent: PaymentInstructionEvent[] = [
  { type: 'PAYMENT_MATCHED', now: BEFORE },
  { type: 'PAYMENT_MATCHED', now: AFTER },
  { type: 'EXPIRE', now: BEFORE },
  { type: 'EXPIRE', now: EXPIRES },
  { type: 'EXPIRE', now: AFTER },
];

describe('payment instruction machine', () => {
  it('starts UNPAID with its expiry, unpaid, and asks for nothing', () => {
    const [snapshot, actions] = initialTransition(paymentInstructionMachine, {
      expiresAt: EXPIRES.toISOString(),
    });
    expect(actions).to.deep.equal([]);
    expect(snapshot.value).to.equal('UNPAID');
    expect(snapshot.status).to.equal('active');
    expect(snapshot.context).to.deep.equal({ expiresAt: EXPIRES.toISOString(), paidAt: null });
  });

  it('persists as plain JSON and cannot be driven from raw JSON without resolveState', () => {
    const raw = persisted(fresh()) as Snapshot;
    expect(raw).to.include({ value: 'UNPAID', status: 'active' });
    expect(() => transition(paymentInstructionMachine, raw, { type: 'EXPIRE', now: AFTER })).to.throw();
  });

  describe('from UNPAID', () => {
    it('PAYMENT_MATCHED moves to PAID and records when', () => {
      const next = apply(fresh(), { type: 'PAYMENT_MATCHED', now: BEFORE });
      expect(next.value).to.equal('PAID');
      expect(next.status).to.equal('done');
      expect(next.context.paidAt).to.equal(BEFORE.toISOString());
    });

    it('PAYMENT_MATCHED after the expiry still counts: matching decided that the money belongs here', () => {
      expect(apply(fresh(), { type: 'PAYMENT_MATCHED', now: AFTER }).value).to.equal('PAID');
    });

    it('EXPIRE once the expiry is reached moves to EXPIRED (the boundary instant counts)', () => {
      const atBoundary = apply(fresh(), { type: 'EXPIRE', now: EXPIRES });
      expect(atBoundary.value).to.equal('EXPIRED');
      expect(atBoundary.status).to.equal('done');
      expect(atBoundary.context.paidAt).to.equal(null);
      expect(apply(fresh(), { type: 'EXPIRE', now: AFTER }).value).to.equal('EXPIRED');
    });

    it('EXPIRE before the expiry changes nothing', () => {
      expectIgnored(fresh(), { type: 'EXPIRE', now: BEFORE });
    });
  });

  describe('final states absorb every event', () => {
    it('PAID keeps its paidAt whatever arrives later', () => {
      const paid = apply(fresh(), { type: 'PAYMENT_MATCHED', now: BEFORE });
      for (const event of everyEvent) expectIgnored(paid, event);
      expect(paid.context.paidAt).to.equal(BEFORE.toISOString());
    });

    it('EXPIRED is never paid afterwards', () => {
      const expired = apply(fresh(), { type: 'EXPIRE', now: AFTER });
      for (const event of everyEvent) expectIgnored(expired, event);
    });
  });

  it('continues after a JSON round trip of every step', () => {
    const restored = paymentInstructionMachine.resolveState(JSON.parse(JSON.stringify(persisted(fresh()))));
    const paid = apply(restored, { type: 'PAYMENT_MATCHED', now: BEFORE });
    expect(persisted(paid)).to.deep.include({ value: 'PAID', status: 'done' });
  });
});
