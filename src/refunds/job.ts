import type { Deps } from '#src/deps.ts';
import { drainTasks } from '#src/jobs/runner.ts';
import { dispatchRefund, raiseRefundTask } from './service.ts';

/**
 * One run of the refunds job: raise the refunds of payouts that failed holding money, then send
 * the due refunds and check the ones the rail reported as pending.
 */
export async function runRefundsOnce(deps: Deps): Promise<{ raised: number; dispatched: number }> {
  const raised = await drainTasks(deps, 'RAISE_REFUND', (task) => raiseRefundTask(deps, task));
  const dispatched = await drainTasks(deps, 'DISPATCH_REFUND', (task) => dispatchRefund(deps, task));
  return { raised, dispatched };
}
