import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { configSchema } from '#src/config.ts';

describe('README configuration table', () => {
  it('documents every environment variable the service reads', () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const missing = Object.keys(configSchema.shape).filter((name) => !readme.includes(`\`${name}\``));
    expect(missing, 'variables missing from the README').to.deep.equal([]);
  });
});
