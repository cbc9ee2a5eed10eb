import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { skipBecause } from '../skip.ts';

const ALERTS = new URL('../../docs/alerts/', import.meta.url).pathname;
const run = promisify(execFile);

/** Whether promtool (Debian's `prometheus` package) is on the PATH. */
async function promtool(): Promise<boolean> {
  return run('promtool', ['--version']).then(
    () => true,
    () => false,
  );
}

describe('alert rules (docs/alerts/)', () => {
  it('pass their own tests under promtool: a page after 15 minutes, the lead after a day, resolved when the queue empties', async function () {
    if (!(await promtool())) {
      const why = 'promtool not found (Debian: apt-get install -y prometheus; .ci/run installs it)';
      if (process.env.CI) throw new Error(`${why}; CI must test the alert rules`);
      skipBecause(this, `the alert rules' promtool tests: ${why}`);
    }
    this.timeout(60_000);
    const check = await run('promtool', ['check', 'rules', 'payout-service.rules.yml'], { cwd: ALERTS });
    expect(check.stdout).to.include('SUCCESS');
    const tested = await run('promtool', ['test', 'rules', 'payout-service.test.yml'], { cwd: ALERTS });
    expect(tested.stdout).to.include('SUCCESS');
  });

  it('read the metric the service exports, with no limit of their own', () => {
    const rules = readFileSync(`${ALERTS}payout-service.rules.yml`, 'utf8');
    const metrics = readFileSync(new URL('../../src/observability/metrics.ts', import.meta.url), 'utf8');
    expect(rules).to.include('payout_exception_overdue');
    expect(metrics).to.include("'payout_exception_overdue'");
  });
});
