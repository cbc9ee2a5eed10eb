import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

/**
 * One line of the results table: a measured figure, and where the issue sets a target, the
 * figure it is compared with (measured in the same run), the ratio and whether it is met.
 * A figure measured in several rounds is the median of the rounds, and its ratio the median of
 * the per-round ratios (each round's service against the baseline of the same round), with the
 * range of those ratios.
 */
export interface ResultRow {
  scenario: string;
  metric: string;
  value: number;
  unit: string;
  /** The comparison figure of the same run (a baseline, or the same metric without load). */
  baseline?: number;
  ratio?: number;
  /** Lowest and highest per-round ratio (or figure, for a row without a baseline) over `rounds`. */
  range?: [number, number];
  /** Rounds the figure was measured in (absent: once). */
  rounds?: number;
  /** Which background jobs the measured service instance ran ({@link JOBS}). */
  jobs?: string;
  /** The target as the issue states it, e.g. `≥ 0.9` (of the ratio) or `≤ 100 ms`. */
  target?: string;
  pass?: boolean;
}

/** The job setting of a measured instance, as the tables state it. */
export const JOBS = {
  /** An API instance: `JOBS=none`, the HTTP service alone (the deployment docs/scaling.md recommends). */
  none: 'none (API instance)',
  instructions: 'instructions',
  settlement: 'settlement (2 instances)',
  dispatch: 'dispatch',
  webhooks: 'webhooks',
} as const;

type Target = { min?: number; max?: number };

function judge(value: number, target: Target | undefined): boolean | undefined {
  return target === undefined
    ? undefined
    : (target.min === undefined || value >= target.min) && (target.max === undefined || value <= target.max);
}

export class Results {
  readonly rows: ResultRow[] = [];
  readonly checks: { name: string; ok: boolean; detail: string }[] = [];
  readonly details: Record<string, unknown> = {};

  add(row: ResultRow): ResultRow {
    this.rows.push(row);
    return row;
  }

  /** A figure compared with another of the same run, measured once: `ratio` = value / baseline. */
  ratio(row: Omit<ResultRow, 'ratio' | 'pass'> & { baseline: number }, target?: Target): ResultRow {
    const ratio = round(row.value / row.baseline, 2);
    return this.add({ ...row, ratio, pass: judge(ratio, target) });
  }

  /**
   * A figure compared with a baseline in every round: value and baseline are the medians of the
   * rounds, the ratio is the median of the per-round ratios (what the target judges), the range
   * their lowest and highest.
   */
  perRound(
    row: Omit<ResultRow, 'value' | 'baseline' | 'ratio' | 'range' | 'rounds' | 'pass'>,
    pairs: readonly { value: number; baseline: number }[],
    target?: Target,
  ): ResultRow {
    const ratios = pairs.map((p) => p.value / p.baseline);
    const ratio = round(median(ratios), 2);
    return this.add({
      ...row,
      value: round(median(pairs.map((p) => p.value)), 2),
      baseline: round(median(pairs.map((p) => p.baseline)), 2),
      ratio,
      range: [round(Math.min(...ratios), 2), round(Math.max(...ratios), 2)],
      rounds: pairs.length,
      pass: judge(ratio, target),
    });
  }

  /** A figure measured in every round, without a baseline: the median, with the range of the rounds. */
  acrossRounds(
    row: Omit<ResultRow, 'value' | 'range' | 'rounds' | 'pass'>,
    values: readonly number[],
    target?: Target,
  ): ResultRow {
    const value = round(median(values), 2);
    return this.add({
      ...row,
      value,
      range: [round(Math.min(...values), 2), round(Math.max(...values), 2)],
      rounds: values.length,
      pass: judge(value, target),
    });
  }

  /** A correctness check (double matches, schedule, plan shape); a failed check fails the run. */
  check(name: string, ok: boolean, detail: string): void {
    this.checks.push({ name, ok, detail });
  }

