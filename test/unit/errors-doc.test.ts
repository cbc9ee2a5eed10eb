import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { ERROR_CATALOGUE } from '#src/http/errors.ts';

describe('docs/errors.md', () => {
  it('lists every code of the catalogue with its status, and nothing else', () => {
    const doc = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
    const rows = [...doc.matchAll(/^\| (\d{3}) \| `([A-Z_]+)` \|/gm)].map((m) => [m[2], Number(m[1])]);
    const expected = Object.entries(ERROR_CATALOGUE).map(([code, e]) => [code, e.status]);
    expect(Object.fromEntries(rows)).to.deep.equal(Object.fromEntries(expected));
  });
});
