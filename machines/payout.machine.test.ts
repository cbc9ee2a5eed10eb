import { expect } from 'chai';
import { initialTransition, type SnapshotFrom, type StateValue, transition } from 'xstate';
import {
  type AttemptFailure,
  decimalAtLeast,
  decimalExcess,
  type PayoutEvent,
  payoutMachine,
  type TriggeredBy,
} from './payout.machine.ts';

type Snapshot = SnapshotFrom<typeof payoutMachine>;
type Action = { type: string; params: unknown };

const NOW = new Date('2026-01-01T12:00:00.000Z');

/** What the database would hand back: the persisted snapshot as JSON, restored by the machine. */
function roundTrip(snapshot: Snapshot): Snapshot {
  return payoutMachine.resolveState(JSON.parse(JSON.stringify(payoutMachine.getPersistedSnapshot(snapshot))));
}

function persisted(snapshot: Snapshot): unknown {
  return JSON.parse(JSON.stringify(payoutMachine.getPersistedSnapshot(snapshot)));
}

/** The status column, as the engine derives it: the top-level state. */
function statusOf(value: StateValue): string {
  return typeof value === 'string' ? value : Object.keys(value)[0]!;
}

/** Actions as the engine's hook receives them; each must be plain data it can store. */
function data(actions: readonly { type: string; params?: unknown }[]): Action[] {
  return actions.map(({ type, params }) => {
    expect(type, 'only custom actions reach the engine').to.be.oneOf([
      'timeline',
      'emit',
      'schedule',
      'post',
    ]);
    expect(params, `params of ${type}`).to.be.an('object');
    expect(JSON.parse(JSON.stringify(params))).to.deep.equal(params);
    return { type, params };
  });
}

function start(): { snapshot: Snapshot; actions: Action[] } {
  const [snapshot, actions] = initialTransition(payoutMachine);
  return { snapshot: roundTrip(snapshot), actions: data(actions) };
}

/** Applies an event that must be taken: the engine sees that as a new snapshot object. */
function take(snapshot: Snapshot, event: PayoutEvent): { next: Snapshot; actions: Action[] } {
  const [next, actions] = transition(payoutMachine, snapshot, event);
  expect(next, `${event.type} must be taken`).to.not.equal(snapshot);
  return { next: roundTrip(next), actions: data(actions) };
}

function apply(snapshot: Snapshot, event: PayoutEvent): Snapshot {
  return take(snapshot, event).next;
}

/** Asserts that an event is ignored: the very same snapshot comes back and nothing is asked for. */
function expectIgnored(snapshot: Snapshot, event: PayoutEvent): void {
  const [next, actions] = transition(payoutMachine, snapshot, event);
  expect(actions, `${event.type} asks for nothing`).to.deep.equal([]);
  expect(next, `${event.type} is ignored`).to.equal(snapshot);
  expect(persisted(next)).to.deep.equal(persisted(snapshot));
}

const timeline = (reasonCode: string): Action => ({ type: 'timeline', params: { reasonCode } });
const emit = (event: string): Action => ({ type: 'emit', params: { event } });
const schedule = (task: string): Action => ({ type: 'schedule', params: { task } });

const settlement = (receivedTotal: string, expected = '100', triggeredBy: 'SYSTEM' | 'ADMIN' = 'SYSTEM') =>
  ({ type: 'SETTLEMENT_CONFIRMED', receivedTotal, expected, triggeredBy, now: NOW }) as const;
const failure = <T extends 'DISPATCH_FAILED' | 'PROCESSOR_FAILED'>(
  type: T,
  failureCode: string,
  retryable: boolean,
  attemptsLeft: boolean,
): { type: T } & AttemptFailure & { triggeredBy: TriggeredBy; now: Date } => ({
  type,
  failureCode,
  failureReason: `${failureCode} reported by the processor`,
  retryable,
  attemptsLeft,
  triggeredBy: type === 'DISPATCH_FAILED' ? 'SYSTEM' : 'PROCESSOR_WEBHOOK',
  now: NOW,
});

