import type { Context, Runnable } from 'mocha';
import { harness } from './harness.ts';

/** What the reporter prints for a skipped test whose skip named no reason. */
export const NO_REASON = 'no reason given';

/**
 * Skips the running test (or, from a hook, the tests of its suite) and records why, so that the
 * reporter prints the reason under the skipped test. Every skip in the suite goes through here.
 */
export function skipBecause(ctx: Context, reason: string): never {
  const runnable = ctx.test as (Runnable & { type?: string }) | undefined;
  const target = runnable?.type === 'hook' ? runnable.parent : runnable;
  if (target) (target as { skipReason?: string }).skipReason = reason;
  ctx.skip();
}

/** Skips where the suite runs on the embedded database, which is one session and one database. */
export function needsPostgresServer(ctx: Context, why: string): void {
  if (harness().embedded) skipBecause(ctx, `needs a PostgreSQL server (${why}): set DATABASE_URL`);
}
