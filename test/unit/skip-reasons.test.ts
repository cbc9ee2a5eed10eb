import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';

/** Test files, relative to the repository's root. */
function testFiles(): string[] {
  return ['test', 'machines']
    .flatMap((dir) => readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => path.join(dir, f)))
    .filter((f) => f.endsWith('.ts'));
}

describe('skipped tests', () => {
  it('skip only through test/skip.ts, which names the reason the reporter prints', () => {
    const bare = testFiles()
      .filter(
        (file) =>
          file !== path.join('test', 'skip.ts') && file !== path.join('test', 'unit', 'skip-reasons.test.ts'),
      )
      .flatMap((file) =>
        readFileSync(file, 'utf8')
          .split('\n')
          .map((line, i) => ({ line, at: `${file}:${i + 1}` }))
          .filter(({ line }) => /\.skip\(|\bxit\(|\bxdescribe\(/.test(line)),
      )
      .map(({ at, line }) => `${at}: ${line.trim()}`);
    expect(bare, 'skip with skipBecause or needsPostgresServer (test/skip.ts)').to.deep.equal([]);
  });
});
