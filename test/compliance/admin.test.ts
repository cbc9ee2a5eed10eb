import { expect } from 'chai';
import { announceOverdue, type OverdueNoticeRow } from '#src/compliance/overdue.ts';
import { type ExceptionQueue, overdueHours, QUEUE_INFO } from '#src/compliance/queues.ts';
import { createLogger } from '#src/lib/log.ts';
import { runRefundsOnce } from '#src/refunds/job.ts';
import { createMerchant } from '../client.ts';
import { harness } from '../harness.ts';
import { failedTwoWays } from '../ledger/fixtures.ts';
import { operatorWith, trpcCall } from '../operators/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';
import { getPayout, handledCredit, payBank, payoutWithInstruction } from '../settlement/fixtures.ts';
import { removeQueues, seedQueues } from './fixtures.ts';

/**
 * `admin.machines` and `admin.exceptions` against the running service, as the console calls them
 * (tRPC over HTTP with an operator's token). The database is shared with the rest of the run, so
 * the tests compare counts before and after what they do.
 */

type Queues = Record<
  string,
  {
    count: number;
    oldest_at: string | null;
    oldest_age_seconds: number | null;
    overdue: number;
    overdue_after_hours: number;
    afterwards: string;
  }
>;

async function exceptions(): Promise<{ counted_at: string; queues: Queues; order: string[] }> {
  const viewer = await operatorWith('viewer');
  const res = await trpcCall('admin.exceptions', 'query', undefined, viewer.token);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  const data = res.body.result.data;
  return {
    counted_at: data.counted_at,
    order: data.queues.map((q: { code: string }) => q.code),
    queues: Object.fromEntries(data.queues.map((q: { code: string }) => [q.code, q])),
  };
}

type Counts = Record<string, Record<string, number | null>>;

async function machines(): Promise<{ body: any; counts: Counts }> {
  const viewer = await operatorWith('viewer');
  const res = await trpcCall('admin.machines', 'query', undefined, viewer.token);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  const body = res.body.result.data;
  const counts: Counts = {};
  for (const m of body.machines) {
    counts[m.name] = Object.fromEntries(
      m.states.map((s: { path: string; count: number | null }) => [s.path, s.count]),
    );
  }
  return { body, counts };
}

const QUEUES = [
  'PAYOUTS_HELD_UNDERPAID',
  'PAYOUTS_HELD_PAYEE_NAME',
  'INFLOWS_UNMATCHED',
  'REFUNDS_FAILED',
  'MONEY_HELD_NO_REFUND_DESTINATION',
  'PAYOUTS_OVERPAYMENT_TO_RETURN',
  'WEBHOOK_DELIVERIES_DEAD',
  'APPROVALS_PENDING',
  'RECONCILIATION_BREAKS',
  'OUT_OF_BALANCE',
];

