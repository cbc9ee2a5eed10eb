import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '#src/config.ts';
import { ensureDemoTenant, startupBanner } from '#src/demo.ts';
import { authenticateApiKey } from '#src/tenants/auth.ts';
import { call } from '../client.ts';
import { harness } from '../harness.ts';
import { cliAs } from '../operators/fixtures.ts';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;

async function demoTenants(): Promise<{ id: string; name: string }[]> {
  return harness().service.deps.orm.em.fork().execute('select id, name from tenants where is_demo');
}

async function tenantCount(): Promise<number> {
  const [row] = await harness()
    .service.deps.orm.em.fork()
    .execute<{ n: string }[]>('select count(*) as n from tenants');
  return Number(row?.n);
}

/** A started `npm start` (src/main.ts) with exactly this environment, and what it printed. */
interface Started {
  banner: string;
  stop(): Promise<void>;
}

/** Every child started, so that a failed test still stops its processes. */
const children: Started[] = [];

/** Starts `src/main.ts` as `npm start` does, and waits for its banner (its last line ends it). */
async function start(env: Record<string, string>): Promise<Started> {
  const child: ChildProcess = spawn(process.execPath, [MAIN], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString('utf8');
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString('utf8');
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null) child.kill('SIGTERM');
    await exited;
  };
  children.push({ banner: '', stop });
  const banner = await new Promise<string>((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes('API reference') && /\n {2}(Try: | {2}npm run -s admin)[^\n]*\n$/.test(out)) {
        clearInterval(timer);
        resolve(out);
      } else if (child.exitCode !== null) {
        clearInterval(timer);
        reject(new Error(`main exited with ${child.exitCode}: ${out}${err}`));
      }
    }, 20);
  }).catch(async (e) => {
    await stop();
    throw e;
  });
  return { banner, stop };
}

