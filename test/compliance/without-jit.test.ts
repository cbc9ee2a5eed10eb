import { expect } from 'chai';
import { caseCounts, stateCounts } from '#src/compliance/counts.ts';
import { exceptionQueues } from '#src/compliance/exceptions.ts';
import { complianceModelOf } from '#src/compliance/model.ts';
import { announceOverdue } from '#src/compliance/overdue.ts';
import { overdueHours } from '#src/compliance/queues.ts';
import { type Sql, statement } from '#src/db/sql.ts';
import { purgeOverdueNotices } from '#src/jobs/retention.ts';
import { createLogger } from '#src/lib/log.ts';
import { harness } from '../harness.ts';

/**
 * The counting statements (the console's and the metrics' counts, the overdue notices and their
 * purge) run with PostgreSQL's JIT off: their estimated cost passes `jit_above_cost` on a filled
 * database, and compiling them cost 60 ms a call where running them takes 3
 * (bench/results/2026-11-29.console-counts-jit.md). Each statement is followed, in its own
 * transaction, by a look at the `jit` setting it ran under.
 */

const showJit = statement('test_show_jit', "select current_setting('jit') as jit");

/** `sql`, noting for each statement it runs the `jit` setting it ran under ('session' outside a transaction). */
function watched(sql: Sql): { sql: Sql; seen: Map<string, string> } {
  const seen = new Map<string, string>();
  const wrap = (inner: Sql, inTransaction: boolean): Sql => ({
    origin: inner.origin,
    afterCommit: (callback) => inner.afterCommit(callback),
    async rows(run, values) {
      const rows = await inner.rows(run, values);
      const jit = inTransaction ? (await inner.rows<{ jit: string }>(showJit))[0]!.jit : 'session';
      seen.set(run.name, jit);
      return rows as never;
    },
    transaction: (work, settings) => inner.transaction((tx) => work(wrap(tx, true)), settings),
  });
  return { sql: wrap(sql, false), seen };
}

describe('counting statements without JIT', () => {
  it('the exception queues, the machines’ counts, the overdue notices and their purge', async () => {
    const deps = harness().service.deps;
    const { sql, seen } = watched(deps.sql);
    const now = deps.clock.now();
    const hours = overdueHours(deps.config);
    const model = complianceModelOf(deps.config, deps.corridors);

    await exceptionQueues(sql, { now, hours });
    await stateCounts(sql, model);
    await caseCounts(sql, model);
    await announceOverdue({ sql, log: createLogger({ level: 'silent' }), now, hours });
    await purgeOverdueNotices(sql, now, 100);

    const counting = [
      'exception_queue_counts',
      'compliance_state_counts',
      'compliance_money_case_counts',
      'exception_overdue_notices_insert',
      'retention_exception_overdue_notices',
    ];
    for (const name of counting) expect(seen.get(name), name).to.equal('off');
  });
});