describe('admin.exceptions: where money waits for a person', () => {
  it('lists every queue, in a stable order, to any operator and to nobody else', async () => {
    const { order, queues } = await exceptions();
    expect(order).to.deep.equal(QUEUES);
    for (const code of QUEUES) {
      expect(queues[code]).to.include.keys('title', 'description', 'machine', 'state', 'since', 'list');
      expect(queues[code]!.count).to.be.a('number');
      expect(queues[code]).to.include({
        overdue_after_hours: QUEUE_INFO[code as ExceptionQueue].overdue.defaultHours,
        overdue_setting: `OVERDUE_${code}_HOURS`,
      });
      expect(queues[code]!.overdue).to.be.a('number');
      expect(queues[code]!.afterwards).to.be.a('string').and.not.equal('');
    }
    const anonymous = await trpcCall('admin.exceptions', 'query', undefined, null);
    expect(anonymous.status).to.equal(401);
    const merchant = await createMerchant();
    const withKey = await trpcCall('admin.exceptions', 'query', undefined, merchant.key);
    expect(withKey.status).to.equal(401);
  });

  it('counts an underpaid payout while it is held, and no longer once the rest arrives', async () => {
    const merchant = await payoutReadyMerchant();
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const before = await exceptions();
    const first = await payBank(payout.instruction.account_unique, '1000.00');
    await handledCredit(first.session_id);
    const held = await exceptions();
    expect(held.queues['PAYOUTS_HELD_UNDERPAID']!.count).to.equal(
      before.queues['PAYOUTS_HELD_UNDERPAID']!.count + 1,
    );
    // Waiting since its first underpaid settlement, at the latest.
    const since = (await getPayout(merchant, payout.id)).status_timeline.at(-1).created_at;
    expect(Date.parse(held.queues['PAYOUTS_HELD_UNDERPAID']!.oldest_at!)).to.be.at.most(Date.parse(since));

    const expected = Number(payout.instruction.expected);
    const rest = await payBank(payout.instruction.account_unique, (expected - 1000).toFixed(2));
    await handledCredit(rest.session_id);
    expect((await getPayout(merchant, payout.id)).status).to.equal('PAYMENT_RECEIVED');
    expect((await exceptions()).queues['PAYOUTS_HELD_UNDERPAID']!.count).to.equal(
      before.queues['PAYOUTS_HELD_UNDERPAID']!.count,
    );
  });

  it('lists each payout held underpaid once, however many short payments, a page at a time (admin.payouts.heldUnderpaid)', async () => {
    const merchant = await payoutReadyMerchant();
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    for (const amount of ['300.00', '200.00']) {
      const credit = await payBank(payout.instruction.account_unique, amount);
      expect((await handledCredit(credit.session_id)).state).to.equal('HELD');
    }
    const viewer = await operatorWith('viewer');
    const rows: { payout_id: string; received_amount: number; held_since: string | null }[] = [];
    let cursor: string | undefined;
    do {
      const res = await trpcCall('admin.payouts.heldUnderpaid', 'query', { limit: 2, cursor }, viewer.token);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const page = res.body.result.data;
      expect(page.data.length, 'a page holds its limit unless it is the last').to.equal(
        page.meta.has_more ? 2 : page.data.length,
      );
      rows.push(...page.data);
      cursor = page.meta.next_cursor ?? undefined;
    } while (cursor);
    const ids = rows.map((r) => r.payout_id);
    expect(new Set(ids).size, 'no payout twice').to.equal(ids.length);
    expect(ids.filter((id) => id === payout.id)).to.have.length(1);
    expect(rows.length).to.equal((await exceptions()).queues['PAYOUTS_HELD_UNDERPAID']!.count);
    const mine = rows.find((r) => r.payout_id === payout.id)!;
    expect(mine.received_amount).to.equal(500);
    const timeline = (await getPayout(merchant, payout.id)).status_timeline;
    const firstShort = timeline.find(
      (r: { reason_code: string }) => r.reason_code === 'SETTLEMENT_UNDERPAID',
    );
    expect(mine.held_since).to.equal(firstShort.created_at);

    expect((await trpcCall('admin.payouts.heldUnderpaid', 'query', {}, null)).status).to.equal(401);
    const key = (await createMerchant()).key;
    expect((await trpcCall('admin.payouts.heldUnderpaid', 'query', {}, key)).status).to.equal(401);
  });

  describe('with objects waiting since long ago', () => {
    let tenantId: string;
    // Older than anything the rest of the run makes: the oldest of every queue is one of these.
    const at = new Date('2001-01-01T00:00:00Z');
    const stepMs = 3_600_000;
    let baseline: Awaited<ReturnType<typeof exceptions>>;

    before(async () => {
      baseline = await exceptions();
      tenantId = (await createMerchant()).tenantId;
      // 6 of each: row n at `at + n h`; payouts n = 3, 6 held (each with a proposal to fail it),
      // n = 1, 4 holding money, n = 2, 5 refund failed.
      await seedQueues(tenantId, { rows: 6, at, stepMs });
    });
    after(async () => {
      if (tenantId) await removeQueues(tenantId);
    });

    it('counts each queue and says since when its oldest object has waited', async () => {
      const now = await exceptions();
      const hour = (n: number) => new Date(at.getTime() + n * stepMs).toISOString();
      const expected: Record<string, [number, string]> = {
        PAYOUTS_HELD_UNDERPAID: [2, hour(3)],
        INFLOWS_UNMATCHED: [6, hour(1)],
        REFUNDS_FAILED: [2, hour(2)],
        MONEY_HELD_NO_REFUND_DESTINATION: [2, hour(1)],
        WEBHOOK_DELIVERIES_DEAD: [6, hour(1)],
        APPROVALS_PENDING: [2, hour(3)],
      };
      const clock = Date.parse(now.counted_at);
      expect(clock).to.equal(harness().clock.now().getTime());
      for (const [code, [added, oldest]] of Object.entries(expected)) {
        const queue = now.queues[code]!;
        expect(queue.count, code).to.equal(baseline.queues[code]!.count + added);
        expect(queue.oldest_at, code).to.equal(oldest);
        expect(queue.oldest_age_seconds, code).to.equal(Math.floor((clock - Date.parse(oldest)) / 1000));
      }
    });

    it('counts them overdue, announces each once however many instances look, and tells Prometheus', async () => {
      const now = await exceptions();
      const added: Record<string, number> = {
        PAYOUTS_HELD_UNDERPAID: 2,
        INFLOWS_UNMATCHED: 6,
        REFUNDS_FAILED: 2,
        MONEY_HELD_NO_REFUND_DESTINATION: 2,
        WEBHOOK_DELIVERIES_DEAD: 6,
        APPROVALS_PENDING: 2,
      };
      for (const [code, n] of Object.entries(added)) {
        expect(now.queues[code]!.overdue, code).to.equal(baseline.queues[code]!.overdue + n);
      }

      // Two instances' `approvals` jobs at the same moment: each item is announced by one of them.
      const deps = harness().service.deps;
      const lines: { msg: string; queue: string; item_id: string }[] = [];
      const log = createLogger({
        level: 'warn',
        destination: { write: (line: string) => void lines.push(JSON.parse(line)) },
      });
      const look = () =>
        announceOverdue({ sql: deps.sql, log, now: deps.clock.now(), hours: overdueHours(deps.config) });
      const announced: OverdueNoticeRow[] = (await Promise.all([look(), look()])).flat();
      const x = deps.orm.em.fork();
      const held = await x.execute<{ id: string }[]>(
        `select id from payouts where tenant_id = ? and status = 'PENDING_PAYMENT'`,
        [tenantId],
      );
      const keys = announced.map((a) => `${a.queue}/${a.itemId}/${a.since.toISOString()}`);
      expect(new Set(keys).size, 'no item twice').to.equal(keys.length);
      const heldAnnounced = announced
        .filter((a) => a.queue === 'PAYOUTS_HELD_UNDERPAID')
        .map((a) => a.itemId);
      expect(heldAnnounced).to.include.members(held.map((p) => p.id));
      expect(lines.filter((l) => l.msg === 'exception overdue')).to.have.length(announced.length);
      expect(lines[0]).to.include.keys('queue', 'item_id', 'since', 'overdue_after_hours', 'waited_hours');
      expect(await look(), 'announced already').to.deep.equal([]);

      const metrics = await (
        await fetch(`${harness().url}/metrics`, {
          headers: { authorization: `Bearer ${harness().adminToken}` },
        })
      ).text();
      for (const code of QUEUES) {
        const line = new RegExp(`^payout_exception_overdue\\{queue="${code}"\\} (\\d+)$`, 'm').exec(metrics);
        expect(line, code).to.not.equal(null);
        expect(Number(line![1]), code).to.equal(now.queues[code]!.overdue);
        expect(metrics).to.match(
          new RegExp(`^payout_exception_items\\{queue="${code}"\\} ${now.queues[code]!.count}$`, 'm'),
        );
      }
    });

    // What the list shows is what the console counts: INFLOWS_UNMATCHED one by one (UNMATCHED and
    // HELD attributed to nobody), and PAYOUTS_HELD_UNDERPAID once per payout, whose HELD money the
    // list shows beside them; the money of the failed payouts (n = 1, 2, 4, 5) is FOR_REFUND, their refunds'.
    it('lists in admin.settlement.inflows the money those queues count, and none else', async () => {
      const now = await exceptions();
      const added = (code: string) => now.queues[code]!.count - baseline.queues[code]!.count;
      const viewer = await operatorWith('viewer');
      const list = async (input: Record<string, unknown>) => {
        const res = await trpcCall(
          'admin.settlement.inflows',
          'query',
          { tenant_id: tenantId, limit: 100, ...input },
          viewer.token,
        );
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        return res.body.result.data.data as { state: string; payout_id: string | null; arrived_at: string }[];
      };
      const all = await list({});
      const unattributed = all.filter((i) => i.payout_id === null);
      expect(unattributed).to.have.length(added('INFLOWS_UNMATCHED')).and.to.have.length(6);
      const heldFor = new Set(all.filter((i) => i.payout_id !== null).map((i) => i.payout_id));
      expect(heldFor.size).to.equal(added('PAYOUTS_HELD_UNDERPAID')).and.to.equal(2);
      const x = harness().service.deps.orm.em.fork();
      const held = await x.execute<{ id: string }[]>(
        `select id from payouts where tenant_id = ? and status = 'PENDING_PAYMENT'`,
        [tenantId],
      );
      expect([...heldFor]).to.have.members(held.map((p) => p.id));
      // Oldest first: row n's money arrived at n hours, a held payout's short payment beside its late one.
      expect(all.map((i) => Date.parse(i.arrived_at))).to.deep.equal(
        [1, 2, 3, 3, 4, 5, 6, 6].map((n) => at.getTime() + n * stepMs),
      );
      expect((await list({ state: 'HELD' })).map((i) => i.payout_id)).to.have.members([...heldFor]);
      expect(await list({ state: 'UNMATCHED' })).to.deep.equal(unattributed);
    });

    it('leaves out a DEAD delivery whose event was sent again, and counts the new one if it dies too', async () => {
      const x = harness().service.deps.orm.em.fork();
      const [oldest] = await x.execute<{ id: string; event_id: string }[]>(
        `select id, event_id from webhook_deliveries where tenant_id = ? and status = 'DEAD'
          order by updated_at limit 1`,
        [tenantId],
      );
      const dead = async () => (await exceptions()).queues['WEBHOOK_DELIVERIES_DEAD']!;
      const before = await dead();
      expect(before.oldest_at).to.equal(new Date(at.getTime() + stepMs).toISOString());
      // The row admin.webhooks.redeliver writes: another job of the same event, naming the DEAD one.
      const now = harness().clock.now();
      const [again] = await x.execute<{ id: string }[]>(
        `insert into webhook_deliveries (id, tenant_id, event_id, event_type, target_url, target_origin, status,
            snapshot, attempts, redelivery_of, created_at, updated_at, event_created_at)
         select gen_random_uuid(), ?, ?, 'payout.created', 'https://hooks.example/again', 'https://hooks.example:443',
                'PENDING', '{"value":"PENDING","status":"active"}', 0, ?, ?, ?, d.event_created_at
           from webhook_deliveries d where d.id = ? returning id`,
        [tenantId, oldest!.event_id, oldest!.id, now, now, oldest!.id],
      );
      const sentAgain = await dead();
      expect(sentAgain.count).to.equal(before.count - 1);
      expect(sentAgain.oldest_at).to.equal(new Date(at.getTime() + 2 * stepMs).toISOString());

      await x.execute(
        `update webhook_deliveries set status = 'DEAD', snapshot = '{"value":"DEAD","status":"done"}', updated_at = ?
          where id = ?`,
        [now, again!.id],
      );
      const diedAgain = await dead();
      expect(diedAgain.count).to.equal(before.count);
      expect(diedAgain.oldest_at).to.equal(sentAgain.oldest_at);
    });
  });
});

