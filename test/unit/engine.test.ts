import type { EntityManager, EntityName } from '@mikro-orm/postgresql';
import { LockMode } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import { assign, setup } from 'xstate';
import { quoteMachine } from '#machines/quote.machine.ts';
import {
  applyEvent,
  initialState,
  type MachineRow,
  restore,
  statusOf,
  step,
  type Transition,
} from '#src/engine/engine.ts';

/**
 * The engine's pure parts (status, restore, step, the initial state) need no database; neither do
 * the decisions `applyEvent` makes once the row is loaded. Those run here against a row held in
 * memory and handed out by `findOne`, the one call `applyEvent` makes on the EntityManager; the
 * row lock itself is exercised on a real database in test/quotes/engine.test.ts.
 */

/** A small machine with a nested state, a self-transition that updates context, and custom actions. */
const doorMachine = setup({
  types: {
    context: {} as { opened: number; knocks: number; at: Date | null; note?: string },
    events: {} as
      | { type: 'OPEN'; at: Date }
      | { type: 'KNOCK' }
      | { type: 'RING' }
      | { type: 'CLOSE' }
      | { type: 'LOCK' },
  },
  actions: { ring: (_, _params: { times: number }) => {}, log: () => {} },
}).createMachine({
  initial: 'CLOSED',
  context: { opened: 0, knocks: 0, at: null, note: undefined },
  states: {
    CLOSED: {
      initial: 'quiet',
      states: { quiet: {} },
      on: {
        OPEN: {
          target: 'OPEN',
          actions: assign({ opened: ({ context }) => context.opened + 1, at: ({ event }) => event.at }),
        },
        KNOCK: {
          actions: [
            assign({ knocks: ({ context }) => context.knocks + 1 }),
            { type: 'ring', params: { times: 2 } },
            'log',
          ],
        },
        // No target and no context change, only an action: XState hands back the very same
        // snapshot, yet the transition is taken and its action must run.
        RING: { actions: { type: 'ring', params: { times: 1 } } },
        LOCK: 'LOCKED',
      },
    },
    OPEN: { on: { CLOSE: 'CLOSED' } },
    LOCKED: { type: 'final' },
  },
});

type DoorRow = MachineRow;
/** The entity as the engine names it in errors (a string stands for the entity class here). */
const DOOR = 'Door' as unknown as EntityName<DoorRow>;

function doorRow(): DoorRow {
  const initial = initialState(doorMachine, undefined);
  return { id: 'door-1', status: initial.status, snapshot: initial.snapshot };
}

/** An EntityManager that holds rows in memory and records how each was asked for. */
function memoryEm(rows: DoorRow[]) {
  const asked: { id: unknown; lockMode: unknown }[] = [];
  const em = {
    async findOne(_entity: unknown, id: unknown, options: { lockMode?: unknown }) {
      asked.push({ id, lockMode: options.lockMode });
      return rows.find((r) => r.id === id) ?? null;
    },
  } as unknown as EntityManager;
  return { em, asked };
}

const AT = new Date('2026-03-01T12:00:00.000Z');

