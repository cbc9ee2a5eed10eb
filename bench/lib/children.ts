import { type ChildProcess, spawn } from 'node:child_process';
import { closeSync, createReadStream, openSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { OPTIONS_VARIABLE, type ReadyMessage } from './ipc.ts';

/**
 * Child processes of the benchmark (service instances, the sandbox, the Koa + pg baseline):
 * started with the same Node as the benchmark, stopped by their own pid, and all stopped when the
 * benchmark ends or is interrupted.
 */

export interface Child {
  pid: number;
  url: string;
  /** Where its stdout goes, when not to the benchmark's own (a service instance's log). */
  logFile?: string;
  /** Resident memory now and the peak since the process started, in MiB (from /proc). */
  memory(): { rssMb: number; peakMb: number };
  stop(): Promise<void>;
}

const running = new Set<Child>();

export function childFile(name: string): string {
  return fileURLToPath(new URL(`../children/${name}.ts`, import.meta.url));
}

/** Starts `bench/children/<name>.ts` with `options` and waits for it to say where it listens. */
export async function startChild(
  name: string,
  options: unknown,
  extra: { execArgv?: string[]; readyTimeoutMs?: number; stdoutFile?: string; file?: string } = {},
): Promise<Child> {
  // A log file is appended to as a process manager would take the stdout of a service.
  const stdout = extra.stdoutFile ? openSync(extra.stdoutFile, 'a') : 'inherit';
  const proc: ChildProcess = spawn(
    process.execPath,
    [...(extra.execArgv ?? []), extra.file ?? childFile(name)],
    {
      // As deployed: NODE_ENV=production (the service then leaves its hot paths' exact output to
      // the tests, see settleOutputChecks in src/http/trpc.ts).
      env: { ...process.env, NODE_ENV: 'production', [OPTIONS_VARIABLE]: JSON.stringify(options) },
      stdio: ['ignore', stdout, 'inherit', 'ipc'],
    },
  );
  if (typeof stdout === 'number') closeSync(stdout);
  const pid = proc.pid;
  if (pid === undefined) throw new Error(`could not start ${name}`);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${name} did not start within ${extra.readyTimeoutMs ?? 60_000} ms`));
    }, extra.readyTimeoutMs ?? 60_000);
    proc.once('message', (message: ReadyMessage) => {
      clearTimeout(timer);
      resolve(message.url);
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${name} exited with ${code} before it was ready`));
    });
  });
  const child: Child = {
    pid,
    url,
    ...(extra.stdoutFile ? { logFile: extra.stdoutFile } : {}),
    memory: () => memoryOf(pid),
    async stop() {
      running.delete(child);
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      if (proc.connected) proc.send('stop');
      else proc.kill('SIGTERM');
      const killer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(killer);
    },
  };
  running.add(child);
  return child;
}

/** Stops every child still running (the end of a run, or an interrupted one). */
export async function stopAllChildren(): Promise<void> {
  await Promise.all([...running].map((c) => c.stop()));
}

function memoryOf(pid: number): { rssMb: number; peakMb: number } {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rssMb: Math.round(kb('VmRSS') / 1024), peakMb: Math.round(kb('VmHWM') / 1024) };
  } catch {
    return { rssMb: 0, peakMb: 0 };
  }
}

/** Lines of `file` that contain `needle` (a log of a few hundred MB is read as a stream). */
export async function countLines(file: string, needle: string): Promise<number> {
  let count = 0;
  let tail = '';
  for await (const chunk of createReadStream(file, { encoding: 'utf8' })) {
    const lines = (tail + (chunk as string)).split('\n');
    tail = lines.pop()!;
    for (const line of lines) if (line.includes(needle)) count++;
  }
  return tail.includes(needle) ? count + 1 : count;
}
