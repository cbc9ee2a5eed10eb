import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import {
  findStoredResponse,
  type IdempotentWrite,
  KeyTaken,
  sealResponse,
  storeResponse,
} from '#src/idempotency/idempotency.ts';
import { newId } from '#src/lib/ids.ts';
import { toDecimal } from '#src/lib/money.ts';
import { insertNewPayout, type NewPayout } from '#src/payouts/lifecycle.ts';
import { createMerchant } from '../client.ts';
import { harness } from '../harness.ts';
import { payoutReadyMerchant } from './fixtures.ts';

/**
 * The one-statement create: everything or nothing. A key another request stored first, or a
 * missing refund destination, leaves no payout, timeline row, event or task behind.
 */
describe('a new payout in one statement', () => {
  const sql = () => harness().service.deps.sql;
  const responseKey = Buffer.alloc(32, 7);
  const payoutFor = (tenantId: string): NewPayout => ({
    id: newId(),
    tenantId,
    merchantReference: 'one-statement',
    metadata: { order: '42' },
    notificationUrl: null,
    destinationType: 'BANK_ACCOUNT',
    destinationCountry: 'NG',
    destinationCurrency: 'NGN',
    destinationAmount: toDecimal('150000.5'),
    destinationAccountUnique: '0234567891',
    destinationProviderName: 'Guaranty Trust Bank',
    destinationProviderCode: '058',
    destinationAccountName: 'ADAEZE OKONKWO',
    settlementCurrency: 'USDT',
    settlementNetwork: 'TRON',
    quoteId: null,
    payee: { check: 'MATCH', institutionName: 'ADAEZE OKONKWO', checkedAt: new Date('2026-01-01T00:00:00Z') },
  });
  const writeFor = (tenantId: string): IdempotentWrite => ({
    tenantId,
    key: randomUUID(),
    fingerprint: 'f'.repeat(64),
    status: 201,
    seal: (body) => sealResponse(responseKey, body),
  });
  const rowsOf = async (payoutId: string) => {
    const [counts] = await harness()
      .service.deps.orm.em.fork()
      .execute<Record<string, number>[]>(
        `select (select count(*)::int from payouts where id = ?) as payouts,
              (select count(*)::int from payout_status_timeline where payout_id = ?) as timeline,
              (select count(*)::int from outbox_events where payout_id = ?) as events,
              (select count(*)::int from tasks where subject_id = ?) as tasks`,
        [payoutId, payoutId, payoutId, payoutId],
      );
    return counts;
  };

  it('writes the payout, its timeline row, its event, its task and the response under the key', async () => {
    const { tenantId } = await payoutReadyMerchant();
    const payout = payoutFor(tenantId);
    const write = writeFor(tenantId);
    const now = harness().clock.now();
    const created = await insertNewPayout(sql(), payout, { now, idempotent: write });
    expect(await rowsOf(payout.id)).to.deep.equal({ payouts: 1, timeline: 1, events: 1, tasks: 1 });
    expect(created.resource).to.include({ id: payout.id, status: 'CREATED' });
    const stored = await findStoredResponse(sql(), write);
    expect(stored?.status).to.equal(201);
    expect(created.json).to.include('"destination_amount":150000.5');
  });

  it('writes nothing when another request stored the key first', async () => {
    const { tenantId } = await payoutReadyMerchant();
    const write = writeFor(tenantId);
    const now = harness().clock.now();
    await sql().transaction((tx) => storeResponse(tx, write, { body: '{"first":true}', now }));
    const payout = payoutFor(tenantId);
    const error = await insertNewPayout(sql(), payout, { now, idempotent: write }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(error).to.be.instanceOf(KeyTaken);
    expect(await rowsOf(payout.id)).to.deep.equal({ payouts: 0, timeline: 0, events: 0, tasks: 0 });
  });

  it('writes nothing, the key included, without a refund destination for the settlement currency', async () => {
    const { tenantId } = await createMerchant();
    const write = writeFor(tenantId);
    const payout = payoutFor(tenantId);
    const error = await insertNewPayout(sql(), payout, {
      now: harness().clock.now(),
      idempotent: write,
    }).then(
      () => null,
      (err: unknown) => err as { code?: string },
    );
    expect(error?.code).to.equal('REFUND_DESTINATION_REQUIRED');
    expect(await rowsOf(payout.id)).to.deep.equal({ payouts: 0, timeline: 0, events: 0, tasks: 0 });
    expect(await findStoredResponse(sql(), write)).to.equal(null);
  });
});
