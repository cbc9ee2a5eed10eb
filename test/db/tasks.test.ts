import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import { Task, type TaskKind } from '#src/jobs/entities.ts';
import {
  type ClaimedTask,
  claimTasks,
  completeTask,
  retryTask,
  retryTasks,
  scheduleTask,
  taskSubject,
} from '#src/jobs/tasks.ts';
import { harness } from '../harness.ts';
import { racesOnlyOnPostgres } from '../races.ts';

describe('task rows', () => {
  const em = () => harness().service.deps.orm.em.fork();
  // A clock of its own, far from the harness's, so no other test's tasks are due here.
  let now = new Date('1990-01-01T00:00:00Z');
  const later = (ms: number) => new Date(now.getTime() + ms);
  // The subjects' tenant: tasks name it, and nothing here reads the subjects.
  const tenantId = randomUUID();

  async function open(subjectId: string) {
    return em().find(Task, { subjectId, doneAt: null });
  }

  /** What a claim at `at` (a lease of 60 s) hands out of `subjectId`'s task of `kind`. */
  async function claimOf(kind: TaskKind, subjectId: string, at: Date) {
    const claimed = await claimTasks(em(), { kind, now: at, limit: 100, leaseMs: 60_000 });
    return claimed.filter((t) => t.subjectId === subjectId);
  }

  it('keeps one open task per kind and subject however often it is scheduled', async () => {
    const subjectId = randomUUID();
    await scheduleTask(em(), { kind: 'DISPATCH', subjectId, tenantId, dueAt: now, now });
    await scheduleTask(em(), { kind: 'DISPATCH', subjectId, tenantId, dueAt: now, now });
    expect(await open(subjectId)).to.have.length(1);
  });

  it('never hands one due task to two claimers: a claim skips the row another claim holds', async function () {
    racesOnlyOnPostgres(this);
    const subjectId = randomUUID();
    await scheduleTask(em(), { kind: 'QUERY_OUTFLOW', subjectId, tenantId, dueAt: now, now });
    const claim = (on: EntityManager) =>
      claimTasks(on, { kind: 'QUERY_OUTFLOW', now, limit: 10, leaseMs: 60_000 });
    const { promise: release, resolve: letGo } = Promise.withResolvers<void>();
    const { promise: holding, resolve: held } = Promise.withResolvers<ClaimedTask[]>();
    // The first claimer has the row and has not committed yet when the second one looks.
    const first = em().transactional(async (tx) => {
      held(await claim(tx));
      await release;
    });
    const a = await holding;
    const b = await claim(em());
    letGo();
    await first;
    expect(a.filter((t) => t.subjectId === subjectId)).to.have.length(1);
    expect(
      b.filter((t) => t.subjectId === subjectId),
      'skipped, not waited for',
    ).to.deep.equal([]);
    // Committed, it is leased: not due again until the lease runs out.
    expect(
      (
        await claimTasks(em(), { kind: 'QUERY_OUTFLOW', now: later(59_000), limit: 10, leaseMs: 60_000 })
      ).filter((t) => t.subjectId === subjectId),
    ).to.deep.equal([]);
  });

  it("hands a claim its subject's tenant, and gives an open task without one its tenant when scheduled again", async () => {
    now = later(3_600_000);
    const [named, unnamed] = [randomUUID(), randomUUID()];
    await scheduleTask(em(), { kind: 'DISPATCH', subjectId: named, tenantId, dueAt: now, now });
    // As a task scheduled before tasks carried the tenant (the migration leaves such done tasks).
    await em().execute(
      `insert into tasks (id, kind, subject_id, due_at, attempts, created_at, updated_at)
       values (?, 'DISPATCH', ?, ?, 0, ?, ?)`,
      [randomUUID(), unnamed, now, now, now],
    );
    const claimed = await claimTasks(em(), { kind: 'DISPATCH', now, limit: 100, leaseMs: 60_000 });
    const of = (subjectId: string) => claimed.find((t) => t.subjectId === subjectId);
    expect(of(named)).to.deep.include({ tenantId });
    expect(of(unnamed)).to.deep.include({ tenantId: null });
    expect(taskSubject(of(named)!)).to.deep.equal({ id: named, tenant: tenantId });
    expect(taskSubject(of(unnamed)!)).to.deep.equal({ id: unnamed });
    await scheduleTask(em(), { kind: 'DISPATCH', subjectId: unnamed, tenantId, dueAt: now, now });
    const [rescheduled] = await open(unnamed);
    expect(rescheduled).to.deep.include({ tenantId, generation: 1 });
    await completeTask(em(), of(named)!, now);
  });

  it('does not lose work scheduled while a worker handles the task', async () => {
    now = later(3_600_000);
    const subjectId = randomUUID();
    await scheduleTask(em(), { kind: 'RAISE_REFUND', subjectId, tenantId, dueAt: now, now });
    const [claimed] = (
      await claimTasks(em(), { kind: 'RAISE_REFUND', now, limit: 100, leaseMs: 60_000 })
    ).filter((t) => t.subjectId === subjectId);
    expect(claimed).to.not.equal(undefined);
    await scheduleTask(em(), { kind: 'RAISE_REFUND', subjectId, tenantId, dueAt: now, now });
    await completeTask(em(), claimed!, now);
    const [still] = await open(subjectId);
    expect(still, 'the new work keeps the task open').to.not.equal(undefined);
    expect(still!.dueAt.getTime()).to.equal(now.getTime());

    const [again] = (
      await claimTasks(em(), { kind: 'RAISE_REFUND', now, limit: 100, leaseMs: 60_000 })
    ).filter((t) => t.subjectId === subjectId);
    await completeTask(em(), again!, now);
    expect(await open(subjectId)).to.deep.equal([]);
  });

  it('retries later with the error kept, or at once when rescheduled meanwhile', async () => {
    now = later(3_600_000);
    const subjectId = randomUUID();
    await scheduleTask(em(), { kind: 'DISPATCH_REFUND', subjectId, tenantId, dueAt: now, now });
    const [claimed] = (
      await claimTasks(em(), { kind: 'DISPATCH_REFUND', now, limit: 100, leaseMs: 60_000 })
    ).filter((t) => t.subjectId === subjectId);
    await retryTask(em(), { task: claimed!, dueAt: later(5000), error: 'rail unreachable', now });
    const [waiting] = await open(subjectId);
    expect(waiting).to.deep.include({ lastError: 'rail unreachable', attempts: 1 });
    expect(waiting!.dueAt.getTime()).to.equal(later(5000).getTime());
  });

  it('puts a batch back in one statement: each with its own backoff, at once when rescheduled meanwhile', async () => {
    now = later(7_200_000);
    const [quiet, busy] = [randomUUID(), randomUUID()];
    for (const subjectId of [quiet, busy]) {
      await scheduleTask(em(), { kind: 'GENERATE_INSTRUCTION', subjectId, tenantId, dueAt: now, now });
    }
    const claimed = (
      await claimTasks(em(), { kind: 'GENERATE_INSTRUCTION', now, limit: 100, leaseMs: 60_000 })
    ).filter((t) => t.subjectId === quiet || t.subjectId === busy);
    expect(claimed).to.have.length(2);
    // New work for `busy` while its worker handles it: its generation moves on.
    await scheduleTask(em(), { kind: 'GENERATE_INSTRUCTION', subjectId: busy, tenantId, dueAt: now, now });
    const retryAt = later(8000);
    await retryTasks(
      harness().service.deps.sql,
      claimed.map((task) => ({ task, dueAt: retryAt, error: `rates "down" for ${task.subjectId}, {a,b}` })),
      now,
    );
    const [q] = await open(quiet);
    const [b] = await open(busy);
    expect(q!.dueAt.getTime()).to.equal(retryAt.getTime());
    expect(q!.lastError).to.equal(`rates "down" for ${quiet}, {a,b}`);
    expect(b!.dueAt.getTime()).to.equal(now.getTime());
    expect(b!.lastError).to.equal(`rates "down" for ${busy}, {a,b}`);
  });

  it('leases a claim without moving its due time, and hands it out again once the lease runs out', async () => {
    now = later(10_800_000);
    const subjectId = randomUUID();
    await scheduleTask(em(), { kind: 'DISPATCH', subjectId, tenantId, dueAt: now, now });
    const claim = (at: Date) => claimOf('DISPATCH', subjectId, at);
    expect(await claim(now)).to.have.length(1);
    const [held] = await open(subjectId);
    expect(held!.dueAt.getTime(), 'the due time stays').to.equal(now.getTime());
    expect(held!.leasedUntil?.getTime()).to.equal(later(60_000).getTime());
    expect(await claim(later(59_999)), 'held until the lease ends').to.deep.equal([]);
    // Its worker died: the next claim after the lease takes it, as a further attempt.
    const [again] = await claim(later(60_000));
    expect(again).to.deep.include({ subjectId, attempts: 2 });
    await completeTask(em(), again!, later(60_000));
    const [done] = await em().find(Task, { subjectId });
    expect(done).to.deep.include({ leasedUntil: null });
    expect(done!.doneAt?.getTime()).to.equal(later(60_000).getTime());
  });

  it('ends the lease when a task is put back, so it is due at its retry time, not at the end of the lease', async () => {
    now = later(10_800_000);
    const subjectId = randomUUID();
    await scheduleTask(em(), { kind: 'QUERY_OUTFLOW', subjectId, tenantId, dueAt: now, now });
    const claim = (at: Date) => claimOf('QUERY_OUTFLOW', subjectId, at);
    const [claimed] = await claim(now);
    await retryTask(em(), { task: claimed!, dueAt: later(5000), error: 'processor busy', now });
    expect(await claim(later(4999)), 'not before its retry time').to.deep.equal([]);
    expect(await claim(later(5000))).to.have.length(1);
  });

  it('claims with a HOT update: no index entry is written, the row is rewritten on its own page', async () => {
    now = later(10_800_000);
    const subjects: string[] = [randomUUID(), randomUUID(), randomUUID()];
    for (const subjectId of subjects)
      await scheduleTask(em(), { kind: 'RAISE_REFUND', subjectId, tenantId, dueAt: now, now });
    // This connection's counters, read before and after the claim within one transaction: nothing
    // any other connection does shows in them.
    const counts = await em().transactional(async (tx) => {
      const read = async () =>
        (
          await tx.execute<{ updated: string; hot: string }[]>(
            `select pg_stat_get_xact_tuples_updated('tasks'::regclass) as updated,
                    pg_stat_get_xact_tuples_hot_updated('tasks'::regclass) as hot`,
          )
        ).map((r) => ({ updated: Number(r.updated), hot: Number(r.hot) }))[0]!;
      const before = await read();
      const claimed = await claimTasks(tx, { kind: 'RAISE_REFUND', now, limit: 100, leaseMs: 60_000 });
      const after = await read();
      return {
        claimed: claimed.filter((t) => subjects.includes(t.subjectId)).length,
        updated: after.updated - before.updated,
        hot: after.hot - before.hot,
      };
    });
    expect(counts.claimed).to.equal(3);
    expect(counts.updated).to.be.at.least(3);
    expect(counts.hot, 'every update of the claim is HOT').to.equal(counts.updated);
  });
});
