import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { CRASH_HOOK, CRASH_POINTS, crashPoint } from '#src/lib/crash-points.ts';

const SRC = new URL('../../src/', import.meta.url).pathname;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? sources(path.join(dir, e.name))
      : /\.(ts|cjs|js)$/.test(e.name)
        ? [path.join(dir, e.name)]
        : [],
  );
}

/**
 * The crash points of the kill -9 test (docs/testing.md, "Crash points") can only be armed by the
 * test's preloaded hook: nothing the service runs installs one, and nothing it reads arms one.
 */
describe('crash points', () => {
  it('do nothing without the hook a test installs', () => {
    expect((globalThis as Record<symbol, unknown>)[CRASH_HOOK]).to.equal(undefined);
    for (const point of CRASH_POINTS) crashPoint(point, ['01a22340-4054-75be-818b-7745525e844a']);
  });

  it('call the hook with the point and the payouts when one is installed', () => {
    const calls: unknown[] = [];
    (globalThis as Record<symbol, unknown>)[CRASH_HOOK] = (...args: unknown[]) => calls.push(args);
    try {
      crashPoint('dispatch.submitted', ['p1', 'p2']);
    } finally {
      delete (globalThis as Record<symbol, unknown>)[CRASH_HOOK];
    }
    expect(calls).to.deep.equal([['dispatch.submitted', ['p1', 'p2']]]);
  });

  it('are armed by no source of the service: only test/crash-hook.ts installs the hook', () => {
    // The points' own module names the hook's file in its documentation, and only there.
    const own = path.join(SRC, 'lib/crash-points.ts');
    const arming = sources(SRC).filter((file) => {
      const text = readFileSync(file, 'utf8');
      const installs = /\[CRASH_HOOK\]\s*=[^=]/.test(text);
      return installs || (file !== own && /CRASH_AT|crash-hook/.test(text));
    });
    expect(arming.map((f) => path.relative(SRC, f))).to.deep.equal([]);
  });
});
