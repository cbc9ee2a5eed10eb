import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { v7 } from 'uuid';
import { runRetentionOnce } from '#src/jobs/retention.ts';
import { completeTask, scheduleTask } from '#src/jobs/tasks.ts';
import { ManualClock } from '#src/lib/clock.ts';
import { uuidV7Floor } from '#src/lib/ids.ts';
import { heldPayout } from '../approvals/fixtures.ts';
import { call, createMerchant } from '../client.ts';
import { harness } from '../harness.ts';
import { cliAs, newOperator } from '../operators/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';

const HOUR = 3_600_000;

/** The retention job as an instance whose clock reads `at` would run it. */
function retentionAt(at: Date, options: { batch?: number } = {}) {
  const deps = harness().service.deps;
  return runRetentionOnce({ ...deps, clock: new ManualClock(at) }, options);
}

const em = () => harness().service.deps.orm.em.fork();

async function keysOf(tenantId: string): Promise<string[]> {
  const rows = await em().execute<{ key: string }[]>('select key from idempotency_keys where tenant_id = ?', [
    tenantId,
  ]);
  return rows.map((r) => r.key);
}

async function taskExists(id: string): Promise<boolean> {
  const rows = await em().execute('select 1 from tasks where id = ?', [id]);
  return rows.length === 1;
}

