import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';

/**
 * One line of the results table: a measured figure, and where the issue sets a target, the
 * figure it is compared with (measured in the same run), the ratio and whether it is met.
 */
export interface ResultRow {
  scenario: string;
  metric: string;
  value: number;
  unit: string;
  /** The comparison figure of the same run (a baseline, or the same metric without load). */
  baseline?: number;
  ratio?: number;
  /** The target as the issue states it, e.g. `≥ 0.9` (of the ratio) or `≤ 100 ms`. */
  target?: string;
  pass?: boolean;
}

export class Results {
  readonly rows: ResultRow[] = [];
  readonly checks: { name: string; ok: boolean; detail: string }[] = [];
  readonly details: Record<string, unknown> = {};

  add(row: ResultRow): ResultRow {
    this.rows.push(row);
    return row;
  }

  /** A figure compared with another of the same run: `ratio` = value / baseline. */
  ratio(
    row: Omit<ResultRow, 'ratio' | 'pass'> & { baseline: number },
    target?: { min?: number; max?: number },
  ): ResultRow {
    const ratio = round(row.value / row.baseline, 2);
    const pass =
      target === undefined
        ? undefined
        : (target.min === undefined || ratio >= target.min) &&
          (target.max === undefined || ratio <= target.max);
    return this.add({ ...row, ratio, pass });
  }

  /** A correctness check (double matches, schedule, plan shape); a failed check fails the run. */
  check(name: string, ok: boolean, detail: string): void {
    this.checks.push({ name, ok, detail });
  }

  table(): string {
    const header = ['scenario', 'metric', 'value', 'baseline', 'ratio', 'target', 'met'];
    const lines = this.rows.map((r) => [
      r.scenario,
      r.metric,
      `${fmt(r.value)} ${r.unit}`,
      r.baseline === undefined ? '' : `${fmt(r.baseline)} ${r.unit}`,
      r.ratio === undefined ? '' : r.ratio.toFixed(2),
      r.target ?? '',
      r.pass === undefined ? '' : r.pass ? 'yes' : 'NO',
    ]);
    const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i]!.length)));
    const row = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
    const checks = this.checks.map((c) => `- ${c.ok ? 'ok' : 'FAILED'}: ${c.name} (${c.detail})`);
    return [
      row(header),
      `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
      ...lines.map(row),
      '',
      ...checks,
    ].join('\n');
  }
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
