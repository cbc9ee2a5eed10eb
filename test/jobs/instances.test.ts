import { randomBytes, randomUUID } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import { loadConfig } from '#src/config.ts';
import { Corridors } from '#src/corridors/corridors.ts';
import { startEmbeddedPostgres } from '#src/db/embedded.ts';
import { Outflow } from '#src/dispatch/entities.ts';
import { JOBS } from '#src/jobs/registry.ts';
import { type RunningWorkers, startWorkers } from '#src/jobs/workers.ts';
import { systemClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { Refund } from '#src/refunds/entities.ts';
import { type RunningSandbox, startSandbox } from '#src/sandbox/server.ts';
import { secretsFrom } from '#src/secrets.ts';
import { type RunningService, startService } from '#src/service.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { createTenant, issueApiKey } from '#src/tenants/service.ts';
import { apiAt, uniqueName } from '../client.ts';
import { harness } from '../harness.ts';

/**
 * Two service instances, each with its own full set of Bree worker threads, against one
 * database: every payout is generated, settled, dispatched and (when it fails) refunded exactly
 * once. Real threads run on the real clock, so this test waits for real work (bounded polls of
 * the API), in a database of its own.
 */
describe('several instances against one database', function () {
  this.timeout(180_000);

  const stops: (() => Promise<void>)[] = [];
  let sandbox: RunningSandbox;
  const services: RunningService[] = [];
  const workers: RunningWorkers[] = [];
  let apiKey: string;

  before(async () => {
    let databaseUrl: string;
    if (harness().embedded) {
      const pg = await startEmbeddedPostgres({ maxConnections: 64 });
      stops.push(pg.stop);
      databaseUrl = pg.url;
    } else {
      const name = `instances_${randomBytes(6).toString('hex')}`;
      const admin = harness().service.deps.orm.em.fork();
      await admin.execute(`create database "${name}"`);
      stops.push(async () => {
        await admin.execute(`drop database if exists "${name}" with (force)`);
      });
      const url = new URL(harness().databaseUrl);
      url.pathname = `/${name}`;
      databaseUrl = url.toString();
    }
    const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
    const secrets = secretsFrom({
      encryptionKey: randomBytes(32),
      adminToken: `adm_${randomUUID()}`,
      callbackSecret: randomBytes(32).toString('base64url'),
    });
    const config = {
      ...loadConfig({ PORT: '0', DATA_DIR: '.test-data', LOG_LEVEL: 'silent' }),
      WORKER_POLL_INTERVAL_MS: 100,
      INSTRUCTION_SWEEP_INTERVAL_MS: 200,
      CONFIRMATIONS_TRON: 2,
      DATABASE_POOL_SIZE: 4,
    };
    const corridors = Corridors.load();
    sandbox = await startSandbox({
      corridors,
      clock: systemClock,
      log,
      port: 0,
      blockIntervalMs: 0,
      callbackDelayMs: 20,
      callbackSecret: secrets.callbackSecret,
    });
    stops.push(sandbox.close);
    for (let i = 0; i < 2; i++) {
      const service = await startService({
        config,
        databaseUrl,
        providersUrl: sandbox.url,
        secrets,
        log,
        corridors,
      });
      stops.push(service.close);
      services.push(service);
      const set = await startWorkers({
        config,
        databaseUrl,
        providersUrl: sandbox.url,
        callbackBaseUrl: service.deps.callbackBaseUrl,
        secrets,
        log,
      });
      stops.push(set.stop);
      // Start-up waits for the threads: every job is working by the time it returns.
      expect(set.running()).to.have.members(JOBS.map((j) => j.name));
      workers.push(set);
    }
    const em = services[0]!.deps.orm.em.fork();
    const tenant = await createTenant(em, { name: uniqueName('Two Instances Ltd'), approved: true });
    apiKey = (await issueApiKey(em, { tenantId: tenant.id })).plaintext;
  });

  after(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  async function api(i: number, method: string, path: string, body?: unknown): Promise<any> {
    return apiAt(services[i % 2]!.url, apiKey, method, path, body);
  }

  async function eventually<T>(
    what: string,
    probe: () => Promise<T | undefined>,
    timeoutMs = 60_000,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  it('does not hold start-up back for a job thread that cannot start', async () => {
    const log = createLogger({ level: 'silent' });
    const warn = sinon.spy(log, 'warn');
    const started = Date.now();
    const set = await startWorkers({
      config: loadConfig({ PORT: '0', DATA_DIR: '.test-data', LOG_LEVEL: 'silent' }),
      // Nothing listens on port 1: the thread fails to build its pool, and Bree restarts it.
      databaseUrl: 'postgres://postgres@127.0.0.1:1/nowhere',
      providersUrl: sandbox.url,
      callbackBaseUrl: services[0]!.deps.callbackBaseUrl,
      secrets: services[0]!.deps.secrets,
      log,
      jobs: ['refunds'],
      readyTimeoutMs: 1_500,
    });
    try {
      expect(Date.now() - started).to.be.lessThan(10_000);
      expect(set.running()).to.deep.equal([]);
      expect(warn.calledWithMatch({ jobs: ['refunds'] })).to.equal(true);
    } finally {
      await set.stop();
    }
  });

  it('generates, settles, dispatches and refunds every payout exactly once', async () => {
    await api(0, 'PUT', '/v1/refund-destinations', {
      currency: 'USDT',
      type: 'CRYPTO_ADDRESS',
      network: 'BSC',
      address: '0x52908400098527886e0f7030069857d2e4169ee7',
    });
    const accounts = ['0234567891', '0234567892', '0234567893', '0234567894', '0234561001', '0234561001'];
    const ids: string[] = [];
    for (const [i, account] of accounts.entries()) {
      const payout = await api(i, 'POST', '/v1/payouts', {
        destination_type: 'BANK_ACCOUNT',
        destination_country: 'NG',
        destination_currency: 'NGN',
        destination_amount: 50_000 + i,
        destination_account_unique: account,
        destination_provider_name: 'Guaranty Trust Bank',
        destination_provider_code: '058',
        destination_account_name: 'ADAEZE OKONKWO',
      });
      ids.push(payout.id);
    }

    const instructions = await eventually('every instruction', async () => {
      const payouts = await Promise.all(ids.map((id, i) => api(i, 'GET', `/v1/payouts/${id}`)));
      return payouts.every((p) => p.status === 'PENDING_PAYMENT')
        ? payouts.map((p) => p.payment_instruction)
        : undefined;
    });
    for (const instruction of instructions) {
      sandbox.chains.transfer({
        network: 'TRON',
        toAddress: instruction.account_unique,
        amount: String(instruction.expected_amount),
      });
    }
    sandbox.chains.mine('TRON', 3);

    const finals = await eventually('every payout to finish', async () => {
      const payouts = await Promise.all(ids.map((id, i) => api(i, 'GET', `/v1/payouts/${id}`)));
      return payouts.every((p) => p.status === 'SUCCESSFUL' || (p.status === 'FAILED' && p.is_refunded))
        ? payouts
        : undefined;
    });
    expect(finals.map((p) => p.status)).to.deep.equal([
      'SUCCESSFUL',
      'SUCCESSFUL',
      'SUCCESSFUL',
      'SUCCESSFUL',
      'FAILED',
      'FAILED',
    ]);

    const em = services[0]!.deps.orm.em.fork();
    const inflows = await em.find(Inflow, { payout: { $in: ids } });
    expect(inflows, 'one inflow per transfer').to.have.length(6);
    expect(inflows.every((f) => f.isMatched)).to.equal(true);

    const outflows = await em.find(Outflow, { payout: { $in: ids } });
    expect(outflows, 'one dispatch per payout').to.have.length(6);
    for (const outflow of outflows) {
      const seen = sandbox.processor.payouts(outflow.id);
      expect(seen, `processor payouts for ${outflow.id}`).to.have.length(1);
    }

    await eventually('both refunds to settle', async () => {
      // Refund sends settle once a block includes them; this chain only mines on request.
      sandbox.chains.mine('BSC', 1);
      const refunds = await em.fork().find(Refund, { payout: { $in: ids } });
      return refunds.length === 2 && refunds.every((r) => r.status === 'SUCCESSFUL') ? refunds : undefined;
    });
    const refunds = await em.fork().find(Refund, { payout: { $in: ids } });
    expect(refunds.map((r) => r.payout.id).sort()).to.deep.equal(ids.slice(4).sort());
    expect(sandbox.chains.sends('BSC'), 'each refund sent once').to.have.length(2);
  });
});