describe('the engine', () => {
  describe('statusOf', () => {
    it('is the state itself, or the one top-level state of a nested value', () => {
      expect(statusOf('PENDING')).to.equal('PENDING');
      expect(statusOf({ PENDING_PAYMENT: 'held' })).to.equal('PENDING_PAYMENT');
      expect(statusOf({ PENDING_PAYMENT: { held: 'x' } })).to.equal('PENDING_PAYMENT');
    });

    it('refuses a value with no or several top-level states, naming it', () => {
      expect(() => statusOf({ a: 'x', b: 'y' })).to.throw(
        'a status needs exactly one top-level state, got {"a":"x","b":"y"}',
      );
      expect(() => statusOf({})).to.throw('a status needs exactly one top-level state, got {}');
    });
  });

  describe('initialState', () => {
    it('gives the top-level status, the snapshot as plain JSON, and the entry actions as data', () => {
      const initial = initialState(quoteMachine, { expiresAt: '2026-01-01T00:00:30.000Z' });
      expect(initial).to.deep.equal({
        status: 'PENDING',
        actions: [],
        snapshot: {
          status: 'active',
          value: 'PENDING',
          historyValue: {},
          context: { expiresAt: '2026-01-01T00:00:30.000Z', payoutId: null },
          children: {},
        },
      });
      const door = initialState(doorMachine, undefined);
      expect(door.status).to.equal('CLOSED');
      expect(door.snapshot.value).to.deep.equal({ CLOSED: 'quiet' });
      // Undefined fields are dropped, as the jsonb column would drop them.
      expect(door.snapshot.context).to.deep.equal({ opened: 0, knocks: 0, at: null });
    });

    it('hands custom actions back as plain { type, params } data, null when they have none', () => {
      const machine = setup({
        types: { input: {} as { payoutId: string } },
        actions: {
          recordTimeline: (_, _params: { reason: string; payoutId: string }) => {},
          notify: () => {},
        },
      }).createMachine({
        initial: 'CREATED',
        context: ({ input }) => ({ payoutId: input.payoutId }),
        states: {
          CREATED: {
            entry: [
              {
                type: 'recordTimeline',
                params: ({ context }) => ({ reason: 'PAYOUT_CREATED', payoutId: context.payoutId }),
              },
              'notify',
            ],
          },
        },
      });
      expect(initialState(machine, { payoutId: 'p-1' }).actions).to.deep.equal([
        { type: 'recordTimeline', params: { reason: 'PAYOUT_CREATED', payoutId: 'p-1' } },
        { type: 'notify', params: null },
      ]);
    });

    it('refuses machines that rely on delayed events it cannot honour, naming the action', () => {
      const machine = setup({}).createMachine({
        initial: 'WAITING',
        states: { WAITING: { after: { 1000: 'LATE' } }, LATE: {} },
      });
      expect(() => initialState(machine, undefined)).to.throw(
        'machine asked for xstate.raise, which the engine does not run',
      );
    });
  });

  describe('restore', () => {
    it('gives the machine snapshot of a row whose status agrees with it', () => {
      const snapshot = restore(doorMachine, doorRow());
      expect(snapshot.value).to.deep.equal({ CLOSED: 'quiet' });
      expect(snapshot.context.opened).to.equal(0);
    });

    it('refuses a row whose status column disagrees with its snapshot, naming the row', () => {
      const row = { ...doorRow(), status: 'OPEN' };
      expect(() => restore(doorMachine, row)).to.throw(
        'row door-1: status OPEN disagrees with its machine snapshot (CLOSED)',
      );
    });
  });

  describe('step', () => {
    it('moves to another status: changed and taken, the new snapshot as plain JSON', () => {
      const row = doorRow();
      const done = step(doorMachine, row, { type: 'OPEN', at: AT });
      expect(done).to.deep.include({ from: 'CLOSED', to: 'OPEN', changed: true, taken: true, actions: [] });
      expect(done.snapshot).to.deep.include({ value: 'OPEN', status: 'active' });
      expect(done.snapshot.context).to.deep.equal({ opened: 1, knocks: 0, at: '2026-03-01T12:00:00.000Z' });
      // The row itself is left alone: saving it is the caller's.
      expect(row.status).to.equal('CLOSED');
    });

    it('a self-transition keeps the status but is taken, with its actions', () => {
      const row = doorRow();
      const done = step(doorMachine, row, { type: 'KNOCK' });
      expect(done).to.deep.include({ from: 'CLOSED', to: 'CLOSED', changed: false, taken: true });
      expect(done.actions).to.deep.equal([
        { type: 'ring', params: { times: 2 } },
        { type: 'log', params: null },
      ]);
    });

    it('a transition with actions only, no target and no context change, is taken with its actions', () => {
      const row = doorRow();
      const done = step(doorMachine, row, { type: 'RING' });
      expect(done).to.deep.include({ from: 'CLOSED', to: 'CLOSED', changed: false, taken: true });
      expect(done.actions).to.deep.equal([{ type: 'ring', params: { times: 1 } }]);
      expect(done.snapshot).to.deep.equal(row.snapshot);
    });

    it('an ignored event is neither changed nor taken and hands back the row’s own snapshot', () => {
      const row = doorRow();
      const done = step(doorMachine, row, { type: 'CLOSE' });
      expect(done).to.deep.include({
        from: 'CLOSED',
        to: 'CLOSED',
        changed: false,
        taken: false,
        actions: [],
      });
      expect(done.snapshot).to.equal(row.snapshot);
    });

    it('reaches a final state', () => {
      const done = step(doorMachine, doorRow(), { type: 'LOCK' });
      expect(done).to.deep.include({ to: 'LOCKED', changed: true, taken: true });
      expect(done.snapshot.status).to.equal('done');
    });
  });

  describe('applyEvent, once the row is loaded', () => {
    it('asks for the row under a write lock and refuses an id that does not exist', async () => {
      const { em, asked } = memoryEm([doorRow()]);
      let error: Error | undefined;
      try {
        await applyEvent(em, { machine: doorMachine, entity: DOOR, id: 'door-2', event: { type: 'LOCK' } });
      } catch (err) {
        error = err as Error;
      }
      expect(error?.message).to.equal('Door door-2 does not exist');
      expect(asked).to.deep.equal([{ id: 'door-2', lockMode: LockMode.PESSIMISTIC_WRITE }]);
    });

    it("asks for the row by id and tenant when the caller knows the row's tenant", async () => {
      const { em, asked } = memoryEm([doorRow()]);
      let error: Error | undefined;
      try {
        await applyEvent(em, {
          machine: doorMachine,
          entity: DOOR,
          id: 'door-1',
          tenantId: 'tenant-1',
          event: { type: 'LOCK' },
        });
      } catch (err) {
        error = err as Error;
      }
      expect(error?.message).to.equal('Door door-1 does not exist');
      expect(asked).to.deep.equal([
        { id: { id: 'door-1', tenant: 'tenant-1' }, lockMode: LockMode.PESSIMISTIC_WRITE },
      ]);
    });

    it('saves status and snapshot on the row without a hook', async () => {
      const row = doorRow();
      const { em } = memoryEm([row]);
      const result = await applyEvent(em, {
        machine: doorMachine,
        entity: DOOR,
        id: 'door-1',
        event: { type: 'OPEN', at: AT },
      });
      expect(result).to.deep.include({ from: 'CLOSED', to: 'OPEN', changed: true, taken: true, actions: [] });
      expect(result.row).to.equal(row);
      expect(row.status).to.equal('OPEN');
      expect(row.snapshot).to.deep.include({ value: 'OPEN' });
    });

    it('runs the hook once with the transition, the row already saved', async () => {
      const row = doorRow();
      const { em } = memoryEm([row]);
      const seen: { em: EntityManager; t: Transition<DoorRow, unknown>; status: string }[] = [];
      const event = { type: 'KNOCK' } as const;
      const result = await applyEvent(em, {
        machine: doorMachine,
        entity: DOOR,
        id: 'door-1',
        event,
        onTransition: async (hookEm, t) => {
          seen.push({ em: hookEm, t, status: t.row.status });
        },
      });
      expect(seen).to.have.length(1);
      expect(seen[0]!.em).to.equal(em);
      expect(seen[0]!.t).to.equal(result);
      expect(result).to.deep.include({ event, from: 'CLOSED', to: 'CLOSED', changed: false, taken: true });
      expect(result.actions).to.deep.equal([
        { type: 'ring', params: { times: 2 } },
        { type: 'log', params: null },
      ]);
    });

    it('runs the hook for a transition with actions only, which keeps snapshot and status', async () => {
      const row = doorRow();
      const before = structuredClone(row);
      const { em } = memoryEm([row]);
      const seen: Transition<DoorRow, unknown>[] = [];
      const result = await applyEvent(em, {
        machine: doorMachine,
        entity: DOOR,
        id: 'door-1',
        event: { type: 'RING' },
        onTransition: async (_, t) => {
          seen.push(t);
        },
      });
      expect(seen).to.deep.equal([result]);
      expect(result).to.deep.include({ from: 'CLOSED', to: 'CLOSED', changed: false, taken: true });
      expect(result.actions).to.deep.equal([{ type: 'ring', params: { times: 1 } }]);
      expect(row).to.deep.equal(before);
    });

    it('writes nothing and skips the hook when the event is ignored', async () => {
      const row = doorRow();
      const before = structuredClone(row);
      const { em } = memoryEm([row]);
      let hooked = false;
      const result = await applyEvent(em, {
        machine: doorMachine,
        entity: DOOR,
        id: 'door-1',
        event: { type: 'CLOSE' },
        onTransition: async () => {
          hooked = true;
        },
      });
      expect(result).to.deep.include({ from: 'CLOSED', to: 'CLOSED', changed: false, taken: false });
      expect(hooked).to.equal(false);
      expect(row).to.deep.equal(before);
    });
  });
});
