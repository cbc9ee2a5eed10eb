import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { harness } from '../harness.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** Whether a process is still there (a zombie waiting for its parent counts as gone). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The state follows the parenthesised command name.
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

/** The direct children of a process. */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((l) => Number(l.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

async function until(what: string, ok: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('npm start: a supervisor stops it by signalling the one PID it started', function () {
  // Start-up alone takes seconds; on a machine shared with other work, several times that.
  this.timeout(180_000);
  const started: ChildProcess[] = [];
  const pids: number[] = [];
  const dirs: string[] = [];

  afterEach(() => {
    // Whatever a failed test left behind, by the ids it started.
    for (const pid of pids.splice(0)) if (alive(pid)) process.kill(pid, 'SIGKILL');
    for (const child of started.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  // A terminal's Ctrl-C signals the whole foreground group: the service gets SIGINT from the
  // terminal and again from npm, which passes it on.
  const cases = [
    { signal: 'SIGTERM', title: `SIGTERM to npm's PID`, everyone: false },
    { signal: 'SIGINT', title: `SIGINT to npm's PID`, everyone: false },
    { signal: 'SIGINT', title: 'Ctrl-C in a terminal (SIGINT to npm and to the service)', everyone: true },
  ] as const;
  for (const { signal, title, everyone } of cases) {
    it(`${title} stops the service, logs "stopped" and exits 0`, async () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), 'payout-process-'));
      dirs.push(dataDir);
      const npm = spawn('npm', ['start'], {
        cwd: ROOT,
        env: {
          PATH: process.env.PATH ?? '',
          HOME: process.env.HOME ?? '',
          PORT: '0',
          DATA_DIR: dataDir,
          DATABASE_URL: harness().databaseUrl,
          PROVIDERS_URL: harness().sandboxUrl,
          // No jobs: they would claim the work of the database the other tests share.
          JOBS: 'none',
          LOG_LEVEL: 'info',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      started.push(npm);
      let out = '';
      npm.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
      });
      npm.stderr?.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
      });
      const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
      await until('the banner', () => out.includes('API reference') || npm.exitCode !== null, 120_000);
      expect(npm.exitCode, out).to.equal(null);

      // Every process npm started to run the service (the service itself, under whatever runs it).
      const tree: number[] = [];
      const walk = (pid: number) => {
        for (const child of childrenOf(pid)) {
          tree.push(child);
          walk(child);
        }
      };
      walk(npm.pid as number);
      pids.push(...tree);
      expect(tree, 'npm started the service').to.not.be.empty;

      const url = /API reference\s+(http:\/\/\S+)\/docs/.exec(out)?.[1];
      expect((await fetch(`${url}/health`)).status).to.equal(200);

      npm.kill(signal);
      if (everyone) for (const pid of tree) process.kill(pid, signal);
      const code = await Promise.race([
        exited,
        new Promise((_, reject) => setTimeout(() => reject(new Error(`npm still running: ${out}`)), 30_000)),
      ]);
      await until('every process of the service to exit', () => tree.every((pid) => !alive(pid)), 10_000);
      const lines = out
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .map((l) => JSON.parse(l) as { msg: string; signal?: string });
      expect(lines.at(-1), out).to.include({ msg: 'stopped', signal });
      expect(code, out).to.equal(0);
      await fetch(`${url}/health`).then(
        () => expect.fail('the service still answers'),
        () => undefined,
      );
    });
  }
});
