import { startHarness, stopHarness } from './harness.ts';
import { isolationHooks } from './isolation.ts';

/** Mocha root hooks: what one test or file must not leave to the next (test/isolation.ts). */
export const mochaHooks = isolationHooks;

/** Mocha global fixtures: one service, sandbox and database for the whole run. */
export async function mochaGlobalSetup(): Promise<void> {
  const h = await startHarness();
  console.log(`  test harness: service ${h.url}, sandbox ${h.sandboxUrl}, ${h.database}`);
}

export async function mochaGlobalTeardown(): Promise<void> {
  await stopHarness();
}
