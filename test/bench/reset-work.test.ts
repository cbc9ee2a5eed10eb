import { expect } from 'chai';
import pg from 'pg';
import sinon from 'sinon';
import { resetWork, WORK_TABLES } from '../../bench/lib/db.ts';
import { harness } from '../harness.ts';
import { createScratchDatabase, type ScratchDatabase } from '../scratch-database.ts';
import { needsPostgresServer, skipBecause } from '../skip.ts';

/**
 * The benchmark empties its tables between runs while a request that the last load run made may
 * still be writing in the service (a run stops by closing its connections). The two can take the
 * same tables' locks in opposite orders; PostgreSQL then ends one of them, and when that is the
 * truncate, resetWork tries it again instead of failing the benchmark.
 */

describe('bench: resetWork', () => {
  let scratch: ScratchDatabase | undefined;
  let db: pg.Pool;

  before(async function () {
    needsPostgresServer(this, 'a second database and two sessions that deadlock');
    const h = harness();
    const made = await createScratchDatabase(h.directUrl ?? h.databaseUrl);
    if ('refused' in made) skipBecause(this, `no database of its own: ${made.refused}`);
    scratch = made;
    db = new pg.Pool({ connectionString: scratch.url, max: 2 });
    for (const table of WORK_TABLES) await db.query(`create table ${table} (id int)`);
  });

  after(async () => {
    await db?.end();
    await scratch?.drop();
  });

  it('tries the truncate again when PostgreSQL ends it in a deadlock', async () => {
    for (const table of WORK_TABLES) await db.query(`insert into ${table} values (1)`);
    const writer = new pg.Client({ connectionString: scratch!.url });
    await writer.connect();
    try {
      // The writer holds the last table the truncate locks; its deadlock check waits longer than
      // the truncate's, so that the truncate is the session PostgreSQL ends.
      await writer.query(`set deadlock_timeout = '10s'`);
      await writer.query('begin');
      await writer.query(`lock table ${WORK_TABLES.at(-1)} in row exclusive mode`);
      const query = sinon.spy(db, 'query');
      const reset = resetWork(db);
      await waitForLockWait(db);
      // Now the truncate holds the first table and waits for the writer, which asks for the first:
      // the truncate is ended, and this lock is granted.
      await writer.query(`lock table ${WORK_TABLES[0]} in row exclusive mode`);
      await writer.query('rollback');
      await reset;
      const truncates = query.getCalls().filter((c) => String(c.args[0]).trimStart().startsWith('truncate'));
      query.restore();
      expect(truncates).to.have.length(2);
      for (const table of WORK_TABLES) {
        const { rows } = await db.query<{ n: string }>(`select count(*) as n from ${table}`);
        expect(rows[0]!.n, table).to.equal('0');
      }
    } finally {
      await writer.end();
    }
  });
});

/** Resolves once a session of the database waits for a lock. */
async function waitForLockWait(db: pg.Pool): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const { rows } = await db.query<{ n: string }>(
      `select count(*) as n from pg_locks l join pg_stat_activity a using (pid)
        where not l.granted and a.datname = current_database()`,
    );
    if (Number(rows[0]!.n) > 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error('the truncate never waited for the writer');
}
