/**
 * Crash points: the places in matching, dispatch and refunds where the kill -9 test
 * (`test/ledger/crash.test.ts`) kills the service, so that each kill lands in the window it is
 * meant to prove safe (the processor has taken a transfer the service has not recorded yet; a
 * transaction has written everything but not committed) instead of wherever random timing puts it.
 *
 * Nothing the service reads arms them, no environment variable and no setting: a point calls the
 * hook only a test module preloaded into the process (`node --import test/crash-hook.ts`) installs,
 * under {@link CRASH_HOOK}. Without it, each point is one property read that finds nothing.
 * `docs/testing.md` describes the points and the hook.
 */

export const CRASH_POINTS = [
  /** Matching has written an inflow's attribution and its ledger entries; not committed. */
  'matching.before-commit',
  /** Matching committed: the payout is PAYMENT_RECEIVED with its DISPATCH task; nothing dispatched. */
  'matching.committed',
  /** A dispatch attempt is committed PENDING; the processor has not heard of it. */
  'dispatch.attempt-committed',
  /** The processor answered the attempt (it has the transfer); the answer is not recorded. */
  'dispatch.submitted',
  /** A processor verdict (answer, callback or query) is written with its ledger entries; not committed. */
  'dispatch.before-commit',
  /** The rail answered a refund's send (it has the transfer); the answer is not recorded. */
  'refund.sent',
  /** A refund's rail answer is written with its ledger entries; not committed. */
  'refund.before-commit',
] as const;

export type CrashPoint = (typeof CRASH_POINTS)[number];

/** Where a test's preloaded module puts its hook: `(point, payoutIds) => void`. */
export const CRASH_HOOK = Symbol.for('payout-service.crash-hook');

type Hook = (point: CrashPoint, payoutIds: readonly string[]) => void;

/**
 * Marks a crash point reached for the given payouts. Returns at once unless a test installed a
 * hook (which may then kill the process here).
 */
export function crashPoint(point: CrashPoint, payoutIds: readonly string[]): void {
  const hook = (globalThis as { [CRASH_HOOK]?: Hook })[CRASH_HOOK];
  if (hook) hook(point, payoutIds);
}
