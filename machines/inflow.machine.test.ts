import { expect } from 'chai';
import { initialTransition, type SnapshotFrom, transition } from 'xstate';
import { type InflowEvent, inflowMachine } from './inflow.machine.ts';

type Snapshot = SnapshotFrom<typeof inflowMachine>;

const NOW = new Date('2026-03-02T09:00:00.000Z');

/** What the database would hand back: the persisted snapshot as JSON, restored by the machine. */
function roundTrip(snapshot: Snapshot): Snapshot {
  return inflowMachine.resolveState(JSON.parse(JSON.stringify(inflowMachine.getPersistedSnapshot(snapshot))));
}

function persisted(snapshot: Snapshot): unknown {
  return JSON.parse(JSON.stringify(inflowMachine.getPersistedSnapshot(snapshot)));
}

/** The ledger flow each event posts when taken: the money counts, becomes a payout's, or is returned. */
const POSTS: Record<InflowEvent['type'], string[]> = {
  CONFIRMATIONS: ['RECEIVED'],
  ATTRIBUTED: ['ATTRIBUTED'],
  OPERATOR_ATTRIBUTE: ['ATTRIBUTED'],
  OPERATOR_RETURN: ['RETURNED'],
  BELOW_EVERY_OPEN_INSTRUCTION: [],
  NO_OPEN_INSTRUCTION: [],
  PAYOUT_COVERED: [],
  PAYOUT_FAILED: [],
};

const posts = (flows: string[]) => flows.map((flow) => ({ type: 'post', params: { flow } }));

/** The custom actions as the engine receives them (`post`, the only kind this machine asks for). */
const custom = (actions: readonly { type: string; params?: unknown }[]) =>
  actions.map(({ type, params }) => ({ type, params }));

/** A new inflow needing `confirmationsRequired`: a bank credit (0) counts at once, so its money is posted. */
function start(confirmationsRequired: number): Snapshot {
  const [snapshot, actions] = initialTransition(inflowMachine, { confirmationsRequired });
  expect(custom(actions)).to.deep.equal(posts(confirmationsRequired === 0 ? ['RECEIVED'] : []));
  return roundTrip(snapshot);
}

/** Applies an event that must be taken (a new snapshot object), posting the event's flows and nothing else. */
function apply(snapshot: Snapshot, event: InflowEvent): Snapshot {
  const [next, actions] = transition(inflowMachine, snapshot, event);
  expect(next, `${event.type} must be taken`).to.not.equal(snapshot);
  expect(custom(actions.filter((a) => a.type === 'post'))).to.deep.equal(posts(POSTS[event.type]));
  expect(actions.every((a) => a.type === 'post')).to.equal(true);
  return roundTrip(next);
}

/** Asserts that an event is ignored: the very same snapshot comes back and nothing is asked for. */
function expectIgnored(snapshot: Snapshot, event: InflowEvent): void {
  const [next, actions] = transition(inflowMachine, snapshot, event);
  expect(actions, `${event.type} asks for nothing`).to.deep.equal([]);
  expect(next, `${event.type} is ignored`).to.equal(snapshot);
  expect(persisted(next)).to.deep.equal(persisted(snapshot));
}

const EVENTS = {
  confirmationsShort: { type: 'CONFIRMATIONS', received: 18, now: NOW },
  confirmations: { type: 'CONFIRMATIONS', received: 19, now: NOW },
  covers: { type: 'ATTRIBUTED', payoutId: 'payout-1', covers: true, now: NOW },
  short: { type: 'ATTRIBUTED', payoutId: 'payout-1', covers: false, now: NOW },
  below: { type: 'BELOW_EVERY_OPEN_INSTRUCTION', now: NOW },
  noInstruction: { type: 'NO_OPEN_INSTRUCTION', now: NOW },
  covered: { type: 'PAYOUT_COVERED', now: NOW },
  payoutFailed: { type: 'PAYOUT_FAILED', now: NOW },
  operatorCovers: { type: 'OPERATOR_ATTRIBUTE', payoutId: 'payout-2', covers: true, now: NOW },
  operatorShort: { type: 'OPERATOR_ATTRIBUTE', payoutId: 'payout-2', covers: false, now: NOW },
  operatorReturn: { type: 'OPERATOR_RETURN', now: NOW },
} satisfies Record<string, InflowEvent>;
type EventName = keyof typeof EVENTS;

/** Every state an inflow can be in, reached the way settlement reaches it. */
const STATES = {
  pending: () => start(19),
  confirmed: () => apply(start(19), EVENTS.confirmations),
  matched: () => apply(apply(start(19), EVENTS.confirmations), EVENTS.covers),
  heldAttributed: () => apply(start(0), EVENTS.short),
  heldUnattributed: () => apply(apply(start(19), EVENTS.confirmations), EVENTS.below),
  unmatched: () => apply(apply(start(19), EVENTS.confirmations), EVENTS.noInstruction),
  returned: () => apply(apply(start(0), EVENTS.noInstruction), EVENTS.operatorReturn),
  forRefund: () => apply(apply(start(0), EVENTS.short), EVENTS.payoutFailed),
};

/** The events each state takes; every other event leaves it as it is. */
const TAKEN: Record<keyof typeof STATES, EventName[]> = {
  pending: ['confirmations'],
  confirmed: ['covers', 'short', 'below', 'noInstruction'],
  matched: [],
  heldAttributed: ['covered', 'payoutFailed'],
  heldUnattributed: ['operatorCovers', 'operatorShort', 'operatorReturn'],
  unmatched: ['operatorCovers', 'operatorShort', 'operatorReturn'],
  returned: [],
  forRefund: [],
};

