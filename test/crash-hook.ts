/**
 * Preloaded into a service process by the kill -9 test (`node --import ./test/crash-hook.ts`;
 * preloads run in every worker thread too): installs the hook of the crash points
 * (`src/lib/crash-points.ts`). The file named by `CRASH_AT_FILE` lists the kills to land, one
 * `point payout_id` a line; it is read at every point reached, so that the test can arm kills for
 * payouts it creates after the process started. The first point reached for a payout listed with
 * it writes one line `crash point <point> <payout_id>` to stderr and SIGKILLs the whole process,
 * as kill -9 would, there and then. Every point reached, armed or not, is appended first to the
 * file `<CRASH_AT_FILE>.reached` (`point payout_id` a line), so that the test can tell that the code
 * still calls each point.
 */
import { appendFileSync, readFileSync, writeSync } from 'node:fs';
import { CRASH_HOOK, CRASH_POINTS, type CrashPoint } from '#src/lib/crash-points.ts';

const file = process.env.CRASH_AT_FILE;
if (!file) throw new Error('test/crash-hook.ts: CRASH_AT_FILE names no file of kills');

function armed(): Set<string> {
  const kills = readFileSync(file!, 'utf8')
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean);
  for (const kill of kills) {
    const point = kill.split(' ')[0]!;
    if (!(CRASH_POINTS as readonly string[]).includes(point))
      throw new Error(`${file}: ${point} is not a crash point (${CRASH_POINTS.join(', ')})`);
  }
  return new Set(kills);
}

(globalThis as { [CRASH_HOOK]?: unknown })[CRASH_HOOK] = (
  point: CrashPoint,
  payoutIds: readonly string[],
) => {
  if (payoutIds.length === 0) return;
  appendFileSync(`${file}.reached`, payoutIds.map((id) => `${point} ${id}\n`).join(''));
  const kills = armed();
  const payout = payoutIds.find((id) => kills.has(`${point} ${id}`));
  if (payout === undefined) return;
  writeSync(2, `crash point ${point} ${payout}\n`);
  process.kill(process.pid, 'SIGKILL');
};