describe('npm start: production never behaves like the demo', function () {
  // A start takes a few seconds alone; on a machine shared with other work, several times that.
  this.timeout(120_000);
  const dirs: string[] = [];
  const dataDir = () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'payout-start-'));
    dirs.push(dir);
    return dir;
  };
  afterEach(async () => {
    await Promise.all(children.splice(0).map((c) => c.stop()));
  });
  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  /** The environment of a deployment: its own database, real providers, secrets from the environment. */
  const production = () => ({
    PORT: '0',
    DATA_DIR: dataDir(),
    DATABASE_URL: harness().databaseUrl,
    PROVIDERS_URL: harness().sandboxUrl,
    ADMIN_TOKEN: `adm_env_${randomBytes(16).toString('hex')}`,
    PROVIDER_CALLBACK_SECRET: `cb_env_${randomBytes(16).toString('hex')}`,
    JOBS: 'none',
    LOG_LEVEL: 'silent',
  });

  it('with DATABASE_URL, PROVIDERS_URL and ADMIN_TOKEN: creates no demo tenant and prints no secret', async () => {
    const env = production();
    const before = await tenantCount();
    const started = await start(env);
    try {
      expect(started.banner).to.include('Payout service');
      expect(started.banner).to.not.include(env.ADMIN_TOKEN);
      expect(started.banner).to.not.include(env.PROVIDER_CALLBACK_SECRET);
      expect(started.banner).to.not.include('Demo API key');
      expect(started.banner).to.not.include('Approver token');
      expect(started.banner).to.not.match(/sk_[A-Za-z0-9_-]{20,}/);
      expect(started.banner).to.include('from ADMIN_TOKEN (not shown)');
      expect(await tenantCount()).to.equal(before);
    } finally {
      await started.stop();
    }
  });

  it('with DEMO_TENANT=true, two instances starting at once share one demo tenant, each with a working key', async () => {
    const env = { ...production(), DEMO_TENANT: 'true' };
    const [a, b] = await Promise.all([start({ ...env, DATA_DIR: dataDir() }), start(env)]);
    try {
      const demos = await demoTenants();
      expect(demos).to.have.length(1);
      for (const { banner } of [a, b]) {
        expect(banner).to.not.include(env.ADMIN_TOKEN);
        const key = /Demo API key\s+(sk_\S+)/.exec(banner)?.[1];
        expect(key, banner).to.be.a('string');
        const found = await authenticateApiKey(harness().service.deps.sql, key);
        expect(found?.principal.tenant.id).to.equal(demos[0]?.id);
        const res = await call('GET', '/v1/banks?country=NG&destination_type=BANK_ACCOUNT', { key });
        expect(res.status).to.equal(200);
        // Four eyes work in the demo: a second operator, an approver, to approve with.
        const approver = /Approver token\s+(op_\S+)/.exec(banner)?.[1];
        expect(approver, banner).to.be.a('string');
        expect(await cliAs({ token: approver! })('whoami')).to.include({ role: 'approver' });
      }
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });

  it('never makes a second demo tenant, however many set-ups race, and reuses the key a DATA_DIR kept', async () => {
    const deps = harness().service.deps;
    const setUp = (dir: string) =>
      ensureDemoTenant(deps.orm.em.fork(), deps.sql, { dataDir: dir, now: harness().clock.now() });
    const dirsOfInstances = [dataDir(), dataDir(), dataDir(), dataDir(), dataDir()];
    const demos = await Promise.all(dirsOfInstances.map(setUp));
    const [only] = await demoTenants();
    expect(await demoTenants()).to.have.length(1);
    expect(new Set(demos.map((d) => d.tenantId))).to.deep.equal(new Set([only?.id]));

    const again = await setUp(dirsOfInstances[0] as string);
    expect(again).to.deep.equal(demos[0]);
    expect(await demoTenants()).to.have.length(1);
  });

  describe('the banner', () => {
    const demo = { tenantId: 't', apiKey: 'sk_demo_key_printed' };

    it('prints the demo key and a generated admin token in the zero-configuration setup', () => {
      const config = loadConfig({ DATA_DIR: '/tmp/x' });
      const banner = startupBanner({
        config,
        serviceUrl: 'http://127.0.0.1:3000',
        providersUrl: 'http://127.0.0.1:3100',
        secrets: { adminToken: 'adm_generated_token' },
        demo,
      });
      expect(banner).to.include('sk_demo_key_printed').and.include('adm_generated_token');
    });

    it("suggests the README's first request, with the demo key where the README reads it into $K", () => {
      const banner = startupBanner({
        config: loadConfig({ DATA_DIR: '/tmp/x' }),
        serviceUrl: 'http://127.0.0.1:3000',
        providersUrl: 'http://127.0.0.1:3100',
        secrets: { adminToken: 'adm_generated_token' },
        demo,
      });
      const tried = /Try: (curl .*)/.exec(banner)?.[1];
      const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
      expect(readme).to.include(tried?.replace(demo.apiKey, '$K'));
    });

    it('never prints ADMIN_TOKEN, nor credentials in PROVIDERS_URL, nor a generated token without the demo', () => {
      const config = loadConfig({
        PROVIDERS_URL: 'https://svc:hunter2@providers.example/api',
        DATABASE_URL: 'postgres://payouts:pgsecret@db.example/payouts',
      });
      const banner = startupBanner({
        config,
        serviceUrl: 'https://payouts.example',
        providersUrl: 'https://svc:hunter2@providers.example/api?token=abc',
        secrets: { adminToken: 'adm_generated_token' },
        demo: null,
      });
      for (const secret of ['hunter2', 'token=abc', 'pgsecret', 'adm_generated_token'])
        expect(banner).to.not.include(secret);
      expect(banner).to.include('https://providers.example/api').and.include('No demo tenant');

      const fromEnv = startupBanner({
        config: { ...config, ADMIN_TOKEN: 'adm_from_the_environment' },
        serviceUrl: 'https://payouts.example',
        providersUrl: 'https://providers.example',
        secrets: { adminToken: 'adm_from_the_environment' },
        demo,
      });
      expect(fromEnv).to.not.include('adm_from_the_environment');
    });
  });
});
