import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { REPO_ROOT } from '#src/docs/generate.ts';
import { harness } from '../harness.ts';
import { createScratchDatabase, type ScratchDatabase } from '../scratch-database.ts';

const run = promisify(execFile);

/** Every ```sh block of a Markdown file, in order, with the line it starts on. */
function shellBlocks(markdown: string): { line: number; code: string }[] {
  const blocks: { line: number; code: string }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i] !== '```sh') continue;
    const end = lines.indexOf('```', i + 1);
    blocks.push({ line: i + 1, code: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return blocks;
}

/**
 * Blocks that run as pasted but not here, each with the reason: the test is the one that starts
 * the service, and a test cannot run the suite it belongs to.
 */
const NOT_HERE: Record<string, string> = {
  'npm install && npm start': 'the test starts the service itself, as npm start does',
  'npm test': 'the suite itself',
  'npm run -s client:pack          # prints the paths of the tarballs it wrote':
    'builds the packages: test/packages/packages.test.ts runs it and installs them',
};

/**
 * Run before the blocks, as if typed first: `curl` fails on an HTTP error answer (showing the
 * body), unless the block asks for `-f` itself, and every command must succeed.
 */
const PRELUDE = `set -eo pipefail
curl() {
  case " $* " in
    *" -f "* | *" -sf "* | *" -fs "* | *" --fail "*) command curl "$@" ;;
    *) command curl --fail-with-body "$@" ;;
  esac
}
`;

/** `npm start` as a person runs it: service, sandbox and jobs, the demo tenant, on free ports. */
async function startService(dataDir: string, databaseUrl: string | undefined) {
  const child: ChildProcess = spawn(
    process.execPath,
    ['-r', path.join(REPO_ROOT, 'src/node-guard.cjs'), path.join(REPO_ROOT, 'src/main.ts')],
    {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        PORT: '0',
        SANDBOX_PORT: '0',
        DATA_DIR: dataDir,
        DEMO_TENANT: 'true',
        LOG_LEVEL: 'warn',
        // Not what the blocks see, only how soon the jobs and the sandbox act on their calls.
        WORKER_POLL_INTERVAL_MS: '250',
        SANDBOX_CALLBACK_DELAY_MS: '100',
        ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  const urls = await new Promise<{ service: string; sandbox: string }>((resolve, reject) => {
    const timer = setInterval(() => {
      const service = /Payout service\s+(\S+)/.exec(out)?.[1];
      const sandbox = /Sandbox\s+(http\S+)/.exec(out)?.[1];
      if (service && sandbox && out.includes('Try: ')) {
        clearInterval(timer);
        resolve({ service, sandbox });
      } else if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`npm start exited with ${child.exitCode}: ${out}`));
      }
    }, 50);
  }).catch(async (e) => {
    await stop();
    throw e;
  });
  return { ...urls, stop, output: () => out };
}

/**
 * Runs one document's shell blocks in one shell, in order (a block uses what an earlier one set),
 * in a folder where `./.data` is the started service's DATA_DIR, as in the repository after
 * `npm start`. Only the ports differ from the pasted text: the service runs on free ones.
 */
async function runBlocks(
  file: string,
  where: { cwd: string; service: string; sandbox: string },
): Promise<{ stdout: string; stderr: string }> {
  const blocks = shellBlocks(await readFile(path.join(REPO_ROOT, file), 'utf8'));
  const script = blocks
    .filter((b) => !(b.code in NOT_HERE))
    .map((b) => `# ${file}:${b.line}\n${b.code}`)
    .join('\n')
    .replace(/(?:localhost|127\.0\.0\.1):3000/g, new URL(where.service).host)
    .replace(/(?:localhost|127\.0\.0\.1):3100/g, new URL(where.sandbox).host);
  return run('bash', ['-c', PRELUDE + script], { cwd: where.cwd, timeout: 150_000 }).catch(
    (e: { stdout: string; stderr: string; code: number }) => {
      throw new Error(`${file}: the shell blocks failed (${e.code}):\n${e.stdout}\n${e.stderr}`);
    },
  );
}

describe('the shell blocks of the README and docs/sandbox.md run as pasted', function () {
  this.timeout(300_000);
  let folder: string;
  let scratch: ScratchDatabase | undefined;
  let service: Awaited<ReturnType<typeof startService>> | undefined;

  before(async () => {
    folder = await mkdtemp(path.join(os.tmpdir(), 'payout-readme-'));
    if (!harness().embedded) {
      const created = await createScratchDatabase(harness().databaseUrl);
      if (!('refused' in created)) scratch = created;
    }
    service = await startService(path.join(folder, '.data'), scratch?.url);
  });

  after(async () => {
    await service?.stop();
    await scratch?.drop();
    if (folder) await rm(folder, { recursive: true, force: true });
  });

  it('lists the blocks it leaves out, each of them present', async () => {
    const readme = shellBlocks(await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8')).map((b) => b.code);
    for (const code of Object.keys(NOT_HERE)) expect(readme).to.include(code);
  });

  it('README.md: the first request, a payout paid in USDT and one paid in NGN, both SUCCESSFUL', async () => {
    const { stdout } = await runBlocks('README.md', { cwd: folder, ...service! });
    expect(stdout).to.include('"provider_code":"058"');
    const finals = stdout.split('\n').filter((l) => l === 'SUCCESSFUL' || l === 'FAILED');
    expect(finals, stdout).to.deep.equal(['SUCCESSFUL', 'SUCCESSFUL']);
  });

  it('docs/sandbox.md', async () => {
    const { stdout } = await runBlocks('docs/sandbox.md', { cwd: folder, ...service! });
    expect(stdout).to.include('"tx_hash"');
  });
});
