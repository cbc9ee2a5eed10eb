/**
 * Summarises V8 CPU profiles (`.cpuprofile`, as `npm run bench -- --profile` writes them): self
 * time by package or source area, and the hottest functions. Usage:
 *   node bench/profile-summary.ts <file.cpuprofile> [more files]
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';

/** The project's root, as a profile's script URLs spell it. */
const ROOT = pathToFileURL(fileURLToPath(new URL('..', import.meta.url))).href;

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/**
 * A script's path in the project (`src/...`), for this checkout or another one's
 * (`bench/service-cpu.ts --against` profiles an instance of another checkout); '' outside it.
 */
function projectPath(url: string): string {
  if (url.includes('node_modules')) return '';
  if (url.startsWith(ROOT)) return url.slice(ROOT.length);
  return /^file:\/\/.*?\/((?:src|machines|bench)\/.*)$/.exec(url)?.[1] ?? '';
}

/** Which package (or area of this project) a script belongs to. */
export function areaOf(url: string): string {
  if (!url) return '(native / idle / gc)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm) return nm[1]!;
  if (url.startsWith('node:')) return url;
  const local = /^(src|machines|bench)\/([^/]+)/.exec(projectPath(url));
  if (local) return `${local[1]}/${local[2]}`;
  return url;
}

export function summarise(profile: Profile): {
  totalMs: number;
  areas: { area: string; ms: number; share: number }[];
  functions: { fn: string; ms: number }[];
  /** Each sample charged to the nearest function of this project on its stack (what caused it). */
  causes: { fn: string; ms: number; share: number }[];
} {
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parentOf.set(c, n.id);
  const causeOf = (id: number): string => {
    for (let at: number | undefined = id; at !== undefined; at = parentOf.get(at)) {
      const frame = byId.get(at)!.callFrame;
      if (/^(src|machines)\//.test(projectPath(frame.url))) {
        return `${frame.functionName || '(anonymous)'} ${areaOf(frame.url)}:${frame.lineNumber + 1}`;
      }
    }
    return '(outside project code)';
  };
  const causes = new Map<string, number>();
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0) / 1000);
  }
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  for (const [id, ms] of self) {
    const node = byId.get(id)!;
    const name = node.callFrame.functionName;
    if (name === '(idle)') continue;
    total += ms;
    const area = name === '(garbage collector)' ? '(gc)' : areaOf(node.callFrame.url);
    areas.set(area, (areas.get(area) ?? 0) + ms);
    const fn = `${name || '(anonymous)'} ${areaOf(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + ms);
    const cause = name === '(garbage collector)' ? '(gc)' : causeOf(id);
    causes.set(cause, (causes.get(cause) ?? 0) + ms);
  }
  return {
    totalMs: Math.round(total),
    areas: [...areas]
      .map(([area, ms]) => ({ area, ms: Math.round(ms), share: Math.round((ms / total) * 1000) / 10 }))
      .sort((a, b) => b.ms - a.ms),
    functions: [...functions]
      .map(([fn, ms]) => ({ fn, ms: Math.round(ms) }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 25),
    causes: [...causes]
      .map(([fn, ms]) => ({ fn, ms: Math.round(ms), share: Math.round((ms / total) * 1000) / 10 }))
      .sort((a, b) => b.ms - a.ms)
      .slice(0, 25),
  };
}

if (import.meta.main) {
  for (const file of process.argv.slice(2)) {
    const summary = summarise(JSON.parse(readFileSync(file, 'utf8')) as Profile);
    process.stdout.write(`\n${file}: ${summary.totalMs} ms on CPU (idle excluded)\n`);
    for (const a of summary.areas.slice(0, 20)) {
      process.stdout.write(`  ${String(a.share).padStart(5)} %  ${String(a.ms).padStart(7)} ms  ${a.area}\n`);
    }
    process.stdout.write('  charged to the nearest project function on the stack:\n');
    for (const c of summary.causes) {
      process.stdout.write(`    ${String(c.share).padStart(5)} %  ${String(c.ms).padStart(7)} ms  ${c.fn}\n`);
    }
    process.stdout.write('  hottest functions (self time):\n');
    for (const f of summary.functions) process.stdout.write(`    ${String(f.ms).padStart(7)} ms  ${f.fn}\n`);
  }
}
