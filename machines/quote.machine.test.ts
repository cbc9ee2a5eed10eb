import { expect } from 'chai';
import { initialTransition, type SnapshotFrom, transition } from 'xstate';
import { type QuoteEvent, quoteMachine } from './quote.machine.ts';

type Snapshot = SnapshotFrom<typeof quoteMachine>;

const CREATED = new Date('2026-01-01T12:00:00.000Z');
const EXPIRES = new Date('2026-01-01T12:00:30.000Z');
const BEFORE = new Date(EXPIRES.getTime() - 1);
const AFTER = new Date(EXPIRES.getTime() + 1);

/** What the database would hand back: the persisted snapshot as JSON, restored by the machine. */
function roundTrip(snapshot: Snapshot): Snapshot {
  return quoteMachine.resolveState(JSON.parse(JSON.stringify(quoteMachine.getPersistedSnapshot(snapshot))));
}

function fresh(): Snapshot {
  const [snapshot] = initialTransition(quoteMachine, { expiresAt: EXPIRES.toISOString() });
  return roundTrip(snapshot);
}

function apply(snapshot: Snapshot, event: QuoteEvent): Snapshot {
  const [next, actions] = transition(quoteMachine, snapshot, event);
  // Quotes produce no side effects for the caller to carry out.
  expect(actions).to.deep.equal([]);
  return roundTrip(next);
}

function persisted(snapshot: Snapshot): unknown {
  return JSON.parse(JSON.stringify(quoteMachine.getPersistedSnapshot(snapshot)));
}

/** Asserts that an event is ignored: the persisted snapshot stays byte-for-byte the same. */
function expectIgnored(snapshot: Snapshot, event: QuoteEvent): void {
  const [next, actions] = transition(quoteMachine, snapshot, event);
  expect(actions).to.deep.equal([]);
  expect(persisted(next)).to.deep.equal(persisted(snapshot));
}

describe('quote machine', () => {
  it('starts PENDING with its expiry and no payout, and asks for nothing', () => {
    const [snapshot, actions] = initialTransition(quoteMachine, { expiresAt: EXPIRES.toISOString() });
    expect(actions).to.deep.equal([]);
    expect(snapshot.value).to.equal('PENDING');
    expect(snapshot.status).to.equal('active');
    expect(snapshot.context).to.deep.equal({ expiresAt: EXPIRES.toISOString(), payoutId: null });
  });

  it('persists as plain JSON and cannot be driven from raw JSON without resolveState', () => {
    const raw = persisted(fresh()) as Snapshot;
    expect(raw).to.include({ value: 'PENDING', status: 'active' });
    expect(() => transition(quoteMachine, raw, { type: 'ACCEPT', now: CREATED })).to.throw();
  });

  describe('from PENDING', () => {
    it('ACCEPT before expiry moves to ACCEPTED', () => {
      const next = apply(fresh(), { type: 'ACCEPT', now: BEFORE });
      expect(next.value).to.equal('ACCEPTED');
      expect(next.status).to.equal('active');
    });

    it('ACCEPT at or after expiry changes nothing', () => {
      expectIgnored(fresh(), { type: 'ACCEPT', now: EXPIRES });
      expectIgnored(fresh(), { type: 'ACCEPT', now: AFTER });
    });

    it('USE before expiry moves to USED and records the payout', () => {
      const next = apply(fresh(), { type: 'USE', payoutId: 'payout-1', now: BEFORE });
      expect(next.value).to.equal('USED');
      expect(next.status).to.equal('done');
      expect(next.context.payoutId).to.equal('payout-1');
    });

    it('USE at or after expiry changes nothing', () => {
      expectIgnored(fresh(), { type: 'USE', payoutId: 'payout-1', now: EXPIRES });
      expectIgnored(fresh(), { type: 'USE', payoutId: 'payout-1', now: AFTER });
    });

    it('EXPIRE once the expiry is reached moves to EXPIRED (the boundary instant counts)', () => {
      const atBoundary = apply(fresh(), { type: 'EXPIRE', now: EXPIRES });
      expect(atBoundary.value).to.equal('EXPIRED');
      expect(atBoundary.status).to.equal('done');
      expect(apply(fresh(), { type: 'EXPIRE', now: AFTER }).value).to.equal('EXPIRED');
    });

    it('EXPIRE before the expiry changes nothing', () => {
      expectIgnored(fresh(), { type: 'EXPIRE', now: BEFORE });
    });
  });

  describe('from ACCEPTED', () => {
    const accepted = () => apply(fresh(), { type: 'ACCEPT', now: CREATED });

    it('ACCEPT again changes nothing', () => {
      expectIgnored(accepted(), { type: 'ACCEPT', now: BEFORE });
    });

    it('USE before expiry moves to USED and records the payout', () => {
      const next = apply(accepted(), { type: 'USE', payoutId: 'payout-2', now: BEFORE });
      expect(next.value).to.equal('USED');
      expect(next.context.payoutId).to.equal('payout-2');
    });

    it('USE at or after expiry changes nothing', () => {
      expectIgnored(accepted(), { type: 'USE', payoutId: 'payout-2', now: EXPIRES });
    });

    it('EXPIRE after the expiry moves to EXPIRED, before it changes nothing', () => {
      expectIgnored(accepted(), { type: 'EXPIRE', now: BEFORE });
      expect(apply(accepted(), { type: 'EXPIRE', now: AFTER }).value).to.equal('EXPIRED');
    });
  });

  describe('final states absorb every event', () => {
    const everyEvent: QuoteEvent[] = [
      { type: 'ACCEPT', now: BEFORE },
      { type: 'ACCEPT', now: AFTER },
      { type: 'USE', payoutId: 'payout-other', now: BEFORE },
      { type: 'USE', payoutId: 'payout-other', now: AFTER },
      { type: 'EXPIRE', now: AFTER },
    ];

    it('USED keeps its payout whatever arrives later', () => {
      const used = apply(fresh(), { type: 'USE', payoutId: 'payout-1', now: BEFORE });
      for (const event of everyEvent) expectIgnored(used, event);
      expect(used.context.payoutId).to.equal('payout-1');
    });

    it('EXPIRED never comes back', () => {
      const expired = apply(fresh(), { type: 'EXPIRE', now: AFTER });
      for (const event of everyEvent) expectIgnored(expired, event);
    });
  });
});
