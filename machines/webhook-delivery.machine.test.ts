import { expect } from 'chai';
import { type AnyStateMachine, createActor, initialTransition, type SnapshotFrom, transition } from 'xstate';
import {
  ABANDONED_REASON,
  nextAttemptAt,
  type RecordParams,
  retryDelayMs,
  WEBHOOK_MAX_ATTEMPTS,
  type WebhookDeliveryEvent,
  webhookDeliveryMachine,
} from './webhook-delivery.machine.ts';

type Snapshot = SnapshotFrom<typeof webhookDeliveryMachine>;

const T0 = new Date('2026-01-01T12:00:00.000Z');
const BASE = 10_000;
const LEASE = 60_000;
const at = (ms: number) => new Date(T0.getTime() + ms);

/** What the database would hand back: the persisted snapshot as JSON, restored by the machine. */
function roundTrip(snapshot: Snapshot): Snapshot {
  return webhookDeliveryMachine.resolveState(
    JSON.parse(JSON.stringify(webhookDeliveryMachine.getPersistedSnapshot(snapshot))),
  );
}

function persisted(snapshot: Snapshot): unknown {
  return JSON.parse(JSON.stringify(webhookDeliveryMachine.getPersistedSnapshot(snapshot)));
}

function fresh(now = T0): Snapshot {
  const [snapshot, actions] = initialTransition(webhookDeliveryMachine, { now });
  expect(actions).to.deep.equal([]);
  return roundTrip(snapshot);
}

/** Applies an event that must be taken; returns the next snapshot and the records it asks for. */
function apply(snapshot: Snapshot, event: WebhookDeliveryEvent): { next: Snapshot; records: RecordParams[] } {
  const [next, actions] = transition(webhookDeliveryMachine, snapshot, event);
  expect(next, `${event.type} must be taken`).to.not.equal(snapshot);
  for (const action of actions) expect(action.type).to.equal('record');
  return { next: roundTrip(next), records: actions.map((a) => a.params as RecordParams) };
}

/** Asserts that an event is ignored: the very same snapshot comes back and nothing is asked for. */
function expectIgnored(snapshot: Snapshot, event: WebhookDeliveryEvent): void {
  const [next, actions] = transition(webhookDeliveryMachine, snapshot, event);
  expect(actions).to.deep.equal([]);
  expect(next, `${event.type} is ignored`).to.equal(snapshot);
  expect(persisted(next)).to.deep.equal(persisted(snapshot));
}

const attempt = (now: Date): WebhookDeliveryEvent => ({ type: 'ATTEMPT', now, leaseMs: LEASE });
const succeeded = (n: number, now: Date): WebhookDeliveryEvent => ({
  type: 'SUCCEEDED',
  attempt: n,
  responseStatus: 204,
  now,
});
const failed = (n: number, now: Date, responseStatus: number | null = 500): WebhookDeliveryEvent => ({
  type: 'FAILED',
  attempt: n,
  responseStatus,
  failureReason: responseStatus ? `HTTP ${responseStatus}` : 'timeout',
  backoffBaseMs: BASE,
  now,
});

