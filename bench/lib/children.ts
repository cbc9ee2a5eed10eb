import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
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
  extra: { execArgv?: string[]; readyTimeoutMs?: number } = {},
): Promise<Child> {
  const proc: ChildProcess = spawn(process.execPath, [...(extra.execArgv ?? []), childFile(name)], {
    env: { ...process.env, [OPTIONS_VARIABLE]: JSON.stringify(options) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
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