  /** Every row, then the correctness checks. */
  table(): string {
    const header = [
      'scenario',
      'metric',
      'jobs',
      'value',
      'baseline',
      'ratio',
      'range (rounds)',
      'target',
      'met',
    ];
    const lines = this.rows.map((r) => [
      r.scenario,
      r.metric,
      r.jobs ?? '',
      `${fmt(r.value)} ${r.unit}`.trim(),
      r.baseline === undefined ? '' : `${fmt(r.baseline)} ${r.unit}`.trim(),
      r.ratio === undefined ? '' : r.ratio.toFixed(2),
      rangeOf(r),
      r.target ?? '',
      r.pass === undefined ? '' : r.pass ? 'yes' : 'NO',
    ]);
    const checks = this.checks.map((c) => `- ${c.ok ? 'ok' : 'FAILED'}: ${c.name} (${c.detail})`);
    return [markdown(header, lines), '', ...checks].join('\n');
  }

  /**
   * The rows with a target, in the columns of the table in docs/performance.md ("Against the
   * targets"): what a run's figures replace there.
   */
  headline(): string {
    const header = [
      'Scenario',
      'Target',
      'Jobs',
      'Service',
      'Baseline',
      'Ratio (median of rounds)',
      'Range',
      'Rounds',
      'Met',
    ];
    const lines = this.rows
      .filter((r) => r.target !== undefined)
      .map((r) => [
        `\`${r.scenario}\` ${r.metric}`,
        r.target ?? '',
        r.jobs ?? '',
        `${fmt(r.value)} ${r.unit}`.trim(),
        r.baseline === undefined ? '' : `${fmt(r.baseline)} ${r.unit}`.trim(),
        r.ratio === undefined ? '' : r.ratio.toFixed(2),
        r.range === undefined ? '' : `${fmtRange(r)}`,
        String(r.rounds ?? 1),
        r.pass === undefined ? '' : r.pass ? 'yes' : 'no',
      ]);
    return markdown(header, lines);
  }
}

function markdown(header: string[], lines: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
  const row = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [row(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(row)].join('\n');
}

function fmtRange(r: ResultRow): string {
  if (!r.range) return '';
  const [lo, hi] = r.range;
  return r.ratio === undefined
    ? `${fmt(lo)}–${fmt(hi)} ${r.unit}`.trim()
    : `${lo.toFixed(2)}–${hi.toFixed(2)}`;
}

function rangeOf(r: ResultRow): string {
  return r.range ? `${fmtRange(r)} (${r.rounds})` : r.rounds ? `(${r.rounds})` : '';
}

/**
 * A worker target as the table shows it: the quick run's scaled-down data (a thousand rows, a few
 * seconds) measures start-up more than throughput, so there the target is shown but not judged.
 */
export function judged(plan: { quick: boolean }, target: string): string {
  return plan.quick ? `${target} (full run)` : target;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** The item whose `key` is the median (the lower middle of an even count): a round to report whole. */
export function middleBy<T>(items: readonly T[], key: (item: T) => number): T {
  const sorted = [...items].sort((a, b) => key(a) - key(b));
  return sorted[Math.floor((sorted.length - 1) / 2)]!;
}

export function round(n: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return String(round(n, 2));
}

/** The machine the run measured, for the record. */
export function machine(): Record<string, unknown> {
  const cpus = os.cpus();
  return {
    cpus: cpus.length,
    cpuModel: cpus[0]?.model ?? 'unknown',
    memoryGb: round(os.totalmem() / 2 ** 30, 1),
    os: `${os.type()} ${os.release()}`,
    node: process.version,
  };
}

/**
 * Writes `bench/results/<date>.json` (`<date>.quick.json` for a quick run); a later run the same
 * day replaces it, so the directory keeps the latest figures of each day.
 */
export function writeResults(payload: Record<string, unknown>, quick: boolean): string {
  const dir = fileURLToPath(new URL('../results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const date = new Date().toISOString().slice(0, 10);
  const file = `${dir}${date}${quick ? '.quick' : ''}.json`;
  writeFileSync(file, `${JSON.stringify(payload, null, 2)}\n`);
  return file;
}
