import { expect } from 'chai';
import { EXCEPTION_QUEUES, overdueHours, QUEUE_INFO } from '#src/compliance/queues.ts';
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

describe('configuration: base URLs', () => {
  it('takes an http(s) URL with a path, and credentials', () => {
    expect(loadConfig({ PROVIDERS_URL: 'https://user:pw@providers.example/api/' }).PROVIDERS_URL).to.equal(
      'https://user:pw@providers.example/api/',
    );
    expect(loadConfig({ CALLBACK_BASE_URL: 'http://10.0.0.5:3000' }).CALLBACK_BASE_URL).to.equal(
      'http://10.0.0.5:3000',
    );
  });

  it('stops the start naming the variable and what is wrong: a query string, a fragment, a scheme, no URL', () => {
    expect(() => loadConfig({ PROVIDERS_URL: 'http://127.0.0.1:3100/?token=abc' })).to.throw(
      /PROVIDERS_URL: must have no query string/,
    );
    expect(() => loadConfig({ PROVIDERS_URL: 'http://127.0.0.1:3100/#x' })).to.throw(
      /PROVIDERS_URL: must have no fragment/,
    );
    expect(() => loadConfig({ PROVIDERS_URL: 'ftp://providers.example/' })).to.throw(
      /PROVIDERS_URL: must be http or https, not ftp/,
    );
    expect(() => loadConfig({ PROVIDERS_URL: 'providers.example' })).to.throw(/PROVIDERS_URL: is not a URL/);
    expect(() => loadConfig({ CALLBACK_BASE_URL: 'https://me.example/?a=1' })).to.throw(
      /CALLBACK_BASE_URL: must have no query string/,
    );
  });
});

describe('configuration: overdue ages of the exception queues', () => {
  it('has one OVERDUE_<QUEUE>_HOURS per queue, defaulting to what the queue declares', () => {
    const config = loadConfig({});
    const hours = overdueHours(config);
    for (const queue of EXCEPTION_QUEUES)
      expect(hours[queue], queue).to.equal(QUEUE_INFO[queue].overdue.defaultHours);
    expect(overdueHours(loadConfig({ OVERDUE_REFUNDS_FAILED_HOURS: '6' })).REFUNDS_FAILED).to.equal(6);
  });

  it('stops the start with the variable named when an age is not a whole number of hours of at least 1', () => {
    for (const value of ['0', '-2', '1.5', 'a day']) {
      expect(() => loadConfig({ OVERDUE_APPROVALS_PENDING_HOURS: value }), value).to.throw(
        /OVERDUE_APPROVALS_PENDING_HOURS/,
      );
    }
  });

  it('keeps the webhook log 30 days by default, 1 to 3650, and never longer than the events it sends', () => {
    expect(loadConfig({}).WEBHOOK_LOG_RETENTION_DAYS).to.equal(30);
    expect(loadConfig({ WEBHOOK_LOG_RETENTION_DAYS: '7' }).WEBHOOK_LOG_RETENTION_DAYS).to.equal(7);
    for (const value of ['0', '-1', '3651', '1.5', 'a month']) {
      expect(
        () => loadConfig({ WEBHOOK_LOG_RETENTION_DAYS: value, OUTBOX_RETENTION_DAYS: '4000' }),
        value,
      ).to.throw(/WEBHOOK_LOG_RETENTION_DAYS/);
    }
    expect(() => loadConfig({ WEBHOOK_LOG_RETENTION_DAYS: '31' })).to.throw(
      /WEBHOOK_LOG_RETENTION_DAYS: 31 is longer than OUTBOX_RETENTION_DAYS \(30\)/,
    );
    expect(
      loadConfig({ WEBHOOK_LOG_RETENTION_DAYS: '90', OUTBOX_RETENTION_DAYS: '90' })
        .WEBHOOK_LOG_RETENTION_DAYS,
    ).to.equal(90);
  });
});
