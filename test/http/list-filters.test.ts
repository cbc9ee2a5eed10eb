import { expect } from 'chai';
import { runInstructionsOnce } from '#src/instructions/job.ts';
import { call, createMerchant, errorOf, type Merchant } from '../client.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';
import { handledCredit, payBank, payoutWithInstruction } from '../settlement/fixtures.ts';
import { configureWebhook, deliverFor, receiversClosedAfterEach } from '../webhooks/receiver.ts';

const ids = (res: { body: { data: { id: string }[] } }) => res.body.data.map((row) => row.id);

async function list(merchant: Merchant, path: string) {
  const res = await call('GET', path, { key: merchant.key });
  expect(res.status, res.text).to.equal(200);
  return res;
}

/** Every page of a list, following next_cursor with the same filters until has_more is false. */
async function allPages(merchant: Merchant, path: string): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const joiner = path.includes('?') ? '&' : '?';
    const res = await list(merchant, cursor ? `${path}${joiner}cursor=${encodeURIComponent(cursor)}` : path);
    seen.push(...ids(res));
    cursor = res.body.meta.has_more ? res.body.meta.next_cursor : null;
  } while (cursor);
  return seen;
}

async function refused(merchant: Merchant, path: string) {
  const res = await call('GET', path, { key: merchant.key });
  expect(res.status, res.text).to.equal(400);
  return errorOf(res);
}