describe('inflow machine', () => {
  it('starts a chain transfer PENDING_CONFIRMATION, with its requirement and no payout', () => {
    const snapshot = start(19);
    expect(snapshot.value).to.equal('PENDING_CONFIRMATION');
    expect(snapshot.context).to.deep.equal({ confirmationsRequired: 19, payoutId: null });
  });

  it('starts a bank credit CONFIRMED: it needs no confirmations', () => {
    const snapshot = start(0);
    expect(snapshot.value).to.equal('CONFIRMED');
    expect(snapshot.status).to.equal('active');
  });

  it('confirms a transfer only once it has its required confirmations', () => {
    const pending = start(19);
    expectIgnored(pending, EVENTS.confirmationsShort);
    expect(apply(pending, EVENTS.confirmations).value).to.equal('CONFIRMED');
    expect(apply(start(15), { type: 'CONFIRMATIONS', received: 40, now: NOW }).value).to.equal('CONFIRMED');
  });

  it('matches money that covers its payout, for good, and remembers the payout', () => {
    const matched = apply(STATES.confirmed(), EVENTS.covers);
    expect(matched.value).to.equal('MATCHED');
    expect(matched.status).to.equal('done');
    expect(matched.context.payoutId).to.equal('payout-1');
  });

  it('holds money short of its payout against that payout, until the payout is covered', () => {
    const held = apply(STATES.confirmed(), EVENTS.short);
    expect(held.value).to.deep.equal({ HELD: 'attributed' });
    expect(held.context.payoutId).to.equal('payout-1');
    const matched = apply(held, EVENTS.covered);
    expect(matched.value).to.equal('MATCHED');
    expect(matched.context.payoutId).to.equal('payout-1');
  });

  it('hands money held against a payout to its refund when the payout fails, for good', () => {
    const forRefund = apply(STATES.heldAttributed(), EVENTS.payoutFailed);
    expect(forRefund.value).to.equal('FOR_REFUND');
    expect(forRefund.status).to.equal('done');
    expect(forRefund.context).to.deep.equal({ confirmationsRequired: 0, payoutId: 'payout-1' });
    // Only money held against a payout goes with that payout: nobody's money waits for an operator.
    expectIgnored(STATES.heldUnattributed(), EVENTS.payoutFailed);
    expectIgnored(STATES.unmatched(), EVENTS.payoutFailed);
  });

  it('keeps money held against a payout out of operators’ hands: it is that payout’s', () => {
    const held = STATES.heldAttributed();
    for (const name of ['operatorCovers', 'operatorShort', 'operatorReturn'] as const) {
      expectIgnored(held, EVENTS[name]);
    }
  });

  it('holds money below every open instruction for operators, attributed to nobody', () => {
    const held = apply(STATES.confirmed(), EVENTS.below);
    expect(held.value).to.deep.equal({ HELD: 'unattributed' });
    expect(held.context.payoutId).to.equal(null);
  });

  it('leaves late or unexpected money UNMATCHED for operators', () => {
    expect(apply(STATES.confirmed(), EVENTS.noInstruction).value).to.equal('UNMATCHED');
  });

  for (const from of ['heldUnattributed', 'unmatched'] as const) {
    it(`lets an operator attribute or return money that is ${from === 'unmatched' ? 'UNMATCHED' : 'held for nobody'}`, () => {
      const covered = apply(STATES[from](), EVENTS.operatorCovers);
      expect([covered.value, covered.context.payoutId]).to.deep.equal(['MATCHED', 'payout-2']);
      const short = apply(STATES[from](), EVENTS.operatorShort);
      expect([short.value, short.context.payoutId]).to.deep.equal([{ HELD: 'attributed' }, 'payout-2']);
      const returned = apply(STATES[from](), EVENTS.operatorReturn);
      expect([returned.value, returned.status]).to.deep.equal(['RETURNED', 'done']);
    });
  }

  it('takes exactly the events of its state and ignores every other, MATCHED, RETURNED and FOR_REFUND for good', () => {
    for (const [state, make] of Object.entries(STATES) as [keyof typeof STATES, () => Snapshot][]) {
      for (const [name, event] of Object.entries(EVENTS) as [EventName, InflowEvent][]) {
        const snapshot = make();
        if (TAKEN[state].includes(name)) {
          const [next] = transition(inflowMachine, snapshot, event);
          expect(next, `${state} takes ${name}`).to.not.equal(snapshot);
        } else {
          expectIgnored(snapshot, event);
        }
      }
    }
  });

  it('persists every state as plain JSON and restores it unchanged', () => {
    for (const make of Object.values(STATES)) {
      const snapshot = make();
      expect(persisted(roundTrip(snapshot))).to.deep.equal(persisted(snapshot));
    }
  });
});

describe('inflow guards, each on its own', () => {
  const guards = inflowMachine.implementations.guards as Record<
    string,
    (args: { context: unknown; event: InflowEvent }) => boolean
  >;
  const context = start(19).context;

  it('enough confirmations: a CONFIRMATIONS event with the required count, no other event', () => {
    expect(guards.hasConfirmations!({ context, event: EVENTS.confirmations })).to.equal(true);
    expect(guards.hasConfirmations!({ context, event: EVENTS.confirmationsShort })).to.equal(false);
    expect(guards.hasConfirmations!({ context, event: EVENTS.covers })).to.equal(false);
  });
});
