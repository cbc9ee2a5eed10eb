import type { Deps } from '#src/deps.ts';
import { dispatchDue, queryDue } from './service.ts';

/**
 * One run of the dispatch job: submit every due attempt (new payouts, retries after a retryable
 * failure, resubmits of attempts whose outcome is unknown), then query the processor for attempts
 * in flight longer than the grace period, a batch of tasks at a time.
 */
export async function runDispatchOnce(deps: Deps): Promise<{ dispatched: number; queried: number }> {
  const dispatched = await dispatchDue(deps);
  const queried = await queryDue(deps);
  return { dispatched, queried };
}
