import type { Config } from '#src/config.ts';
import { type BenchContext, startService, waitFor } from './context.ts';
import { type RoundTrip, startPgTap, statementSummary } from './pg-tap.ts';

/**
 * Round trips per operation, counted on the wire (see `pg-tap.ts`) with a service instance that
 * talks to PostgreSQL through the tap. Not timed: the tap adds its own latency.
 */

export interface TraceResult {
  operations: number;
  roundTrips: number;
  roundTripsPerOp: number;
  transactionsPerOp: number;
  /** Statement shapes of the traced operations, most frequent first. */
  statements: { sql: string; count: number }[];
  trips: RoundTrip[];
}

function summarise(trips: RoundTrip[], operations: number): TraceResult {
  const begins = trips.filter((t) => /^\s*begin/i.test(t.sql)).length;
  return {
    operations,
    roundTrips: trips.length,
    roundTripsPerOp: Math.round((trips.length / operations) * 10) / 10,
    // Statements outside begin/commit are transactions of their own (autocommit).
    transactionsPerOp: Math.round(((countAutocommit(trips) + begins) / operations) * 10) / 10,
    statements: statementSummary(trips),
    trips,
  };
}

/** Statements sent outside an explicit transaction on their connection. */
function countAutocommit(trips: RoundTrip[]): number {
  const open = new Map<number, boolean>();
  let n = 0;
  for (const trip of trips) {
    const sql = trip.sql.trim().toLowerCase();
    if (sql.startsWith('begin')) open.set(trip.connection, true);
    else if (sql.startsWith('commit') || sql.startsWith('rollback')) open.set(trip.connection, false);
    else if (!open.get(trip.connection)) n++;
  }
  return n;
}

/**
 * Runs each phase against one traced service (no workers) and counts each phase's round trips;
 * a phase returns how many operations it made.
 */
export async function traceRequests<K extends string>(
  ctx: BenchContext,
  phases: Record<K, (serviceUrl: string) => Promise<number>>,
): Promise<Record<K, TraceResult>> {
  const tap = await startPgTap(ctx.db.url);
  const service = await startService(ctx, { databaseUrl: tap.url, execArgv: [] });
  try {
    const out = {} as Record<K, TraceResult>;
    for (const [name, run] of Object.entries(phases) as [K, (url: string) => Promise<number>][]) {
      tap.reset();
      const operations = await run(service.url);
      out[name] = summarise([...tap.trips], operations);
    }
    return out;
  } finally {
    await service.stop();
    await tap.close();
  }
}

/**
 * Starts a traced instance running `jobs`, waits until `done` says the seeded work is finished
 * (bounded), and counts the round trips per item. Idle polls while waiting are included.
 */
export async function traceWorkers(
  ctx: BenchContext,
  args: { jobs: string[]; items: number; config?: Partial<Config>; done: () => Promise<boolean> },
): Promise<TraceResult & { finished: boolean }> {
  const tap = await startPgTap(ctx.db.url);
  try {
    const service = await startService(ctx, {
      databaseUrl: tap.url,
      jobs: args.jobs,
      config: args.config,
      execArgv: [],
    });
    let finished: boolean;
    try {
      finished = await waitFor(args.done, Math.min(ctx.plan.workerCapS, 120));
    } finally {
      await service.stop();
    }
    return { ...summarise([...tap.trips], args.items), finished };
  } finally {
    await tap.close();
  }
}
