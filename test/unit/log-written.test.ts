import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { pino } from 'pino';
import { createLogger, written } from '#src/lib/log.ts';

describe('written(log): the lines logged so far have reached the stream', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'log-written-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('waits for an asynchronous destination to write every line, in order', async () => {
    const file = path.join(dir, 'out.log');
    const destination = pino.destination({ dest: file, sync: false, mkdir: true });
    await new Promise((resolve) => destination.once('ready', resolve));
    const log = createLogger({ level: 'info', destination });
    for (let i = 0; i < 200; i++) log.info({ i }, 'line');
    log.info('stopped');
    await written(log);
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { msg: string });
    expect(lines).to.have.length(201);
    expect(lines.at(-1)?.msg).to.equal('stopped');
    destination.end();
  });

  it('returns at once when nothing waits to be written (not after its bound)', async function () {
    this.timeout(5000);
    await written(createLogger({ level: 'silent' }), 600_000);
  });
});
