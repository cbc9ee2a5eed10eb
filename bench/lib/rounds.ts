import type { BenchContext } from './context.ts';

/**
 * Rounds of every comparison: three in a full run, one in a quick one (a smoke run whose ratios
 * are indicative only, so a second round would buy CI minutes and no judgement).
 */
export function roundsOf(plan: { quick: boolean }): number {
  return plan.quick ? 1 : 3;
}

/**
 * Rounds of a worker scenario: three in a full run, one in a quick one (whose thousand rows
 * measure start-up more than throughput, so its worker targets are shown but not judged).
 */
export function workerRoundsOf(plan: { quick: boolean }): number {
  return plan.quick ? 1 : 3;
}

type Runs = Record<string, (round: number) => Promise<unknown>>;

/**
 * Runs every contestant (the service and each of its baselines) once per round, in an order that
 * rotates by one each round (round-robin: round 0 starts with the first, round 1 with the second,
 * …): drift on the machine during the scenario (other work, CPU steal, tables and caches growing
 * warm) falls on every side alike instead of on whichever always runs last, and each round gives
 * one ratio per baseline, of figures measured minutes apart at most.
 */
export async function roundRobin<R extends Runs>(
  ctx: BenchContext,
  label: string,
  rounds: number,
  runs: R,
): Promise<{ [K in keyof R]: Awaited<ReturnType<R[K]>>[] }> {
  const names = Object.keys(runs) as (keyof R & string)[];
  const out = Object.fromEntries(names.map((n) => [n, []])) as unknown as {
    [K in keyof R]: Awaited<ReturnType<R[K]>>[];
  };
  for (let round = 0; round < rounds; round++) {
    const order = names.map((_, i) => names[(i + round) % names.length]!);
    for (const name of order) {
      ctx.log(`${label}: round ${round + 1} of ${rounds}, ${name}`);
      out[name].push((await runs[name]!(round)) as Awaited<ReturnType<R[typeof name]>>);
    }
  }
  return out;
}

/** Each round's figure of `a` against the same round's figure of `b`. */
export function pairs<T>(
  a: readonly T[],
  b: readonly T[],
  figure: (item: T) => number,
): { value: number; baseline: number }[] {
  return a.map((item, i) => ({ value: figure(item), baseline: figure(b[i]!) }));
}
