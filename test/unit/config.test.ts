import { expect } from 'chai';
import { JOB_NAMES, loadConfig } from '#src/config.ts';
import { JOBS } from '#src/jobs/registry.ts';

describe('configuration: JOBS', () => {
  it('runs every job by default, and names exactly the jobs the registry has', () => {
    expect(loadConfig({}).JOBS).to.deep.equal([...JOB_NAMES]);
    expect(JOBS.map((j) => j.name).sort()).to.deep.equal([...JOB_NAMES].sort());
  });

  it('takes none, or a comma-separated list without duplicates', () => {
    expect(loadConfig({ JOBS: 'none' }).JOBS).to.deep.equal([]);
    expect(loadConfig({ JOBS: ' webhooks, settlement ,webhooks' }).JOBS).to.deep.equal([
      'webhooks',
      'settlement',
    ]);
  });

  it('stops the start with the variable named when a job is unknown', () => {
    expect(() => loadConfig({ JOBS: 'webhooks,payroll' })).to.throw(/JOBS: unknown job payroll/);
  });
});
