import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { createLogger, turnDestination, written } from '#src/lib/log.ts';

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

describe('turnDestination: the log lines of one event-loop turn, written together', () => {
  let dir: string;
  let file: string;
  let fd: number;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'log-turn-'));
    file = path.join(dir, 'out.log');
    fd = openSync(file, 'a');
  });
  afterEach(() => {
    closeSync(fd);
    rmSync(dir, { recursive: true, force: true });
  });
  const lines = () =>
    readFileSync(file, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg: string; i?: number });

  it('holds the lines of a turn and writes them, in order, once the turn is done', async () => {
    const log = createLogger({ level: 'info', destination: turnDestination(fd) });
    for (let i = 0; i < 3; i++) log.info({ i }, 'line');
    expect(readFileSync(file, 'utf8')).to.equal('');
    await nextTurn();
    expect(lines().map((l) => l.i)).to.deep.equal([0, 1, 2]);
    log.info({ i: 3 }, 'line');
    await nextTurn();
    expect(lines().map((l) => l.i)).to.deep.equal([0, 1, 2, 3]);
  });

  it('writes what it holds when asked (written, pino’s flush)', async () => {
    const log = createLogger({ level: 'info', destination: turnDestination(fd) });
    log.info('by written');
    await written(log);
    expect(lines().map((l) => l.msg)).to.deep.equal(['by written']);
    log.info('by flush');
    log.flush();
    expect(lines().map((l) => l.msg)).to.deep.equal(['by written', 'by flush']);
  });

  it('writes the lines still held when the process exits', () => {
    const log = fileURLToPath(new URL('../../src/lib/log.ts', import.meta.url));
    const child = spawnSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { createLogger } from ${JSON.stringify(log)};
         const log = createLogger({ level: 'info' });
         log.info('first'); log.info('last'); process.exit(3);`,
      ],
      { encoding: 'utf8' },
    );
    expect(child.status).to.equal(3);
    const msgs = child.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(msgs).to.deep.equal(['first', 'last']);
  });
});
