import type { Config } from '#src/config.ts';
import { harness } from './harness.ts';

/**
 * What one test, or one test file, must not leave to the others. The whole run shares one service,
 * one database and one clock (test/harness.ts); these keep a failure where it happened:
 *
 * - settings changed with `patchConfig` (or in place) are put back after every test, pass or fail;
 * - each file ends with the clock no earlier than the latest time the run has shown, so that a file
 *   that moved it back and failed before moving it forward leaves no rows in the next file's future;
 * - the tenants a file made are its own (`createMerchant` records them): checks that look at the
 *   whole database, such as `settle()`, answer for those only.
 *
 * `test/setup.ts` registers the hooks (`isolationHooks`).
 */

/** The service's settings as the run started them. */
let pristine: Config | undefined;

/** Changes settings of the running service for the current test only: they are restored after it. */
export function patchConfig(changes: Partial<Config>): void {
  const config = harness().service.deps.config;
  pristine ??= { ...config };
  Object.assign(config, changes);
}

/** Puts back every setting that differs from the run's start (patched, or assigned in place). */
function restoreConfig(): void {
  if (!pristine) return;
  const config = harness().service.deps.config as Record<string, unknown>;
  const start = pristine as Record<string, unknown>;
  for (const key of new Set([...Object.keys(config), ...Object.keys(start)])) {
    if (config[key] === start[key]) continue;
    if (key in start) config[key] = start[key];
    else delete config[key];
  }
}

/** Tenants made by the file that is running. */
const fileTenants = new Set<string>();

/** Records a tenant the running file made (`createMerchant` does). */
export function ownTenant(tenantId: string): void {
  fileTenants.add(tenantId);
}

/** Whether the running file made this tenant. */
export function isOwnTenant(tenantId: string): boolean {
  return fileTenants.has(tenantId);
}

/** Ends a file (called after its last test; tests of the isolation call it themselves): its settings put back, the clock at the latest time shown, its tenants forgotten. */
export function endFile(): void {
  restoreConfig();
  harness().clock.catchUp();
  fileTenants.clear();
}

/** A suite as mocha hands it to hooks (the parts used here). */
interface SuiteLike {
  suites: SuiteLike[];
  afterAll(title: string, fn: () => void): void;
}

/**
 * Mocha's root hooks (`mochaHooks`): before the run, every file's top-level suite gets `endFile`
 * as its last `after` hook; after every test, the settings are put back.
 */
export const isolationHooks = {
  beforeAll(this: { test?: { parent?: SuiteLike } }): void {
    const root = this.test?.parent;
    pristine ??= { ...harness().service.deps.config };
    for (const suite of root?.suites ?? []) suite.afterAll('leaves a clean start to the next file', endFile);
  },
  afterEach(): void {
    restoreConfig();
  },
};
