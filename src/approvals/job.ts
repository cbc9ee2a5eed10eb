import { announceOverdue } from '#src/compliance/overdue.ts';
import { overdueHours } from '#src/compliance/queues.ts';
import type { Deps } from '#src/deps.ts';
import { expireDueApprovals } from './service.ts';

/** How often the `approvals` job looks for proposals past their time, when nothing wakes it. */
export const APPROVALS_INTERVAL_MS = 60_000;

/**
 * The `approvals` job: expires PENDING proposals older than APPROVAL_TTL_HOURS, a batch at a time,
 * then announces the exception items that became overdue since its last pass (once each).
 */
export async function runApprovalsOnce(deps: Deps): Promise<{ expired: number; overdue: number }> {
  let expired = 0;
  for (;;) {
    const batch = await expireDueApprovals(deps);
    expired += batch;
    if (batch < 100) break;
  }
  const overdue = await announceOverdue({
    sql: deps.sql,
    log: deps.log,
    now: deps.clock.now(),
    hours: overdueHours(deps.config),
  });
  return { expired, overdue: overdue.length };
}