/** One of every event the machine knows, in the variants its guards tell apart. */
const EVENTS = {
  generated: { type: 'INSTRUCTION_GENERATED', triggeredBy: 'SYSTEM', now: NOW },
  generationFailed: {
    type: 'INSTRUCTION_GENERATION_FAILED',
    failureReason: 'rate unavailable after 5 attempts',
    triggeredBy: 'SYSTEM',
    now: NOW,
  },
  settledExactly: settlement('100'),
  settledOver: settlement('100.5'),
  settledUnder: settlement('40'),
  instructionExpired: { type: 'INSTRUCTION_EXPIRED', triggeredBy: 'SYSTEM', now: NOW },
  operatorFail: { type: 'OPERATOR_FAIL', triggeredBy: 'ADMIN', now: NOW },
  dispatchAccepted: { type: 'DISPATCH_ACCEPTED', triggeredBy: 'SYSTEM', now: NOW },
  dispatchRetryable: failure('DISPATCH_FAILED', 'PROCESSOR_BUSY', true, true),
  dispatchExhausted: failure('DISPATCH_FAILED', 'PROCESSOR_BUSY', true, false),
  dispatchFatal: failure('DISPATCH_FAILED', 'ACCOUNT_CLOSED', false, true),
  succeeded: { type: 'PROCESSOR_SUCCEEDED', triggeredBy: 'PROCESSOR_WEBHOOK', now: NOW },
  processorRetryable: failure('PROCESSOR_FAILED', 'TIMEOUT_AT_BANK', true, true),
  processorExhausted: failure('PROCESSOR_FAILED', 'TIMEOUT_AT_BANK', true, false),
  processorFatal: failure('PROCESSOR_FAILED', 'ACCOUNT_CLOSED', false, false),
  payeeHeld: { type: 'PAYEE_NAME_HELD', triggeredBy: 'SYSTEM', now: NOW },
  payeeRefused: { type: 'PAYEE_NAME_REFUSED', triggeredBy: 'SYSTEM', now: NOW },
  payeeAccepted: { type: 'PAYEE_NAME_ACCEPTED', triggeredBy: 'ADMIN', now: NOW },
} satisfies Record<string, PayoutEvent>;
type EventName = keyof typeof EVENTS;

/** Every event of the catalogue but `taken` must leave the snapshot untouched. */
function expectOnlyTaken(snapshot: Snapshot, taken: EventName[]): void {
  for (const [name, event] of Object.entries(EVENTS) as [EventName, PayoutEvent][]) {
    if (taken.includes(name)) take(snapshot, event);
    else expectIgnored(snapshot, event);
  }
}

const created = () => start().snapshot;
const payeeHeld = () => apply(created(), EVENTS.payeeHeld);
const awaiting = () => apply(created(), EVENTS.generated);
const held = () => apply(awaiting(), EVENTS.settledUnder);
const paymentReceived = () => apply(awaiting(), EVENTS.settledExactly);
const processing = () => apply(paymentReceived(), EVENTS.dispatchAccepted);
const redispatching = () => apply(processing(), EVENTS.processorRetryable);

