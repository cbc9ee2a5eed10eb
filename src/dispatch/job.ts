import type { Deps } from '#src/deps.ts';
import { drainTasks } from '#src/jobs/runner.ts';
import { dispatchPayout, queryOutflow } from './service.ts';

/**
 * One run of the dispatch job: submit every due attempt (new payouts, retries after a retryable
 * failure, resubmits of attempts whose outcome is unknown), then query the processor for attempts
 * in flight longer than the grace period.
 */
export async function runDispatchOnce(deps: Deps): Promise<{ dispatched: number; queried: number }> {
  const dispatched = await drainTasks(deps, 'DISPATCH', (task) => dispatchPayout(deps, task));
  const queried = await drainTasks(deps, 'QUERY_OUTFLOW', (task) => queryOutflow(deps, task));
  return { dispatched, queried };
}
