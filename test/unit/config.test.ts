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

describe('configuration: production never behaves like the demo', () => {
  const REAL = { PROVIDERS_URL: 'https://providers.example', DATABASE_URL: 'postgres://db.example/payouts' };

  it('allows local test webhooks and makes a demo tenant only in the zero-configuration setup', () => {
    expect(loadConfig({})).to.include({ WEBHOOK_ALLOW_LOCALHOST: true, DEMO_TENANT: true });
  });

  it('with real providers: no localhost webhooks and no demo tenant, unless asked for', () => {
    expect(loadConfig(REAL)).to.include({ WEBHOOK_ALLOW_LOCALHOST: false, DEMO_TENANT: false });
    expect(loadConfig({ PROVIDERS_URL: REAL.PROVIDERS_URL })).to.include({
      WEBHOOK_ALLOW_LOCALHOST: false,
      DEMO_TENANT: false,
    });
    expect(loadConfig({ ...REAL, WEBHOOK_ALLOW_LOCALHOST: 'true', DEMO_TENANT: 'true' })).to.include({
      WEBHOOK_ALLOW_LOCALHOST: true,
      DEMO_TENANT: true,
    });
  });

  it('with a database server but the sandbox: localhost webhooks, but no demo tenant unless asked for', () => {
    expect(loadConfig({ DATABASE_URL: REAL.DATABASE_URL })).to.include({
      WEBHOOK_ALLOW_LOCALHOST: true,
      DEMO_TENANT: false,
    });
    expect(loadConfig({ DATABASE_URL: REAL.DATABASE_URL, DEMO_TENANT: 'true' }).DEMO_TENANT).to.equal(true);
    expect(loadConfig({ WEBHOOK_ALLOW_LOCALHOST: 'false', DEMO_TENANT: 'no' })).to.include({
      WEBHOOK_ALLOW_LOCALHOST: false,
      DEMO_TENANT: false,
    });
  });

  it('stops the start with the variable named when a flag is not a flag', () => {
    expect(() => loadConfig({ DEMO_TENANT: 'maybe' })).to.throw(/DEMO_TENANT/);
    expect(() => loadConfig({ WEBHOOK_ALLOW_LOCALHOST: 'on' })).to.throw(/WEBHOOK_ALLOW_LOCALHOST/);
  });
});
