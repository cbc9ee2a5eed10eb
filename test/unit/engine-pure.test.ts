import { expect } from 'chai';
import { type AnyStateMachine, initialTransition, transition } from 'xstate';
import { outflowMachine } from '#machines/outflow.machine.ts';
import { paymentInstructionMachine } from '#machines/payment-instruction.machine.ts';
import { payoutMachine } from '#machines/payout.machine.ts';
import { quoteMachine } from '#machines/quote.machine.ts';
import { refundMachine } from '#machines/refund.machine.ts';
import { webhookDeliveryMachine } from '#machines/webhook-delivery.machine.ts';
import { pureInitialTransition, pureTransition } from '#src/engine/engine.ts';

/**
 * The engine runs XState's pure transitions in a scope it builds once per machine, instead of the
 * throwaway actor XState's own `transition()` builds per call. Random walks over every machine,
 * with events carrying every field any machine reads, must give exactly what XState's own
 * functions give: the same next snapshot (as persisted), the same actions, the same snapshot
 * object back when the event is ignored, the same error when a guard throws. Hundreds of steps
 * per machine on its one scope also show that nothing carries over from one transition to the next.
 */

const T0 = Date.parse('2026-03-01T12:00:00.000Z');

const MACHINES: { name: string; machine: AnyStateMachine; input: unknown }[] = [
  { name: 'payout', machine: payoutMachine, input: {} },
  {
    name: 'payment instruction',
    machine: paymentInstructionMachine,
    input: { expiresAt: new Date(T0 + 60_000).toISOString() },
  },
  { name: 'quote', machine: quoteMachine, input: { expiresAt: new Date(T0 + 60_000).toISOString() } },
  { name: 'outflow', machine: outflowMachine, input: {} },
  { name: 'refund', machine: refundMachine, input: {} },
  { name: 'webhook delivery', machine: webhookDeliveryMachine, input: { now: new Date(T0) } },
];

/** A small seeded generator (mulberry32): the walks are the same on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function pick<T>(next: () => number, items: readonly T[]): T {
  return items[Math.floor(next() * items.length)]!;
}

/** An event of `type` with values drawn for every field the machines' events carry. */
function eventOf(type: string, next: () => number, step: number): Record<string, unknown> {
  return {
    type,
    now: new Date(T0 + step * pick(next, [1_000, 30_000, 120_000])),
    triggeredBy: pick(next, ['SYSTEM', 'ADMIN', 'MERCHANT']),
    failureReason: 'the bank said no',
    failureCode: pick(next, ['INSUFFICIENT_FUNDS', 'INVALID_ACCOUNT']),
    retryable: next() < 0.5,
    attemptsLeft: next() < 0.5,
    receivedTotal: pick(next, ['0', '99.99', '100', '100.01']),
    expected: '100',
    processorReference: pick(next, [null, 'prc_1']),
    payoutId: 'payout-1',
    destinationCorrected: next() < 0.5,
    leaseMs: 30_000,
    attempt: pick(next, [1, 2, 3, 4, 5]),
    responseStatus: pick(next, [null, 200, 500]),
    backoffBaseMs: 10_000,
  };
}

/** Actions as the engine keeps them: type and params (XState's objects also carry functions bound to their scope). */
function plain(actions: readonly { type: string; params?: unknown }[]): { type: string; params: unknown }[] {
  return actions.map((a) => ({ type: a.type, params: a.params ?? null }));
}

/** What a transition produced, in the terms the engine persists and acts on. */
function outcome(
  machine: AnyStateMachine,
  run: () => [unknown, readonly { type: string; params?: unknown }[]],
) {
  try {
    const [snapshot, actions] = run();
    return {
      snapshot,
      persisted: JSON.parse(JSON.stringify(machine.getPersistedSnapshot(snapshot as never))),
      actions: plain(actions),
    };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

describe('the engine’s pure transitions', () => {
  for (const { name, machine, input } of MACHINES) {
    it(`${name}: the same as XState's transition() and initialTransition() over random walks`, () => {
      const next = random(name.length * 7919);
      const types = [...machine.root.events].filter((t) => !t.startsWith('xstate.'));
      expect(types, 'the machine accepts events').to.not.be.empty;
      let taken = 0;
      for (let walk = 0; walk < 40; walk++) {
        const [ours, ourActions] = pureInitialTransition(machine, input as never);
        const [theirs, theirActions] = initialTransition(machine, input as never);
        expect(machine.getPersistedSnapshot(ours)).to.deep.equal(machine.getPersistedSnapshot(theirs));
        expect(plain(ourActions)).to.deep.equal(plain(theirActions));
        let snapshot = theirs;
        for (let step = 1; step <= 25 && snapshot.status === 'active'; step++) {
          const event = eventOf(pick(next, types), next, step);
          const a = outcome(machine, () => pureTransition(machine, snapshot, event as never));
          const b = outcome(machine, () => transition(machine, snapshot, event as never));
          expect(a.error, `${event.type} in ${JSON.stringify(snapshot.value)}`).to.equal(b.error);
          if (b.error !== undefined) break;
          expect(a.persisted).to.deep.equal(b.persisted);
          expect(a.actions).to.deep.equal(b.actions);
          // An ignored event hands back the very snapshot it was given, which is how the engine tells.
          expect(a.snapshot === snapshot).to.equal(b.snapshot === snapshot);
          if (b.snapshot !== snapshot) taken++;
          snapshot = b.snapshot as typeof snapshot;
        }
      }
      expect(taken, 'the walks took transitions').to.be.greaterThan(10);
    });
  }
});