describe('payout machine', () => {
  describe('creation', () => {
    it('starts CREATED, records PAYOUT_CREATED, announces payout.created and asks for the instruction', () => {
      const { snapshot, actions } = start();
      expect(snapshot.value).to.deep.equal({ CREATED: 'preparing' });
      expect(snapshot.status).to.equal('active');
      expect(snapshot.context).to.deep.equal({ receivedTotal: null, overpayment: null, failure: null });
      expect(actions).to.deep.equal([
        timeline('PAYOUT_CREATED'),
        emit('payout.created'),
        schedule('GENERATE_INSTRUCTION'),
      ]);
    });

    it('persists as plain JSON and cannot be driven from raw JSON without resolveState', () => {
      const raw = persisted(created()) as Snapshot;
      expect(raw).to.deep.include({ value: { CREATED: 'preparing' }, status: 'active' });
      expect(() => transition(payoutMachine, raw, EVENTS.generated)).to.throw();
    });
  });

  describe('from CREATED', () => {
    it('INSTRUCTION_GENERATED moves to PENDING_PAYMENT, awaiting the settlement', () => {
      const { next, actions } = take(created(), EVENTS.generated);
      expect(next.value).to.deep.equal({ PENDING_PAYMENT: 'awaiting' });
      expect(statusOf(next.value)).to.equal('PENDING_PAYMENT');
      expect(actions).to.deep.equal([timeline('INSTRUCTION_GENERATED'), emit('payout.pending_payment')]);
    });

    it('INSTRUCTION_GENERATION_FAILED fails the payout without a refund: no money was asked for', () => {
      const { next, actions } = take(created(), EVENTS.generationFailed);
      expect(next.value).to.equal('FAILED');
      expect(next.status).to.equal('done');
      expect(next.context.failure).to.deep.equal({
        code: 'INSTRUCTION_GENERATION_FAILED',
        reason: 'rate unavailable after 5 attempts',
      });
      expect(actions).to.deep.equal([timeline('INSTRUCTION_GENERATION_FAILED'), emit('payout.failed')]);
    });

    it('ignores every other event', () => {
      expectOnlyTaken(created(), ['generated', 'generationFailed', 'payeeHeld', 'payeeRefused']);
    });
  });

  describe('the payee name check', () => {
    it('PAYEE_NAME_HELD holds a CREATED payout for an operator, asking for nothing else', () => {
      const { next, actions } = take(created(), EVENTS.payeeHeld);
      expect(next.value).to.deep.equal({ CREATED: 'payeeHeld' });
      expect(actions).to.deep.equal([timeline('PAYEE_NAME_HELD')]);
    });

    it('PAYEE_NAME_REFUSED fails the payout before any money was asked for: no refund', () => {
      const { next, actions } = take(created(), EVENTS.payeeRefused);
      expect(next.value).to.equal('FAILED');
      // The reason the merchant reads on the failed payout.
      expect(next.context.failure).to.deep.equal({
        code: 'PAYEE_NAME_MISMATCH',
        reason: "the beneficiary's name does not match the account",
      });
      expect(actions).to.deep.equal([timeline('PAYEE_NAME_MISMATCH'), emit('payout.failed')]);
    });

    it('an operator accepting the name sends the payout back to its instruction', () => {
      const { next, actions } = take(payeeHeld(), EVENTS.payeeAccepted);
      expect(next.value).to.deep.equal({ CREATED: 'preparing' });
      expect(actions).to.deep.equal([timeline('PAYEE_NAME_ACCEPTED'), schedule('GENERATE_INSTRUCTION')]);
    });

    it('an operator failing the held payout fails it without a refund', () => {
      const { next, actions } = take(payeeHeld(), EVENTS.operatorFail);
      expect(next.value).to.equal('FAILED');
      // The reason the merchant reads on the failed payout.
      expect(next.context.failure).to.deep.equal({
        code: 'PAYEE_NAME_MISMATCH',
        reason: "the beneficiary's name does not match the account",
      });
      expect(actions).to.deep.equal([timeline('PAYEE_NAME_REJECTED'), emit('payout.failed')]);
    });

    it('a held payout gets no instruction and ignores everything but an operator', () => {
      expectOnlyTaken(payeeHeld(), ['payeeAccepted', 'operatorFail']);
    });

    it('a snapshot stored before CREATED had inner states resumes in CREATED.preparing', () => {
      const old = JSON.parse(JSON.stringify(payoutMachine.getPersistedSnapshot(created())));
      old.value = 'CREATED';
      const resumed = payoutMachine.resolveState(old);
      expect(resumed.value).to.deep.equal({ CREATED: 'preparing' });
      expect(take(resumed, EVENTS.generated).next.value).to.deep.equal({ PENDING_PAYMENT: 'awaiting' });
    });
  });

  describe('from PENDING_PAYMENT (awaiting)', () => {
    const paidActions = [timeline('PAYMENT_RECEIVED'), emit('payout.payment_received'), schedule('DISPATCH')];

    it('a settlement of exactly the expected amount moves to PAYMENT_RECEIVED and asks for dispatch', () => {
      const { next, actions } = take(awaiting(), EVENTS.settledExactly);
      expect(next.value).to.equal('PAYMENT_RECEIVED');
      expect(next.context).to.include({ receivedTotal: '100', overpayment: null });
      expect(actions).to.deep.equal(paidActions);
    });

    it('an overpayment proceeds too and keeps the excess for the timeline detail', () => {
      const { next, actions } = take(awaiting(), EVENTS.settledOver);
      expect(next.value).to.equal('PAYMENT_RECEIVED');
      expect(next.context).to.include({ receivedTotal: '100.5', overpayment: '0.5' });
      expect(actions).to.deep.equal(paidActions);
    });

    it('compares amounts of different scales exactly', () => {
      expect(apply(awaiting(), settlement('100.000000', '100')).context.overpayment).to.equal(null);
      expect(apply(awaiting(), settlement('100.000001', '100')).context.overpayment).to.equal('0.000001');
      expect(apply(awaiting(), settlement('99.999999', '100')).value).to.deep.equal({
        PENDING_PAYMENT: 'held',
      });
    });

    it('an underpayment holds the payout for review without leaving PENDING_PAYMENT', () => {
      const { next, actions } = take(awaiting(), EVENTS.settledUnder);
      expect(next.value).to.deep.equal({ PENDING_PAYMENT: 'held' });
      expect(statusOf(next.value)).to.equal('PENDING_PAYMENT');
      expect(next.context).to.include({ receivedTotal: '40', overpayment: null });
      expect(actions).to.deep.equal([timeline('SETTLEMENT_UNDERPAID'), emit('payout.underpaid')]);
    });

    it('an operator attributing money is the same settlement, only triggered by ADMIN', () => {
      const { next, actions } = take(awaiting(), settlement('100', '100', 'ADMIN'));
      expect(next.value).to.equal('PAYMENT_RECEIVED');
      expect(actions).to.deep.equal(paidActions);
    });

    it('INSTRUCTION_EXPIRED with nothing received moves to EXPIRED', () => {
      const { next, actions } = take(awaiting(), EVENTS.instructionExpired);
      expect(next.value).to.equal('EXPIRED');
      expect(next.status).to.equal('done');
      expect(actions).to.deep.equal([timeline('INSTRUCTION_EXPIRED'), emit('payout.expired')]);
    });

    it('ignores every other event (an operator cannot fail a payout that holds nothing)', () => {
      expectOnlyTaken(awaiting(), ['settledExactly', 'settledOver', 'settledUnder', 'instructionExpired']);
    });

    it('refuses amounts that are not non-negative decimal strings rather than guess', () => {
      expect(() => transition(payoutMachine, awaiting(), settlement('1e3'))).to.throw(/decimal string/);
      expect(() => transition(payoutMachine, awaiting(), settlement('-5'))).to.throw(/decimal string/);
      expect(() => transition(payoutMachine, awaiting(), settlement('100', ''))).to.throw(/decimal string/);
    });
  });

  describe('from PENDING_PAYMENT (held)', () => {
    it('a top-up that covers the expected amount moves to PAYMENT_RECEIVED', () => {
      const { next, actions } = take(held(), settlement('100.25'));
      expect(next.value).to.equal('PAYMENT_RECEIVED');
      expect(next.context).to.include({ receivedTotal: '100.25', overpayment: '0.25' });
      expect(actions).to.deep.equal([
        timeline('PAYMENT_RECEIVED'),
        emit('payout.payment_received'),
        schedule('DISPATCH'),
      ]);
    });

    it('a top-up that still falls short stays held, records the new total and tells the merchant again', () => {
      const { next, actions } = take(held(), settlement('60'));
      expect(next.value).to.deep.equal({ PENDING_PAYMENT: 'held' });
      expect(next.context.receivedTotal).to.equal('60');
      expect(actions).to.deep.equal([timeline('SETTLEMENT_UNDERPAID'), emit('payout.underpaid')]);
    });

    it('a repeated confirmation of a total already recorded changes nothing', () => {
      expectIgnored(held(), settlement('40'));
      expectIgnored(held(), settlement('40.00'));
      expectIgnored(held(), settlement('30'));
    });

    it('OPERATOR_FAIL fails the payout and asks for the refund of what was received', () => {
      const { next, actions } = take(held(), EVENTS.operatorFail);
      expect(next.value).to.equal('FAILED');
      expect(next.status).to.equal('done');
      expect(next.context).to.include({ receivedTotal: '40' });
      expect(next.context.failure).to.deep.equal({ code: 'SETTLEMENT_UNDERPAID', reason: null });
      expect(actions).to.deep.equal([
        timeline('SETTLEMENT_UNDERPAID'),
        emit('payout.failed'),
        schedule('RAISE_REFUND'),
      ]);
    });

    it('does not expire: money was received', () => {
      expectIgnored(held(), EVENTS.instructionExpired);
    });

    it('ignores every other event (nothing is dispatched from a hold)', () => {
      expectOnlyTaken(held(), ['settledExactly', 'settledOver', 'operatorFail']);
    });
  });

  describe('from PAYMENT_RECEIVED', () => {
    it('DISPATCH_ACCEPTED moves to PROCESSING and asks for a status query in case no callback comes', () => {
      const { next, actions } = take(paymentReceived(), EVENTS.dispatchAccepted);
      expect(next.value).to.deep.equal({ PROCESSING: 'inFlight' });
      expect(statusOf(next.value)).to.equal('PROCESSING');
      expect(actions).to.deep.equal([
        timeline('DISPATCHED'),
        emit('payout.processing'),
        schedule('QUERY_OUTFLOW'),
      ]);
    });

    it('a retryable DISPATCH_FAILED with attempts left stays PAYMENT_RECEIVED and dispatches again', () => {
      const { next, actions } = take(paymentReceived(), EVENTS.dispatchRetryable);
      expect(next.value).to.equal('PAYMENT_RECEIVED');
      expect(next.context.failure).to.deep.equal({
        code: 'PROCESSOR_BUSY',
        reason: 'PROCESSOR_BUSY reported by the processor',
      });
      expect(actions).to.deep.equal([timeline('DISPATCH_RETRIED'), schedule('DISPATCH')]);
    });

    it('retries as often as attempts are left, each one a taken transition', () => {
      let snapshot = paymentReceived();
      for (let i = 0; i < 3; i++) {
        const { next, actions } = take(snapshot, EVENTS.dispatchRetryable);
        expect(actions).to.deep.equal([timeline('DISPATCH_RETRIED'), schedule('DISPATCH')]);
        snapshot = next;
      }
      expect(snapshot.value).to.equal('PAYMENT_RECEIVED');
    });

    const outcomes = [
      ['a non-retryable', EVENTS.dispatchFatal, 'ACCOUNT_CLOSED'],
      ['a retryable but exhausted', EVENTS.dispatchExhausted, 'PROCESSOR_BUSY'],
    ] as const;
    for (const [kind, event, code] of outcomes) {
      it(`${kind} DISPATCH_FAILED fails the payout with the processor's code and asks for the refund`, () => {
        const { next, actions } = take(paymentReceived(), event);
        expect(next.value).to.equal('FAILED');
        expect(next.status).to.equal('done');
        expect(next.context.failure).to.deep.equal({ code, reason: `${code} reported by the processor` });
        expect(actions).to.deep.equal([timeline(code), emit('payout.failed'), schedule('RAISE_REFUND')]);
      });
    }

    it("resolves the failure code's params function into plain data under transition()", () => {
      const [, actions] = transition(payoutMachine, paymentReceived(), EVENTS.dispatchFatal);
      const params = actions.find((a) => a.type === 'timeline')?.params;
      expect(params).to.not.be.a('function');
      expect(params).to.deep.equal({ reasonCode: 'ACCOUNT_CLOSED' });
    });

    it('ignores every other event (a success before the acceptance is recorded waits for the query)', () => {
      expectOnlyTaken(paymentReceived(), [
        'dispatchAccepted',
        'dispatchRetryable',
        'dispatchExhausted',
        'dispatchFatal',
      ]);
    });
  });

  describe('from PROCESSING', () => {
    const failedActions = (code: string) => [timeline(code), emit('payout.failed'), schedule('RAISE_REFUND')];
    const retriedActions = [timeline('DISPATCH_RETRIED'), schedule('DISPATCH')];

    it('PROCESSOR_SUCCEEDED moves to SUCCESSFUL and keeps the fees (ledger flow SETTLED)', () => {
      const { next, actions } = take(processing(), EVENTS.succeeded);
      expect(next.value).to.equal('SUCCESSFUL');
      expect(next.status).to.equal('done');
      expect(actions).to.deep.equal([
        timeline('PAYOUT_SUCCEEDED'),
        emit('payout.successful'),
        { type: 'post', params: { flow: 'SETTLED' } },
      ]);
    });

    it('a success learned by a status query is the same event, triggered by SYSTEM', () => {
      const { next } = take(processing(), { type: 'PROCESSOR_SUCCEEDED', triggeredBy: 'SYSTEM', now: NOW });
      expect(next.value).to.equal('SUCCESSFUL');
    });

    it('a retryable PROCESSOR_FAILED with attempts left stays PROCESSING, without a webhook, and dispatches again', () => {
      const { next, actions } = take(processing(), EVENTS.processorRetryable);
      expect(next.value).to.deep.equal({ PROCESSING: 'redispatching' });
      expect(statusOf(next.value)).to.equal('PROCESSING');
      expect(next.context.failure?.code).to.equal('TIMEOUT_AT_BANK');
      expect(actions).to.deep.equal(retriedActions);
    });

    it('a non-retryable or exhausted PROCESSOR_FAILED fails the payout with the processor code and asks for the refund', () => {
      for (const event of [EVENTS.processorFatal, EVENTS.processorExhausted]) {
        const { next, actions } = take(processing(), event);
        expect(next.value).to.equal('FAILED');
        expect(next.context.failure?.code).to.equal(event.failureCode);
        expect(actions).to.deep.equal(failedActions(event.failureCode));
      }
    });

    it('DISPATCH_FAILED of the attempt in flight counts like PROCESSOR_FAILED', () => {
      const retried = take(processing(), EVENTS.dispatchRetryable);
      expect(retried.actions).to.deep.equal(retriedActions);
      expect(retried.next.value).to.deep.equal({ PROCESSING: 'redispatching' });
      expect(take(processing(), EVENTS.dispatchFatal).actions).to.deep.equal(failedActions('ACCOUNT_CLOSED'));
      expect(take(processing(), EVENTS.dispatchExhausted).next.value).to.equal('FAILED');
    });

    it('ignores every other event (a duplicate acceptance among them)', () => {
      expectOnlyTaken(processing(), [
        'succeeded',
        'processorRetryable',
        'processorExhausted',
        'processorFatal',
        'dispatchRetryable',
        'dispatchExhausted',
        'dispatchFatal',
      ]);
    });

    describe('while redispatching', () => {
      it('DISPATCH_ACCEPTED of the new attempt only asks for its status query (no timeline, no webhook)', () => {
        const { next, actions } = take(redispatching(), EVENTS.dispatchAccepted);
        expect(next.value).to.deep.equal({ PROCESSING: 'inFlight' });
        expect(actions).to.deep.equal([schedule('QUERY_OUTFLOW')]);
      });

      it('the new attempt refused outright retries again, or fails the payout', () => {
        const again = take(redispatching(), EVENTS.dispatchRetryable);
        expect(again.next.value).to.deep.equal({ PROCESSING: 'redispatching' });
        expect(again.next.context.failure?.code).to.equal('PROCESSOR_BUSY');
        expect(again.actions).to.deep.equal(retriedActions);

        const over = take(redispatching(), EVENTS.dispatchFatal);
        expect(over.next.value).to.equal('FAILED');
        expect(over.actions).to.deep.equal(failedActions('ACCOUNT_CLOSED'));
      });

      it('a callback of the new attempt that overtakes its acceptance still counts', () => {
        expect(take(redispatching(), EVENTS.succeeded).next.value).to.equal('SUCCESSFUL');
        expect(take(redispatching(), EVENTS.processorRetryable).actions).to.deep.equal(retriedActions);
        expect(take(redispatching(), EVENTS.processorFatal).next.value).to.equal('FAILED');
      });

      it('ignores every other event', () => {
        expectOnlyTaken(redispatching(), [
          'dispatchAccepted',
          'succeeded',
          'processorRetryable',
          'processorExhausted',
          'processorFatal',
          'dispatchRetryable',
          'dispatchExhausted',
          'dispatchFatal',
        ]);
      });
    });
  });

  describe('final states absorb every event', () => {
    const finals: [string, () => Snapshot][] = [
      ['SUCCESSFUL', () => apply(processing(), EVENTS.succeeded)],
      ['FAILED before any money', () => apply(created(), EVENTS.generationFailed)],
      ['FAILED from a rejected hold', () => apply(held(), EVENTS.operatorFail)],
      ['FAILED at dispatch', () => apply(paymentReceived(), EVENTS.dispatchFatal)],
      ['FAILED while processing', () => apply(processing(), EVENTS.processorFatal)],
      ['EXPIRED', () => apply(awaiting(), EVENTS.instructionExpired)],
    ];
    for (const [name, reach] of finals) {
      it(`${name} changes nothing, whatever arrives later`, () => {
        const snapshot = reach();
        expect(snapshot.status).to.equal('done');
        expectOnlyTaken(snapshot, []);
      });
    }
  });

  describe('persistence', () => {
    it('drives a whole life through JSON between every step, keeping what the hook needs', () => {
      let snapshot = created();
      for (const event of [
        EVENTS.generated,
        EVENTS.settledUnder,
        settlement('100.5'),
        EVENTS.dispatchRetryable,
        EVENTS.dispatchAccepted,
        EVENTS.processorRetryable,
        EVENTS.dispatchAccepted,
        EVENTS.succeeded,
      ]) {
        snapshot = apply(snapshot, event);
      }
      expect(snapshot.value).to.equal('SUCCESSFUL');
      expect(snapshot.context).to.deep.equal({
        receivedTotal: '100.5',
        overpayment: '0.5',
        failure: { code: 'TIMEOUT_AT_BANK', reason: 'TIMEOUT_AT_BANK reported by the processor' },
      });
    });

    it('a held payout restored from JSON continues to PAYMENT_RECEIVED on a top-up', () => {
      const restored = payoutMachine.resolveState(JSON.parse(JSON.stringify(persisted(held()))));
      expect(restored.value).to.deep.equal({ PENDING_PAYMENT: 'held' });
      expect(restored.context.receivedTotal).to.equal('40');
      expect(take(restored, settlement('100')).next.value).to.equal('PAYMENT_RECEIVED');
    });
  });
});