describe('webhook delivery machine', () => {
  describe('retry schedule (pure)', () => {
    it('waits base * 2^(n-2) before attempt n: 10 s, 20 s, 40 s, 80 s by default', () => {
      expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, BASE))).to.deep.equal([
        0, 10_000, 20_000, 40_000, 80_000,
      ]);
      expect(retryDelayMs(3, 250)).to.equal(500);
    });

    it('counts from the time the previous attempt failed', () => {
      expect(nextAttemptAt(at(5), 2, BASE).toISOString()).to.equal(at(10_005).toISOString());
    });
  });

  it('starts PENDING, due at once, with no attempt made', () => {
    const s = fresh();
    expect(s.value).to.equal('PENDING');
    expect(s.context).to.deep.equal({
      attempts: 0,
      dueAt: T0.toISOString(),
      lastResponseStatus: null,
      lastFailureReason: null,
    });
  });

  it('ATTEMPT before the due time is ignored', () => {
    expectIgnored(fresh(), attempt(at(-1)));
  });

  it('ATTEMPT moves to ATTEMPTING, counts the attempt and holds a lease as due time', () => {
    const { next, records } = apply(fresh(), attempt(T0));
    expect(next.value).to.equal('ATTEMPTING');
    expect(next.context.attempts).to.equal(1);
    expect(next.context.dueAt).to.equal(at(LEASE).toISOString());
    expect(records).to.deep.equal([]);
  });

  it('a 2xx answer ends in SUCCEEDED with one SUCCESS record', () => {
    const attempting = apply(fresh(), attempt(T0)).next;
    const { next, records } = apply(attempting, succeeded(1, T0));
    expect(next.value).to.equal('SUCCEEDED');
    expect(next.status).to.equal('done');
    expect(next.context.dueAt).to.equal(null);
    expect(records).to.deep.equal([
      { attemptNumber: 1, status: 'SUCCESS', responseStatus: 204, failureReason: null },
    ]);
  });

  it('a failure schedules the next attempt after the backoff and records FAILED', () => {
    const attempting = apply(fresh(), attempt(T0)).next;
    const { next, records } = apply(attempting, failed(1, at(100)));
    expect(next.value).to.equal('RETRY_SCHEDULED');
    expect(next.context).to.include({
      attempts: 1,
      dueAt: at(100 + BASE).toISOString(),
      lastResponseStatus: 500,
      lastFailureReason: 'HTTP 500',
    });
    expect(records).to.deep.equal([
      { attemptNumber: 1, status: 'FAILED', responseStatus: 500, failureReason: 'HTTP 500' },
    ]);
    expectIgnored(next, attempt(at(100 + BASE - 1)));
    expect(apply(next, attempt(at(100 + BASE))).next.value).to.equal('ATTEMPTING');
  });

  it('five failures in a row follow the schedule and the fifth is DEAD, never retried', () => {
    let s = fresh();
    let now = T0;
    const seen: RecordParams[] = [];
    const attemptTimes: number[] = [];
    for (let n = 1; n <= WEBHOOK_MAX_ATTEMPTS; n++) {
      now = new Date(Date.parse(s.context.dueAt ?? ''));
      attemptTimes.push(now.getTime() - T0.getTime());
      s = apply(s, attempt(now)).next;
      const result = apply(s, failed(n, now, null));
      s = result.next;
      seen.push(...result.records);
    }
    expect(attemptTimes).to.deep.equal([0, 10_000, 30_000, 70_000, 150_000]);
    expect(seen.map((r) => [r.attemptNumber, r.status])).to.deep.equal([
      [1, 'FAILED'],
      [2, 'FAILED'],
      [3, 'FAILED'],
      [4, 'FAILED'],
      [5, 'DEAD'],
    ]);
    expect(s.value).to.equal('DEAD');
    expect(s.status).to.equal('done');
    expect(s.context.dueAt).to.equal(null);
    expectIgnored(s, attempt(at(10 * 60_000)));
    expectIgnored(s, succeeded(5, now));
    expectIgnored(s, { type: 'ABANDON', backoffBaseMs: BASE, now: at(10 * 60_000) });
  });

  it('a success after a failure keeps its own answer and forgets the failure', () => {
    let s = apply(fresh(), attempt(T0)).next;
    s = apply(s, failed(1, T0, 503)).next;
    s = apply(s, attempt(at(BASE))).next;
    const { next } = apply(s, { ...succeeded(2, at(BASE)), responseStatus: 202 } as WebhookDeliveryEvent);
    expect(next.value).to.equal('SUCCEEDED');
    expect(next.context).to.deep.equal({
      attempts: 2,
      dueAt: null,
      lastResponseStatus: 202,
      lastFailureReason: null,
    });
  });

  it('DEAD keeps the last answer: the status and reason of the fifth failure, or none when abandoned', () => {
    const fifthAttempt = (): Snapshot => {
      let s = fresh();
      for (let n = 1; n < WEBHOOK_MAX_ATTEMPTS; n++) {
        s = apply(s, attempt(new Date(Date.parse(s.context.dueAt ?? '')))).next;
        s = apply(s, failed(n, new Date(Date.parse(s.context.dueAt ?? '') - LEASE), 500)).next;
      }
      return apply(s, attempt(new Date(Date.parse(s.context.dueAt ?? '')))).next;
    };
    const answered = apply(fifthAttempt(), failed(WEBHOOK_MAX_ATTEMPTS, T0, 410)).next;
    expect(answered.value).to.equal('DEAD');
    expect(answered.context).to.deep.equal({
      attempts: WEBHOOK_MAX_ATTEMPTS,
      dueAt: null,
      lastResponseStatus: 410,
      lastFailureReason: 'HTTP 410',
    });
    const s = fifthAttempt();
    const abandoned = apply(s, {
      type: 'ABANDON',
      backoffBaseMs: BASE,
      now: new Date(Date.parse(s.context.dueAt ?? '')),
    }).next;
    expect(abandoned.value).to.equal('DEAD');
    expect(abandoned.context).to.deep.equal({
      attempts: WEBHOOK_MAX_ATTEMPTS,
      dueAt: null,
      lastResponseStatus: null,
      lastFailureReason: ABANDONED_REASON,
    });
  });

  it('a failure without an answer (time-out) leaves no response status, and an abandoned attempt none either', () => {
    const attempting = apply(apply(fresh(), attempt(T0)).next, failed(1, T0, 500)).next;
    const retrying = apply(attempting, attempt(at(BASE))).next;
    const { next } = apply(retrying, failed(2, at(BASE), null));
    expect(next.context).to.deep.include({ lastResponseStatus: null, lastFailureReason: 'timeout' });
    const again = apply(next, attempt(at(3 * BASE))).next;
    const abandoned = apply(again, { type: 'ABANDON', backoffBaseMs: BASE, now: at(3 * BASE + LEASE) }).next;
    expect(abandoned.context).to.deep.include({
      attempts: 3,
      dueAt: at(3 * BASE + LEASE + 4 * BASE).toISOString(),
      lastResponseStatus: null,
      lastFailureReason: ABANDONED_REASON,
    });
  });

  it('an actor built without input starts with no due time, and nothing is ever due', () => {
    // As the engine builds its one actor per machine: no input.
    const snapshot = createActor(webhookDeliveryMachine as AnyStateMachine).getSnapshot() as Snapshot;
    expect(snapshot.context).to.deep.equal({
      attempts: 0,
      dueAt: null,
      lastResponseStatus: null,
      lastFailureReason: null,
    });
    expectIgnored(snapshot, attempt(at(365 * 24 * 3_600_000)));
  });

  it('a result for another attempt than the current one is ignored', () => {
    const attempting = apply(fresh(), attempt(T0)).next;
    expectIgnored(attempting, succeeded(2, T0));
    expectIgnored(attempting, failed(0, T0));
  });

  it('results outside ATTEMPTING are ignored', () => {
    expectIgnored(fresh(), succeeded(0, T0));
    expectIgnored(fresh(), failed(0, T0));
    const done = apply(apply(fresh(), attempt(T0)).next, succeeded(1, T0)).next;
    for (const event of [attempt(at(LEASE * 10)), succeeded(1, T0), failed(1, T0)])
      expectIgnored(done, event);
  });

  describe('an attempt whose worker stopped', () => {
    it('ABANDON before the lease runs out is ignored (the attempt may still answer)', () => {
      const attempting = apply(fresh(), attempt(T0)).next;
      expectIgnored(attempting, { type: 'ABANDON', backoffBaseMs: BASE, now: at(LEASE - 1) });
    });

    it('ABANDON after the lease counts as a failed attempt without a response', () => {
      const attempting = apply(fresh(), attempt(T0)).next;
      const { next, records } = apply(attempting, { type: 'ABANDON', backoffBaseMs: BASE, now: at(LEASE) });
      expect(next.value).to.equal('RETRY_SCHEDULED');
      expect(next.context.dueAt).to.equal(at(LEASE + BASE).toISOString());
      expect(records).to.deep.equal([
        {
          attemptNumber: 1,
          status: 'FAILED',
          responseStatus: null,
          // What the merchant reads in its deliveries: the outcome is unknown, not a failure of its server.
          failureReason: 'interrupted: the attempt was not completed (worker stopped)',
        },
      ]);
      // The late answer of the abandoned attempt does not settle the next one.
      const retrying = apply(next, attempt(at(LEASE + BASE))).next;
      expectIgnored(retrying, succeeded(1, at(LEASE + BASE)));
    });

    it('ABANDON of the fifth attempt is DEAD', () => {
      let s = fresh();
      for (let n = 1; n < WEBHOOK_MAX_ATTEMPTS; n++) {
        s = apply(s, attempt(new Date(Date.parse(s.context.dueAt ?? '')))).next;
        s = apply(s, failed(n, new Date(Date.parse(s.context.dueAt ?? '') - LEASE))).next;
      }
      s = apply(s, attempt(new Date(Date.parse(s.context.dueAt ?? '')))).next;
      const { next, records } = apply(s, {
        type: 'ABANDON',
        backoffBaseMs: BASE,
        now: new Date(Date.parse(s.context.dueAt ?? '')),
      });
      expect(next.value).to.equal('DEAD');
      expect(records.map((r) => r.status)).to.deep.equal(['DEAD']);
    });
  });
});
