import type { EntityManager } from '@mikro-orm/postgresql';
import { needsPostgresServer } from './skip.ts';

/**
 * Skips the running test on the embedded PostgreSQL (PGlite), which runs one transaction at a
 * time: there a race test would pass without anything racing. The reporter prints the reason
 * under the skipped test. `.ci/run` runs the suite on both.
 */
export function racesOnlyOnPostgres(ctx: Mocha.Context): void {
  needsPostgresServer(ctx, 'races: transactions that run side by side');
}

/**
 * Whether another session comes to wait for a lock in this database before `work` settles: how a
 * test knows that a racing transaction is blocked behind the one holding the row, rather than
 * reading past it. Looks every 10 ms, for at most five seconds.
 */
export async function waitsForLock(em: EntityManager, work: Promise<unknown>): Promise<boolean> {
  let settled = false;
  work.then(
    () => {
      settled = true;
    },
    () => {
      settled = true;
    },
  );
  for (let i = 0; i < 500 && !settled; i++) {
    const [row] = await em.execute<{ n: string }[]>(
      "select count(*) as n from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'",
    );
    if (Number(row?.n) > 0) return true;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return false;
}