describe('decimal strings', () => {
  it('compare exactly across scales', () => {
    expect(decimalAtLeast('100', '100.000')).to.equal(true);
    expect(decimalAtLeast('99.9999999999999999', '100')).to.equal(false);
    expect(decimalAtLeast('0.30', '0.3')).to.equal(true);
    expect(decimalAtLeast('1000000000000000000000.01', '1000000000000000000000')).to.equal(true);
  });

  it('give the excess without trailing zeros, or null when there is none', () => {
    expect(decimalExcess('100.50', '100')).to.equal('0.5');
    expect(decimalExcess('101', '100')).to.equal('1');
    expect(decimalExcess('100.000001', '99.9')).to.equal('0.100001');
    expect(decimalExcess('100', '100.00')).to.equal(null);
    expect(decimalExcess('99', '100')).to.equal(null);
    // Every trailing zero goes, not just the last one.
    expect(decimalExcess('100.100', '100')).to.equal('0.1');
    expect(decimalExcess('1.5000', '0.5')).to.equal('1');
    expect(decimalExcess('100.0012300', '100')).to.equal('0.00123');
  });

  it('refuse what is not a non-negative decimal string', () => {
    expect(() => decimalAtLeast('-1', '0')).to.throw('not a non-negative decimal string: "-1"');
    expect(() => decimalExcess('1', '1e3')).to.throw('not a non-negative decimal string: "1e3"');
    expect(() => decimalAtLeast('1.', '0')).to.throw('not a non-negative decimal string: "1."');
  });
});

