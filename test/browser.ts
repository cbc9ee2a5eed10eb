import { existsSync } from 'node:fs';
import type { Context } from 'mocha';
import { skipBecause } from './skip.ts';

/** The Chromium the browser tests drive (Debian's package; `.ci/run` installs it). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Flags for a headless Chromium in a container, with nothing of its own on the network. */
export const CHROMIUM_FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/**
 * For a suite's `before`: without Chromium the suite fails when CI is set (CI must run it), and is
 * skipped on a developer's machine, saying why.
 */
export function requireChromium(suite: Context, what: string): void {
  if (existsSync(CHROMIUM)) return;
  const why = `Chromium not found at ${CHROMIUM} (install it: apt-get install -y chromium)`;
  if (process.env.CI) throw new Error(`${why}; CI must run ${what}`);
  skipBecause(suite, `${what}: ${why}`);
}