describe('retention job', () => {
  const config = () => harness().service.deps.config;

  it('keeps Idempotency-Keys for the published window, then deletes them and frees the key', async () => {
    expect(config().IDEMPOTENCY_RETENTION_HOURS).to.equal(72);
    const merchant = await createMerchant();
    const key = randomUUID();
    const body = {
      currency: 'USDT',
      type: 'CRYPTO_ADDRESS',
      network: 'TRON',
      address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
    };
    const put = () =>
      call('PUT', '/v1/refund-destinations', { key: merchant.key, body, idempotencyKey: key });
    const written = harness().clock.now();
    const first = await put();
    expect(first.status).to.equal(200);

    await retentionAt(new Date(written.getTime() + 71 * HOUR));
    expect(await keysOf(merchant.tenantId)).to.deep.equal([key]);
    const replay = await put();
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    expect(replay.text).to.equal(first.text);

    const summary = await retentionAt(new Date(written.getTime() + 73 * HOUR));
    expect(summary.idempotency_keys).to.be.greaterThanOrEqual(1);
    expect(await keysOf(merchant.tenantId)).to.deep.equal([]);
    // Past the window the key is forgotten: the same request is a new write.
    const again = await put();
    expect(again.status).to.equal(200);
    expect(again.headers.get('idempotent-replayed')).to.equal(null);
    expect(again.body.id).to.not.equal(first.body.id);
  });

  it('deletes done tasks older than their window, never open ones', async () => {
    expect(config().TASK_RETENTION_HOURS).to.equal(168);
    const now = harness().clock.now();
    const at = (hours: number) => new Date(now.getTime() + hours * HOUR);
    const subjects = { old: randomUUID(), recent: randomUUID(), open: randomUUID() };
    for (const subjectId of Object.values(subjects)) {
      await scheduleTask(em(), { kind: 'QUERY_OUTFLOW', subjectId, tenantId: randomUUID(), dueAt: now, now });
    }
    const tasks = await em().execute<{ id: string; generation: number; subject_id: string }[]>(
      'select id, generation, subject_id from tasks where subject_id in (?, ?, ?)',
      Object.values(subjects),
    );
    const task = (subject: string) => tasks.find((t) => t.subject_id === subject)!;
    expect(tasks).to.have.length(3);
    await completeTask(em(), task(subjects.old), now);
    await completeTask(em(), task(subjects.recent), at(10));

    await retentionAt(at(168 + 5));
    expect(await taskExists(task(subjects.old).id)).to.equal(false);
    expect(await taskExists(task(subjects.recent).id), 'done 163 h before').to.equal(true);
    expect(await taskExists(task(subjects.open).id), 'open').to.equal(true);

    await retentionAt(at(10_000));
    expect(await taskExists(task(subjects.recent).id)).to.equal(false);
    expect(await taskExists(task(subjects.open).id), 'open, however old').to.equal(true);
  });

  it('deletes in bounded batches, each row once, with several instances running it at once', async () => {
    const tenantId = (await createMerchant()).tenantId;
    const long = new Date(harness().clock.now().getTime() - 100 * HOUR);
    // Ids made when the rows were, as the service makes them (UUID v7 carry their creation time).
    const ids = Array.from({ length: 40 }, (_, i) => v7({ msecs: long.getTime() + i }));
    for (const id of ids) {
      await em().execute(
        `insert into idempotency_keys (id, tenant_id, key, fingerprint, response_status, response_body, created_at, updated_at)
         values (?, ?, ?, ?, 200, 'sealed', ?, ?)`,
        [id, tenantId, randomUUID(), 'f'.repeat(64), long, long],
      );
    }
    const at = harness().clock.now();
    const cutoff = new Date(at.getTime() - config().IDEMPOTENCY_RETENTION_HOURS * HOUR);
    const [eligible] = await em().execute<{ n: number }[]>(
      'select count(*)::int as n from idempotency_keys where id < ? and created_at < ?',
      [uuidV7Floor(cutoff), cutoff],
    );
    const passes = await Promise.all([1, 2, 3].map(() => retentionAt(at, { batch: 4 })));
    const deleted = passes.reduce((sum, p) => sum + p.idempotency_keys, 0);
    expect(deleted).to.equal(eligible?.n);
    expect(deleted).to.be.greaterThanOrEqual(ids.length);
    expect(await keysOf(tenantId)).to.deep.equal([]);
  });

  it('deletes overdue notices of items that no longer wait, never of one still waiting', async () => {
    const notices = async (ids: string[]) =>
      (
        await em().execute<{ item_id: string }[]>(
          'select item_id from exception_overdue_notices where item_id in (?, ?)',
          ids,
        )
      )
        .map((r) => r.item_id)
        .sort();
    // A proposal still PENDING (its queue, since it was made), and an item that left its queue.
    const { payoutId } = await heldPayout(await payoutReadyMerchant());
    const proposer = await newOperator('operator');
    const { approval } = await cliAs(proposer)('payout', 'fail', payoutId, '--note', 'no top-up');
    const gone = randomUUID();
    await em().execute(
      `insert into exception_overdue_notices (queue, item_id, since, noticed_at)
       select 'APPROVALS_PENDING', id, created_at, now() from approvals where id = ?
       union all select 'REFUNDS_FAILED', ?::uuid, now() - interval '3 days', now()`,
      [approval.id, gone],
    );
    // However long it waits, the waiting one is kept: it would be announced again otherwise.
    const later = new Date(harness().clock.now().getTime() + 48 * HOUR);
    const first = await retentionAt(later);
    expect(first.exception_overdue_notices).to.be.greaterThanOrEqual(1);
    expect(await notices([approval.id, gone])).to.deep.equal([approval.id]);

    // Once decided, the proposal waits no more: its notice goes too.
    await cliAs(proposer)('approval', 'reject', approval.id, '--note', 'withdrawn');
    await retentionAt(later);
    expect(await notices([approval.id, gone])).to.deep.equal([]);
  });
});

describe('uuidV7Floor', () => {
  it('sorts below every UUID v7 of its millisecond and above every earlier one', () => {
    for (const ms of [0, 1, 1_767_225_600_000, 1_767_225_600_001, 2 ** 47]) {
      const floor = uuidV7Floor(new Date(ms));
      expect(floor).to.match(/^[0-9a-f]{8}-[0-9a-f]{4}-7000-8000-0{12}$/);
      for (let i = 0; i < 20; i++) {
        expect(v7({ msecs: ms }) >= floor, `${ms} same ms`).to.equal(true);
        if (ms > 0) expect(v7({ msecs: ms - 1 }) < floor, `${ms} earlier`).to.equal(true);
      }
    }
  });
});
