import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { OutboxEvent } from '#src/events/entities.ts';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { call, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from './fixtures.ts';

const deps = () => harness().service.deps;

async function payoutCount(tenantId: string): Promise<number> {
  const [row] = await deps()
    .orm.em.fork()
    .getConnection()
    .execute<{ n: string }[]>('select count(*) as n from payouts where tenant_id = ?', [tenantId]);
  return Number(row!.n);
}

/** `n` keys `k00`, `k01` … each with the value `v`. */
const keys = (n: number, value = 'v') =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${String(i).padStart(2, '0')}`, value]));

describe('payout metadata', () => {
  let merchant: Merchant;
  before(async () => {
    merchant = await payoutReadyMerchant();
  });

  describe('happy', () => {
    it('is returned by create, get and list, and carried by every webhook of the payout', async () => {
      const metadata = { order_id: 'ord_8812', customer_id: 'cus_0042', note: '' };
      const created = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ metadata }),
      });
      expect(created.status, created.text).to.equal(201);
      // One order everywhere, whatever order the request or the database keeps: keys sorted.
      const expected = { customer_id: 'cus_0042', note: '', order_id: 'ord_8812' };
      expect(Object.entries(created.body.metadata)).to.deep.equal(Object.entries(expected));

      const read = await call('GET', `/v1/payouts/${created.body.id}`, { key: merchant.key });
      expect(read.text).to.include(JSON.stringify(expected));
      const listed = await call('GET', '/v1/payouts?limit=100', { key: merchant.key });
      const inList = listed.body.data.find((p: { id: string }) => p.id === created.body.id);
      expect(JSON.stringify(inList.metadata)).to.equal(JSON.stringify(expected));

      await runInstructionsOnce(deps());
      const events = await deps()
        .orm.em.fork()
        .find(OutboxEvent, { payoutId: created.body.id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
      expect(events.map((e) => e.eventType)).to.deep.equal(['payout.created', 'payout.pending_payment']);
      for (const event of events) {
        expect(
          JSON.stringify((JSON.parse(event.payload) as { data: { metadata: unknown } }).data.metadata),
        ).to.equal(JSON.stringify(expected));
      }
    });

    it('is {} on a payout created without it', async () => {
      const created = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout() });
      expect(created.status, created.text).to.equal(201);
      expect(created.body.metadata).to.deep.equal({});
      const read = await call('GET', `/v1/payouts/${created.body.id}`, { key: merchant.key });
      expect(read.body.metadata).to.deep.equal({});
    });

    it('takes 20 keys of 40 characters with values of 500, counting characters, not UTF-16 units', async () => {
      const emojiKey = '🦁'.repeat(40);
      const metadata = { ...keys(19, 'x'.repeat(500)), [emojiKey]: '🦁'.repeat(500) };
      const created = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ metadata }),
      });
      expect(created.status, created.text).to.equal(201);
      expect(Object.keys(created.body.metadata)).to.have.length(20);
      expect(created.body.metadata[emojiKey]).to.equal('🦁'.repeat(500));
    });

    it('takes part in the idempotency comparison: the same pairs in any order replay, others are refused', async () => {
      const idempotencyKey = randomUUID();
      const send = (metadata: Record<string, string>) =>
        call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout({ metadata }), idempotencyKey });
      const first = await send({ a: '1', b: '2' });
      expect(first.status, first.text).to.equal(201);
      const reordered = await send({ b: '2', a: '1' });
      expect(reordered.status).to.equal(201);
      expect(reordered.headers.get('idempotent-replayed')).to.equal('true');
      expect(reordered.text).to.equal(first.text);
      const changed = await send({ a: '1', b: '3' });
      expect(changed.status, changed.text).to.equal(422);
      expect(errorOf(changed).code).to.equal('IDEMPOTENCY_KEY_REUSED');
    });
  });

  describe('error', () => {
    const refusals: [string, unknown, { field: string; issue: string }][] = [
      ['21 keys', keys(21), { field: 'metadata', issue: 'must have at most 20 keys' }],
      [
        'a key of 41 characters',
        { ['k'.repeat(41)]: 'v' },
        { field: `metadata.${'k'.repeat(41)}`, issue: 'keys must be 1 to 40 characters' },
      ],
      ['an empty key', { '': 'v' }, { field: 'metadata.', issue: 'keys must be 1 to 40 characters' }],
      [
        'a value of 501 characters',
        { order: 'x'.repeat(501) },
        { field: 'metadata.order', issue: 'values must be at most 500 characters' },
      ],
      ['a number value', { order: 42 }, { field: 'metadata.order', issue: 'must be a string' }],
      ['a null value', { order: null }, { field: 'metadata.order', issue: 'must be a string' }],
      ['a nested object', { order: { id: '1' } }, { field: 'metadata.order', issue: 'must be a string' }],
      ['null', null, { field: 'metadata', issue: 'must be an object' }],
      ['an array', ['a'], { field: 'metadata', issue: 'must be an object' }],
      ['a string', 'order=1', { field: 'metadata', issue: 'must be an object' }],
    ];
    for (const [what, metadata, detail] of refusals) {
      it(`refuses ${what} with VALIDATION_FAILED naming the field, and creates nothing`, async () => {
        const before = await payoutCount(merchant.tenantId);
        const res = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout({ metadata }) });
        expect(res.status, res.text).to.equal(400);
        expect(errorOf(res).code).to.equal('VALIDATION_FAILED');
        expect(errorOf(res).details, res.text).to.deep.include(detail);
        expect(await payoutCount(merchant.tenantId)).to.equal(before);
      });
    }
  });

  describe('security', () => {
    it('refuses __proto__ as a key rather than losing it, and pollutes no prototype', async () => {
      for (const proto of ['{"polluted":"yes"}', '"x"']) {
        const before = await payoutCount(merchant.tenantId);
        // JSON.stringify cannot write an own __proto__ key: the text is written here.
        const res = await call('POST', '/v1/payouts', {
          key: merchant.key,
          rawBody: JSON.stringify(bankPayout({ metadata: { a: '1' } })).replace(
            '"metadata":{"a":"1"}',
            `"metadata":{"__proto__":${proto},"a":"1"}`,
          ),
          headers: { 'content-type': 'application/json' },
        });
        expect(res.status, res.text).to.equal(400);
        expect(errorOf(res).details).to.deep.equal([
          { field: 'metadata.__proto__', issue: 'is not a usable key: __proto__ is reserved' },
        ]);
        expect(({} as Record<string, unknown>).polluted).to.equal(undefined);
        expect(await payoutCount(merchant.tenantId)).to.equal(before);
      }
    });

    it('refuses control characters in keys and values, naming the field', async () => {
      for (const metadata of [{ 'a\u0000': 'v' }, { a: 'v\u001b[31m' }]) {
        const res = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout({ metadata }) });
        expect(res.status, res.text).to.equal(400);
        expect(errorOf(res).details[0]!.field).to.match(/^metadata\.a/);
      }
    });

    it('keeps one tenant’s metadata from another', async () => {
      const created = await call('POST', '/v1/payouts', {
        key: merchant.key,
        body: bankPayout({ metadata: { secret_order: 'ord_1' } }),
      });
      const other = await payoutReadyMerchant();
      const read = await call('GET', `/v1/payouts/${created.body.id}`, { key: other.key });
      expect(read.status).to.equal(404);
      expect(read.text).to.not.include('ord_1');
    });
  });
});