describe('payout guards, each on its own', () => {
  const guards = payoutMachine.implementations.guards as Record<
    string,
    (args: { context: unknown; event: PayoutEvent }) => boolean
  >;
  const context = (receivedTotal: string | null) => ({ ...created().context, receivedTotal });
  const other = EVENTS.succeeded;

  it('covers the expected amount: a settlement of at least the amount, nothing else', () => {
    expect(guards.coversExpected!({ context: context(null), event: settlement('100.00') })).to.equal(true);
    expect(guards.coversExpected!({ context: context(null), event: settlement('99.99') })).to.equal(false);
    expect(guards.coversExpected!({ context: context(null), event: other })).to.equal(false);
  });

  it('underpaid: a settlement short of the amount, nothing else', () => {
    expect(guards.isUnderpaid!({ context: context(null), event: settlement('99.99') })).to.equal(true);
    expect(guards.isUnderpaid!({ context: context(null), event: settlement('100') })).to.equal(false);
    expect(guards.isUnderpaid!({ context: context(null), event: other })).to.equal(false);
  });

  it('raises the total: the first settlement, or one above the total recorded', () => {
    expect(guards.raisesTotal!({ context: context(null), event: settlement('10') })).to.equal(true);
    expect(guards.raisesTotal!({ context: context('10'), event: settlement('10.00') })).to.equal(false);
    expect(guards.raisesTotal!({ context: context('10'), event: settlement('10.01') })).to.equal(true);
    expect(guards.raisesTotal!({ context: context(null), event: other })).to.equal(false);
  });
});
