import { spawnSync } from 'node:child_process';
import { expect } from 'chai';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

describe('npm start with a setting it cannot use', () => {
  it('stops before anything starts, naming PROVIDERS_URL and what is wrong with it', () => {
    const run = spawnSync(process.execPath, [MAIN], {
      env: {
        PATH: process.env.PATH ?? '',
        PORT: '0',
        PROVIDERS_URL: 'http://user:s3cret@127.0.0.1:3100/?token=abc',
        LOG_LEVEL: 'silent',
      },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status, run.stdout).to.not.equal(0);
    expect(run.stderr).to.match(/Invalid configuration:\n\s+PROVIDERS_URL: must have no query string/);
    // The message names the variable; it does not repeat the value, which may hold credentials.
    expect(run.stderr + run.stdout).to.not.include('s3cret');
    expect(run.stderr).to.not.match(/prefixUrl|got/);
  });
});
