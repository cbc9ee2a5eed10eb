import { expect } from 'chai';
import { type QuoteEvent, quoteMachine } from '#machines/quote.machine.ts';
import { applyEvent, initialState, type Transition } from '#src/engine/engine.ts';
import { toDecimal } from '#src/lib/money.ts';
import { Quote } from '#src/quotes/entities.ts';
import { createMerchant } from '../client.ts';
import { harness } from '../harness.ts';
import { racesOnlyOnPostgres, waitsForLock } from '../races.ts';

describe('engine: machine-backed rows (through quotes)', () => {
  const em = () => harness().service.deps.orm.em.fork();
  let tenantId: string;

  before(async () => {
    tenantId = (await createMerchant()).tenantId;
  });

  /** A quote row created the way the service creates one, expiring `ttlMs` from the clock. */
  async function insertQuote(ttlMs = 30_000): Promise<{ id: string; expiresAt: Date }> {
    const expiresAt = new Date(harness().clock.now().getTime() + ttlMs);
    const initial = initialState(quoteMachine, { expiresAt: expiresAt.toISOString() });
    const fork = em();
    const quote = fork.create(Quote, {
      tenant: tenantId,
      rail: 'CRYPTO',
      status: initial.status as 'PENDING',
      snapshot: initial.snapshot,
      settlementCurrency: 'USDT',
      destinationCurrency: 'NGN',
      destinationAmount: toDecimal(1000),
      settlementAmount: toDecimal('1.5'),
      exchangeRate: toDecimal(1000),
      midMarketRate: toDecimal(1010),
      spread: toDecimal(1),
      platformFeeAmount: toDecimal('0.5'),
      networkFeeAmount: toDecimal(0),
      totalFeeAmount: toDecimal('0.5'),
      provider: 'test',
      expiresAt,
      usedByPayoutId: null,
    });
    await fork.flush();
    return { id: quote.id, expiresAt };
  }

  const load = (id: string) => em().findOneOrFail(Quote, id);

  function apply(
    id: string,
    event: QuoteEvent,
    onTransition?: (t: Transition<Quote, QuoteEvent>) => Promise<void>,
  ) {
    return em().transactional((tx) =>
      applyEvent(tx, {
        machine: quoteMachine,
        entity: Quote,
        id,
        event,
        onTransition: async (_tx, t) => {
          if (onTransition) await onTransition(t);
        },
      }),
    );
  }

  it('creates the initial status and persisted snapshot from the machine', () => {
    const initial = initialState(quoteMachine, { expiresAt: '2026-01-01T00:00:30.000Z' });
    expect(initial.status).to.equal('PENDING');
    expect(initial.actions).to.deep.equal([]);
    expect(initial.snapshot).to.deep.equal({
      status: 'active',
      value: 'PENDING',
      historyValue: {},
      context: { expiresAt: '2026-01-01T00:00:30.000Z', payoutId: null },
      children: {},
    });
  });

  it('applies a transition: saves status and snapshot, reports from and to, runs the hook once', async () => {
    const { id } = await insertQuote();
    const seen: Transition<Quote, QuoteEvent>[] = [];
    const event: QuoteEvent = { type: 'ACCEPT', now: harness().clock.now() };
    const result = await apply(id, event, async (t) => {
      seen.push(t);
    });
    expect(result).to.include({ changed: true, taken: true, from: 'PENDING', to: 'ACCEPTED' });
    expect(result.actions).to.deep.equal([]);
    expect(seen).to.have.length(1);
    expect(seen[0]).to.include({ from: 'PENDING', to: 'ACCEPTED', event });
    expect(seen[0]!.row.status).to.equal('ACCEPTED');
    const stored = await load(id);
    expect(stored.status).to.equal('ACCEPTED');
    expect(stored.snapshot).to.include({ value: 'ACCEPTED', status: 'active' });
  });

  it('writes nothing and skips the hook when the machine ignores the event', async () => {
    const { id } = await insertQuote();
    const before = await load(id);
    harness().clock.advance(1000);
    let hooked = false;
    const result = await apply(id, { type: 'EXPIRE', now: harness().clock.now() }, async () => {
      hooked = true;
    });
    expect(result).to.include({ changed: false, taken: false, from: 'PENDING', to: 'PENDING' });
    expect(hooked).to.equal(false);
    const after = await load(id);
    expect(after.updatedAt.getTime()).to.equal(before.updatedAt.getTime());
    expect(after.snapshot).to.deep.equal(before.snapshot);
  });

  it('runs the hook inside the same transaction: a failing hook undoes the transition', async () => {
    const { id } = await insertQuote();
    let failed = false;
    try {
      await apply(id, { type: 'ACCEPT', now: harness().clock.now() }, async () => {
        throw new Error('timeline insert failed');
      });
    } catch (err) {
      failed = (err as Error).message === 'timeline insert failed';
    }
    expect(failed).to.equal(true);
    expect((await load(id)).status).to.equal('PENDING');
  });

  it('refuses to work outside a transaction (the row lock needs one)', async () => {
    const { id } = await insertQuote();
    let error: unknown;
    try {
      await applyEvent(em(), {
        machine: quoteMachine,
        entity: Quote,
        id,
        event: { type: 'ACCEPT', now: new Date() },
      });
    } catch (err) {
      error = err;
    }
    expect((error as Error).message).to.match(/open transaction is required/);
    expect((await load(id)).status).to.equal('PENDING');
  });

  it('refuses a row whose status column disagrees with its snapshot', async () => {
    const { id } = await insertQuote();
    await em().nativeUpdate(Quote, { id }, { status: 'USED' });
    let error: Error | undefined;
    try {
      await apply(id, { type: 'ACCEPT', now: harness().clock.now() });
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).to.match(/disagrees with its machine snapshot/);
  });

  it('serialises concurrent events on one row: the second USE waits for the first and sees USED', async function () {
    racesOnlyOnPostgres(this);
    const { id } = await insertQuote();
    const now = harness().clock.now();
    const [first, second] = ['00000000-0000-4000-8000-000000000001', '00000000-0000-4000-8000-000000000002'];
    const { promise: release, resolve: letGo } = Promise.withResolvers<void>();
    const { promise: holding, resolve: held } = Promise.withResolvers<void>();
    // The first USE has locked the row and made its transition, and waits inside its transaction.
    const a = apply(id, { type: 'USE', payoutId: first, now }, async () => {
      held();
      await release;
    });
    await holding;
    // The second starts meanwhile: it must wait for the row, not read the status the first replaces.
    const b = apply(id, { type: 'USE', payoutId: second, now });
    const waited = await waitsForLock(em(), b);
    letGo();
    const [won, lost] = await Promise.all([a, b]);
    expect(waited, 'the second USE waited for the row').to.equal(true);
    expect(won).to.include({ taken: true, from: 'PENDING', to: 'USED' });
    expect(lost).to.include({ taken: false, changed: false, from: 'USED', to: 'USED' });
    const stored = await load(id);
    expect((stored.snapshot as { context: { payoutId: string } }).context.payoutId).to.equal(first);
  });

  it('refuses an id that does not exist', async () => {
    let error: Error | undefined;
    try {
      await apply('00000000-0000-4000-8000-00000000dead', { type: 'ACCEPT', now: harness().clock.now() });
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).to.match(/ 00000000-0000-4000-8000-00000000dead does not exist$/);
  });
});