describe('admin.machines: the compliance view with live counts', () => {
  it('shows every machine in plain words, with the thresholds this service runs with', async () => {
    const { body } = await machines();
    const names = body.machines.map((m: { name: string }) => m.name);
    expect(names).to.include.members([
      'payout',
      'payment-instruction',
      'inflow',
      'quote',
      'outflow',
      'refund',
      'webhook-delivery',
    ]);
    // A machine registered for the pages is counted too: its table is in COUNTED_TABLES.
    for (const m of body.machines) expect(m.counted, m.name).to.equal(true);
    const payout = body.machines.find((m: { name: string }) => m.name === 'payout');
    const max = harness().service.deps.config.DISPATCH_MAX_ATTEMPTS;
    expect(payout.guards.find((g: { name: string }) => g.name === 'hasAttemptsLeft').holds).to.include(
      `\`DISPATCH_MAX_ATTEMPTS\` = ${max}`,
    );
    expect(body.money_places.map((p: { code: string }) => p.code)).to.include('HELD_FOR_PERSON');
    expect(body.links.length).to.be.above(0);
    // Every state of a counted machine has a count; a state with inner states counts them all.
    for (const m of body.machines.filter((x: { counted: boolean }) => x.counted)) {
      for (const s of m.states) {
        expect(s.count, `${m.name} ${s.path}`).to.be.a('number');
        if (s.children.length > 0) {
          const inner = m.states
            .filter((c: { parent: string | null }) => c.parent === s.path)
            .reduce((sum: number, c: { count: number }) => sum + c.count, 0);
          expect(s.count, `${m.name} ${s.path}`).to.equal(inner);
        }
      }
    }
  });

  it('counts a payout and its money as they move, inner states included', async () => {
    const merchant = await payoutReadyMerchant();
    const payout = await payoutWithInstruction(merchant, { settlement_currency: 'NGN' });
    const before = (await machines()).counts;
    const first = await payBank(payout.instruction.account_unique, '1000.00');
    await handledCredit(first.session_id);
    const after = (await machines()).counts;
    const change = (machine: string, path: string) => after[machine]![path]! - before[machine]![path]!;
    expect(change('payout', 'PENDING_PAYMENT.held')).to.equal(1);
    expect(change('payout', 'PENDING_PAYMENT.awaiting')).to.equal(-1);
    expect(change('payout', 'PENDING_PAYMENT')).to.equal(0);
    expect(change('inflow', 'HELD')).to.equal(1);
    expect(change('inflow', 'HELD.attributed')).to.equal(1);
    expect(change('payment-instruction', 'UNPAID')).to.equal(0);
  });

  it('counts failed payouts apart by where the ledger says their money is, and names the refund fee', async () => {
    const deps = harness().service.deps;
    const cases = async (): Promise<Record<string, number>> => {
      const { body } = await machines();
      const payout = body.machines.find((m: { name: string }) => m.name === 'payout');
      const failed = payout.states.find((s: { path: string }) => s.path === 'FAILED');
      const returned = failed.cases.find((c: { code: string }) => c.code === 'RETURNED_TO_MERCHANT');
      expect(returned.description).to.include('refund fee').and.include('NGN on the bank');
      return Object.fromEntries(failed.cases.map((c: { code: string; count: number }) => [c.code, c.count]));
    };
    // Refunds other tests left due are sent first, so that only this test's payouts move the counts.
    await runRefundsOnce(deps);
    const before = await cases();
    // One fails before any money was asked for (nothing ever arrived), one at the processor after
    // the merchant paid (its money is with us for its refund).
    await failedTwoWays();
    const failed = await cases();
    const change = (now: Record<string, number>, code: string) => now[code]! - before[code]!;
    expect(change(failed, 'NOTHING_RECEIVED')).to.equal(1);
    expect(change(failed, 'AWAITING_REFUND')).to.equal(1);
    expect(change(failed, 'RETURNED_TO_MERCHANT')).to.equal(0);
    // Its refund arrives: the same FAILED payout is now counted as returned, no longer as with us.
    await runRefundsOnce(deps);
    const refunded = await cases();
    expect(change(refunded, 'AWAITING_REFUND')).to.equal(0);
    expect(change(refunded, 'RETURNED_TO_MERCHANT')).to.equal(1);
    expect(change(refunded, 'NOTHING_RECEIVED')).to.equal(1);
  });
});