describe('list filters', () => {
  describe('GET /v1/payouts', () => {
    let merchant: Merchant;
    // Oldest first: created one minute apart on the service's clock.
    const made: { id: string; reference: string; at: string }[] = [];
    const byStatus: Record<string, string[]> = {};

    before(async () => {
      merchant = await payoutReadyMerchant();
      const create = async (reference: string) => {
        harness().clock.advance(60_000);
        const res = await call('POST', '/v1/payouts', {
          key: merchant.key,
          body: bankPayout({ merchant_reference: reference }),
        });
        expect(res.status, res.text).to.equal(201);
        made.push({ id: res.body.id, reference, at: res.body.created_at });
      };
      for (const reference of ['INV-1', 'INV-2', 'INV-3']) await create(reference);
      await runInstructionsOnce(harness().service.deps);
      for (const reference of ['INV-4', 'INV-2']) await create(reference);
      byStatus.PENDING_PAYMENT = made.slice(0, 3).map((p) => p.id);
      byStatus.CREATED = made.slice(3).map((p) => p.id);
    });

    const newestFirst = (rows: { id: string }[]) => rows.map((r) => r.id).reverse();

    it('lists only the payouts in a status, newest first', async () => {
      expect(ids(await list(merchant, '/v1/payouts?status=CREATED'))).to.deep.equal(
        [...byStatus.CREATED!].reverse(),
      );
      expect(ids(await list(merchant, '/v1/payouts?status=PENDING_PAYMENT'))).to.deep.equal(
        [...byStatus.PENDING_PAYMENT!].reverse(),
      );
      expect(ids(await list(merchant, '/v1/payouts?status=SUCCESSFUL'))).to.deep.equal([]);
    });

    it('lists only the payouts with exactly a merchant_reference', async () => {
      const inv2 = made.filter((p) => p.reference === 'INV-2');
      expect(ids(await list(merchant, '/v1/payouts?merchant_reference=INV-2'))).to.deep.equal(
        newestFirst(inv2),
      );
      expect(ids(await list(merchant, '/v1/payouts?merchant_reference=inv-2'))).to.deep.equal([]);
    });

    it('takes created_after as inclusive and created_before as exclusive, so windows tile', async () => {
      const at = made.map((p) => encodeURIComponent(p.at));
      const window = (after: string, before: string) =>
        list(merchant, `/v1/payouts?created_after=${after}&created_before=${before}`).then(ids);
      // [second, fourth): the second and the third.
      expect(await window(at[1]!, at[3]!)).to.deep.equal(newestFirst(made.slice(1, 3)));
      // [fourth, fourth + 1 ms) and [second - 1 ms, second): exactly one each side of the edge.
      const plus = (iso: string, ms: number) =>
        encodeURIComponent(new Date(Date.parse(iso) + ms).toISOString());
      expect(await window(at[3]!, plus(made[3]!.at, 1))).to.deep.equal([made[3]!.id]);
      expect(await window(plus(made[0]!.at, -1), at[1]!)).to.deep.equal([made[0]!.id]);
      expect(ids(await list(merchant, `/v1/payouts?created_after=${at[3]}`))).to.deep.equal(
        newestFirst(made.slice(3)),
      );
      expect(ids(await list(merchant, `/v1/payouts?created_before=${at[1]}`))).to.deep.equal([made[0]!.id]);
    });

    it('reads an offset sent unencoded, whose + arrives as a space', async () => {
      // The second payout's time written in UTC+01:00, with the + left raw in the query string.
      const second = new Date(Date.parse(made[1]!.at) + 3_600_000).toISOString().replace('Z', '+01:00');
      expect(ids(await list(merchant, `/v1/payouts?created_before=${second}`))).to.deep.equal([made[0]!.id]);
    });

    it('combines filters: each one given must hold', async () => {
      const afterFirst = encodeURIComponent(made[1]!.at);
      expect(
        ids(
          await list(
            merchant,
            `/v1/payouts?status=CREATED&merchant_reference=INV-2&created_after=${afterFirst}`,
          ),
        ),
      ).to.deep.equal([made[4]!.id]);
      expect(
        ids(await list(merchant, '/v1/payouts?status=PENDING_PAYMENT&merchant_reference=INV-2')),
      ).to.deep.equal([made[1]!.id]);
    });

    it('pages a filtered list with its cursor, every match once and nothing else', async () => {
      expect(await allPages(merchant, '/v1/payouts?status=PENDING_PAYMENT&limit=1')).to.deep.equal(
        [...byStatus.PENDING_PAYMENT!].reverse(),
      );
      expect(await allPages(merchant, '/v1/payouts?merchant_reference=INV-2&limit=1')).to.deep.equal(
        newestFirst(made.filter((p) => p.reference === 'INV-2')),
      );
    });

    it('refuses a cursor with filters other than those it was issued with', async () => {
      const first = await list(merchant, '/v1/payouts?status=PENDING_PAYMENT&limit=1');
      const cursor = encodeURIComponent(first.body.meta.next_cursor);
      for (const path of [
        `/v1/payouts?cursor=${cursor}`,
        `/v1/payouts?status=CREATED&cursor=${cursor}`,
        `/v1/payouts?status=PENDING_PAYMENT&merchant_reference=INV-1&cursor=${cursor}`,
      ]) {
        const error = await refused(merchant, path);
        expect(error.code).to.equal('INVALID_CURSOR');
        expect(error.details).to.deep.equal([
          { field: 'cursor', issue: 'is not a cursor issued for this list with these filters' },
        ]);
      }
      // An unfiltered list's cursor does not page a filtered one either.
      const whole = await list(merchant, '/v1/payouts?limit=1');
      const unfiltered = encodeURIComponent(whole.body.meta.next_cursor);
      expect((await refused(merchant, `/v1/payouts?status=CREATED&cursor=${unfiltered}`)).code).to.equal(
        'INVALID_CURSOR',
      );
      // The same filters, in another order in the query string, are the same list.
      const ok = await list(merchant, `/v1/payouts?limit=1&cursor=${cursor}&status=PENDING_PAYMENT`);
      expect(ids(ok)).to.deep.equal([byStatus.PENDING_PAYMENT![1]]);
    });

    it('answers an unknown value with a 400 naming the parameter', async () => {
      const cases: [string, string][] = [
        ['/v1/payouts?status=DONE', 'status'],
        ['/v1/payouts?status=created', 'status'],
        ['/v1/payouts?created_after=yesterday', 'created_after'],
        ['/v1/payouts?created_before=2026-11-26', 'created_before'],
        ['/v1/payouts?created_after=2026-11-26T09:00:00', 'created_after'],
        ['/v1/payouts?merchant_reference=', 'merchant_reference'],
        [`/v1/payouts?merchant_reference=${'x'.repeat(201)}`, 'merchant_reference'],
        ['/v1/payouts?state=CREATED', 'state'],
      ];
      for (const [path, field] of cases) {
        const error = await refused(merchant, path);
        expect(error.code, path).to.equal('VALIDATION_FAILED');
        expect(
          error.details.map((d) => d.field),
          path,
        ).to.deep.equal([field]);
      }
      // An empty window is no mistake to refuse: it matches nothing.
      const empty = await list(
        merchant,
        '/v1/payouts?created_after=2026-11-26T10:00:00Z&created_before=2026-11-26T10:00:00Z',
      );
      expect(ids(empty)).to.deep.equal([]);
    });

    it('never shows another tenant’s payouts through a filter', async () => {
      const other = await payoutReadyMerchant();
      expect(ids(await list(other, '/v1/payouts?merchant_reference=INV-2'))).to.deep.equal([]);
      expect(ids(await list(other, '/v1/payouts?status=PENDING_PAYMENT'))).to.deep.equal([]);
    });
  });

  describe('GET /v1/inflows', () => {
    it('lists matched or unmatched settlements with is_matched, and pages each on its own', async () => {
      const merchant = await payoutReadyMerchant();
      const paid = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
      const matched = await handledCredit(
        (await payBank(paid.instruction.account_unique, paid.instruction.expected)).session_id,
      );
      const short = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
      const held = await handledCredit(
        (await payBank(short.instruction.account_unique, '1000.00')).session_id,
      );
      const again = await handledCredit(
        (await payBank(short.instruction.account_unique, '1000.00')).session_id,
      );

      expect(ids(await list(merchant, '/v1/inflows?is_matched=true'))).to.deep.equal([matched.id]);
      expect(await allPages(merchant, '/v1/inflows?is_matched=false&limit=1')).to.deep.equal([
        again.id,
        held.id,
      ]);
      expect(ids(await list(merchant, '/v1/inflows'))).to.have.members([matched.id, held.id, again.id]);

      const page = await list(merchant, '/v1/inflows?is_matched=false&limit=1');
      const cursor = encodeURIComponent(page.body.meta.next_cursor);
      expect((await refused(merchant, `/v1/inflows?is_matched=true&cursor=${cursor}`)).code).to.equal(
        'INVALID_CURSOR',
      );
      expect((await refused(merchant, `/v1/inflows?cursor=${cursor}`)).code).to.equal('INVALID_CURSOR');
      for (const value of ['yes', '1', 'TRUE', '']) {
        const error = await refused(merchant, `/v1/inflows?is_matched=${value}`);
        expect(
          error.details.map((d) => d.field),
          value,
        ).to.deep.equal(['is_matched']);
      }
    });
  });

  describe('GET /v1/webhooks/deliveries', () => {
    const startReceiver = receiversClosedAfterEach();

    it('lists delivery records by status, event type and payout, composing with the cursor', async () => {
      const merchant = await payoutReadyMerchant();
      // The receiver fails the first request it gets and takes the others.
      const endpoint = await startReceiver((_, i) => (i === 0 ? 500 : 200));
      await configureWebhook(merchant, endpoint.url);
      const first = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout() });
      const second = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout() });
      await deliverFor([merchant]);
      await runInstructionsOnce(harness().service.deps);
      await deliverFor([merchant]);

      const all = (await list(merchant, '/v1/webhooks/deliveries?limit=100')).body.data as {
        id: string;
        status: string;
        event_type: string;
        payout_id: string;
      }[];
      expect(all.map((r) => r.status).filter((s) => s === 'FAILED')).to.have.length(1);
      const where = (keep: (r: (typeof all)[number]) => boolean) => all.filter(keep).map((r) => r.id);

      expect(ids(await list(merchant, '/v1/webhooks/deliveries?status=FAILED'))).to.deep.equal(
        where((r) => r.status === 'FAILED'),
      );
      expect(
        ids(await list(merchant, '/v1/webhooks/deliveries?event_type=payout.pending_payment')),
      ).to.deep.equal(where((r) => r.event_type === 'payout.pending_payment'));
      expect(where((r) => r.event_type === 'payout.pending_payment')).to.have.length(2);
      expect(ids(await list(merchant, `/v1/webhooks/deliveries?payout_id=${second.body.id}`))).to.deep.equal(
        where((r) => r.payout_id === second.body.id),
      );
      expect(
        ids(
          await list(
            merchant,
            `/v1/webhooks/deliveries?payout_id=${first.body.id}&event_type=payout.created&status=SUCCESS`,
          ),
        ),
      ).to.deep.equal(
        where(
          (r) => r.payout_id === first.body.id && r.event_type === 'payout.created' && r.status === 'SUCCESS',
        ),
      );
      expect(await allPages(merchant, '/v1/webhooks/deliveries?status=SUCCESS&limit=1')).to.deep.equal(
        where((r) => r.status === 'SUCCESS'),
      );

      const page = await list(merchant, '/v1/webhooks/deliveries?status=SUCCESS&limit=1');
      const cursor = encodeURIComponent(page.body.meta.next_cursor);
      expect(
        (await refused(merchant, `/v1/webhooks/deliveries?status=FAILED&cursor=${cursor}`)).code,
      ).to.equal('INVALID_CURSOR');
      for (const [query, field] of [
        ['status=SUCCEEDED', 'status'],
        ['event_type=payout.done', 'event_type'],
        ['payout_id=not-a-uuid', 'payout_id'],
      ]) {
        const error = await refused(merchant, `/v1/webhooks/deliveries?${query}`);
        expect(
          error.details.map((d) => d.field),
          query,
        ).to.deep.equal([field]);
      }
      // A payout of another tenant matches nothing, exactly like one that does not exist.
      const stranger = await createMerchant();
      expect(ids(await list(stranger, `/v1/webhooks/deliveries?payout_id=${first.body.id}`))).to.deep.equal(
        [],
      );
    });
  });
});
