import type { Deps } from '#src/deps.ts';

/** Jobs whose work a committed state change may have made due right now. */
const FOLLOW_UPS = ['dispatch', 'refunds', 'webhooks'] as const;

/**
 * Wakes the follow-up jobs of this process after a change committed (a callback, an operator
 * action), so that the next step starts now instead of at the next poll. Only a wake-up: the
 * work itself is rows, and any instance's jobs would find it on their next pass anyway.
 */
export function wakeFollowUps(deps: Deps): void {
  for (const job of FOLLOW_UPS) deps.jobs?.kick(job);
}
