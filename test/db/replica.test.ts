import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { Registry } from 'prom-client';
import sinon from 'sinon';
import { loadConfig } from '#src/config.ts';
import { REPLICA_APPLICATION_NAME } from '#src/db/orm.ts';
import { openReads, readYourWritesMs } from '#src/db/replica.ts';
import { dayOf } from '#src/lib/days.ts';
import { createLogger } from '#src/lib/log.ts';
import { ReconBreak } from '#src/reconciliation/entities.ts';
import { readRail } from '#src/reconciliation/records.ts';
import { runReconciliation } from '#src/reconciliation/service.ts';
import { secretsFrom } from '#src/secrets.ts';
import { type RunningService, startService } from '#src/service.ts';
import { pullBankStatement } from '#src/settlement/bank-statement.ts';
import { Inflow } from '#src/settlement/entities.ts';
import { call, type Merchant } from '../client.ts';
import { deps, merchantWith, payoutTo } from '../dispatch/fixtures.ts';
import { harness } from '../harness.ts';
import { bankPayout, payoutReadyMerchant } from '../payouts/fixtures.ts';
import { payBank, payoutWithInstruction } from '../settlement/fixtures.ts';
import { skipBecause } from '../skip.ts';

// Generous for a machine whose WAL is busy with other work: a list should land on the replica.
const MAX_LAG_MS = 2_000;

/**
 * A service reading its lists from the real hot-standby replica (`.ci/topology.sh` builds it
 * with pg_basebackup and .ci/run gives DATABASE_REPLICA_URL). Writes go through the harness's
 * service, so that this service's read-your-writes window does not apply unless a test wants it.
 */
describe('lists from a streaming replica (DATABASE_REPLICA_URL)', function () {
  this.timeout(180_000);

  let service: RunningService;
  let replica: pg.Pool;
  let merchant: Merchant;
  let adminToken: string;
  let warn: sinon.SinonSpy;

  before(async function () {
    const { replicaUrl, databaseUrl, directUrl } = harness();
    if (!replicaUrl) skipBecause(this, 'no DATABASE_REPLICA_URL (.ci/run builds a replica and gives it)');
    replica = new pg.Pool({ connectionString: replicaUrl, max: 2 });
    // The standby replays the suite's database's creation a moment after the primary made it.
    await until('the replica to have the test database', () =>
      replica.query('select 1').then(
        () => true,
        (error: { code?: string }) => {
          if (error.code === '3D000') return undefined;
          throw error;
        },
      ),
    );
    adminToken = `adm_replica_${randomBytes(16).toString('hex')}`;
    const log = createLogger({ level: 'silent' });
    warn = sinon.spy(log, 'warn');
    service = await startService({
      config: {
        ...loadConfig({ PORT: '0', DATA_DIR: '.test-data', LOG_LEVEL: 'silent' }),
        DATABASE_URL: databaseUrl,
        DATABASE_DIRECT_URL: directUrl,
        DATABASE_REPLICA_URL: replicaUrl,
        DATABASE_REPLICA_MAX_LAG_MS: MAX_LAG_MS,
      },
      databaseUrl,
      providersUrl: harness().sandboxUrl,
      secrets: secretsFrom({ encryptionKey: randomBytes(32), adminToken, callbackSecret: 'x'.repeat(32) }),
      log,
      clock: harness().clock,
    });
    merchant = await payoutReadyMerchant();
  });

  after(async () => {
    await service?.close();
    await replica?.end();
  });

  /** A merchant call to the replica-reading service. */
  async function get(path: string, key = merchant.key): Promise<{ status: number; body: any }> {
    const res = await fetch(`${service.url}${path}`, { headers: { 'x-api-key': key } });
    return { status: res.status, body: await res.json() };
  }

  async function adminCall(procedure: string, input?: unknown): Promise<{ status: number; body: any }> {
    const query = input === undefined ? '' : `?input=${encodeURIComponent(JSON.stringify(input))}`;
    const res = await fetch(`${service.url}/trpc/${procedure}${query}`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    return { status: res.status, body: await res.json() };
  }

  /** `payout_replica_reads_total` of the replica-reading service, by target and reason. */
  async function routed(target: 'replica' | 'primary', reason: string): Promise<number> {
    const metric = service.deps.metrics.registry.getSingleMetric('payout_replica_reads_total');
    const { values } = await metric!.get();
    return values.find((v) => v.labels.target === target && v.labels.reason === reason)?.value ?? 0;
  }

  /** Creates a payout through the harness's service (the primary) and waits until the replica has it. */
  async function payoutOnReplica(): Promise<string> {
    const created = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout() });
    expect(created.status, created.text).to.equal(201);
    await until('the replica to replay the payout', async () => {
      const { rows } = await replica.query('select 1 from payouts where id = $1', [created.body.id]);
      return rows.length === 1 ? true : undefined;
    });
    return created.body.id;
  }

  /**
   * When this service's replica backends whose last statement starts like `text` ended it
   * (`pg_stat_activity` keeps the first 1 kB of a statement).
   */
  async function replicaQueriesLike(text: string): Promise<Date[]> {
    const { rows } = await replica.query<{ state_change: Date }>(
      `select state_change from pg_stat_activity
        where application_name = $1 and datname = current_database() and query ilike $2`,
      [REPLICA_APPLICATION_NAME, `%${text}%`],
    );
    return rows.map((r) => r.state_change);
  }

  /**
   * Calls `send` until the replica serves it (a moment's lag on a busy machine sends a read to the
   * primary, which is right); the answer of the call the replica served.
   */
  async function servedByReplica<T>(what: string, send: () => Promise<T>): Promise<T> {
    return until(`${what} to be read from the replica`, async () => {
      const before = await routed('replica', 'replica');
      const answer = await send();
      return (await routed('replica', 'replica')) === before + 1 ? answer : undefined;
    });
  }

  /**
   * The virtual account to pay for an NGN-settled payout of a fresh merchant, created through the
   * harness's service (the primary), which also generates its instruction.
   */
  async function ngnVirtualAccount(suffix: string): Promise<string> {
    const { instruction } = await payoutWithInstruction(await merchantWith(), payoutTo(suffix, 'NGN'));
    return instruction.account_unique;
  }

  /**
   * Reads over the real replica that allow it ten minutes of lag, with a registry of their own:
   * `replicaReads()` counts the reads they sent to the replica.
   */
  function lenientReads() {
    const registry = new Registry();
    const reads = openReads({
      primary: { orm: service.deps.orm, sql: service.deps.sql },
      replicaUrl: harness().replicaUrl,
      maxLagMs: 600_000,
      poolSize: 2,
      log: createLogger({ level: 'silent' }),
      registry,
      clock: harness().clock,
    });
    const replicaReads = async () => {
      const { values } = await registry.getSingleMetric('payout_replica_reads_total')!.get();
      return values.find((v) => v.labels.target === 'replica')?.value;
    };
    return Object.assign(reads, { replicaReads });
  }

  it('reads the merchant lists from the replica, and a GET of one payout from the primary', async () => {
    const id = await payoutOnReplica();
    const startedAt = new Date();
    const list = await servedByReplica('the payouts list', () => get('/v1/payouts?limit=5'));
    expect(list.status).to.equal(200);
    expect(list.body.data.map((p: { id: string }) => p.id)).to.include(id);
    // The payouts page statement (src/payouts/resource.ts).
    const after = await replicaQueriesLike('select p.id, p.tenant_id');
    expect(
      after.some((t) => t >= startedAt),
      'a replica backend ran the payouts list',
    ).to.equal(true);
    for (const path of ['/v1/inflows', '/v1/refunds', '/v1/webhooks/deliveries', '/v1/money-movements']) {
      expect((await servedByReplica(path, () => get(path))).status, path).to.equal(200);
    }
    const day = 86_400_000;
    const period = `created_after=${new Date(Date.now() - day).toISOString()}&created_before=${new Date(Date.now() + day).toISOString()}`;
    const csv = await servedByReplica('the money movements CSV', () =>
      fetch(`${service.url}/v1/money-movements?${period}`, {
        headers: { 'x-api-key': merchant.key, accept: 'text/csv' },
      }),
    );
    expect(csv.status).to.equal(200);
    expect(csv.headers.get('content-type')).to.match(/^text\/csv/);

    // One payout, and its own money statement, read with it from the primary.
    for (const path of [`/v1/payouts/${id}`, `/v1/payouts/${id}/money-movements`]) {
      const before = await routed('replica', 'replica');
      const one = await get(path);
      expect(one.status, path).to.equal(200);
      expect(await routed('replica', 'replica'), `${path} is not routed`).to.equal(before);
    }
  });

  it("reads the console's lists and counts from the replica", async () => {
    const calls: [string, unknown?][] = [
      ['admin.exceptions'],
      ['admin.payouts.heldUnderpaid'],
      ['admin.payees.held'],
      ['admin.approvalRules.list'],
      ['admin.tenant.list'],
      // The Money page and the Reconciliation page.
      ['admin.ledger.balances'],
      ['admin.ledger.entries', { account: 'tenants:', limit: 5 }],
      ['admin.ledger.violations'],
      ['admin.recon.runs'],
      ['admin.recon.breaks', { open: true }],
    ];
    for (const [procedure, input] of calls) {
      const res = await servedByReplica(procedure, () => adminCall(procedure, input));
      expect(res.status, `${procedure}: ${JSON.stringify(res.body)}`).to.equal(200);
    }
  });

  it("reconciles from the replica's books, and reads again on the primary what the replica has not replayed", async () => {
    const { clock } = harness();
    // The harness's service opens the virtual account and records the bank's credit.
    const account = await ngnVirtualAccount('7741');
    // A replica that has stopped replaying, but is allowed ten minutes of lag: the run's books come
    // from it, without the credit below.
    const lenient = lenientReads();
    await replica.query('select pg_wal_replay_pause()');
    try {
      const paid = await payBank(account, '1500.00');
      await until('the credit to be recorded on the primary', async () =>
        (await service.deps.orm.em.fork().count(Inflow, { externalRef: paid.session_id })) === 1
          ? true
          : undefined,
      );
      const { rows } = await replica.query('select 1 from inflows where external_ref = $1', [
        paid.session_id,
      ]);
      expect(rows, 'the replica has not replayed the credit').to.have.length(0);

      const run = await runReconciliation(
        { ...service.deps, reads: lenient },
        { day: dayOf(clock.now()), rail: 'BANK_TRANSFER' },
      );
      expect(run).to.not.equal(null);
      expect(await lenient.replicaReads(), "the day's books read on the replica").to.equal(1);
      const breaks = await service.deps.orm.em.fork().find(ReconBreak, { reference: paid.session_id });
      expect(breaks, 'a credit the replica had not replayed is no break').to.deep.equal([]);
    } finally {
      await replica.query('select pg_wal_replay_resume()');
      await lenient.close();
    }
  });

  it("pairs again on the primary what the replica's day did not match: a line whose inflow it has not replayed is no break", async () => {
    const { clock } = harness();
    const account = await ngnVirtualAccount('7742');
    // A credit the bank never notifies: its statement alone shows it. Reconciliation keeps the
    // statement's line before the service records the credit, and the replica replays the line.
    const credit = harness().sandbox.bank.credit({
      accountNumber: account,
      amount: '1500',
      callback: false,
    });
    const day = dayOf(clock.now());
    await readRail(service.deps, 'BANK_TRANSFER', day);
    await until('the replica to replay the kept line', async () =>
      (await replica.query('select 1 from recon_rail_lines where line_id = $1', [credit.sessionId])).rows
        .length === 1
        ? true
        : undefined,
    );
    const lenient = lenientReads();
    await replica.query('select pg_wal_replay_pause()');
    try {
      // The statement pull records the credit on the primary; the paused replica never sees it.
      clock.advance(deps().config.BANK_STATEMENT_INTERVAL_MS + 1000);
      await until('the credit to be recorded on the primary', async () => {
        await pullBankStatement(deps());
        return (await service.deps.orm.em.fork().count(Inflow, { externalRef: credit.sessionId })) === 1
          ? true
          : undefined;
      });
      const { rows } = await replica.query('select 1 from inflows where external_ref = $1', [
        credit.sessionId,
      ]);
      expect(rows, 'the replica has not replayed the credit').to.have.length(0);

      const run = await runReconciliation(
        { ...service.deps, reads: lenient },
        { day, rail: 'BANK_TRANSFER' },
      );
      expect(run).to.not.equal(null);
      expect(await lenient.replicaReads(), "the day's comparison made on the replica").to.equal(1);
      const breaks = await service.deps.orm.em.fork().find(ReconBreak, { reference: credit.sessionId });
      expect(breaks, 'the line paired again on the primary matches the ledger there').to.deep.equal([]);
    } finally {
      await replica.query('select pg_wal_replay_resume()');
      await lenient.close();
    }
  });

  it('shows a merchant its own payout in the list at once after creating it (read your writes)', async () => {
    const res = await fetch(`${service.url}/v1/payouts`, {
      method: 'POST',
      headers: {
        'x-api-key': merchant.key,
        'content-type': 'application/json',
        'idempotency-key': randomUUID(),
      },
      body: JSON.stringify(bankPayout()),
    });
    const created = (await res.json()) as { id: string };
    expect(res.status, JSON.stringify(created)).to.equal(201);
    const before = await routed('primary', 'recent_write');
    const list = await get('/v1/payouts?limit=5');
    expect(list.body.data[0].id).to.equal(created.id);
    expect(await routed('primary', 'recent_write')).to.equal(before + 1);
    // Past the window, the same merchant's lists go back to the replica.
    await new Promise((resolve) => setTimeout(resolve, readYourWritesMs(MAX_LAG_MS) + 50));
    await servedByReplica('the payouts list', () => get('/v1/payouts?limit=5'));
  });

  it('reads from the primary while the replica lags past DATABASE_REPLICA_MAX_LAG_MS, and back after', async () => {
    await payoutOnReplica();
    await replica.query('select pg_wal_replay_pause()');
    try {
      const created = await call('POST', '/v1/payouts', { key: merchant.key, body: bankPayout() });
      expect(created.status).to.equal(201);
      const before = await routed('primary', 'lag');
      const list = await until('the lag to be seen', async () => {
        const page = await get('/v1/payouts?limit=5');
        return (await routed('primary', 'lag')) > before ? page : undefined;
      });
      expect(list.body.data[0].id, 'the payout the replica has not replayed').to.equal(created.body.id);
      expect(warn.calledWithMatch({ reason: 'lag' })).to.equal(true);
    } finally {
      await replica.query('select pg_wal_replay_resume()');
    }
    await servedByReplica('the payouts list', () => get('/v1/payouts?limit=5'));
  });

  it('answers from the primary, with a warning and no error, while the replica is stopped', async function () {
    const data = process.env.REPLICA_PGDATA_CI;
    const pgCtl = process.env.REPLICA_PG_CTL_CI;
    if (!data || !pgCtl)
      skipBecause(this, 'no REPLICA_PGDATA_CI and REPLICA_PG_CTL_CI to stop the replica with');
    const id = await payoutOnReplica();
    const asPostgres = (args: string[]) =>
      process.getuid?.() === 0
        ? execFileSync('runuser', ['-u', 'postgres', '--', pgCtl!, ...args], { stdio: 'pipe' })
        : execFileSync(pgCtl!, args, { stdio: 'pipe' });
    await replica.end();
    asPostgres(['-D', data!, '-m', 'fast', '-w', 'stop']);
    try {
      warn.resetHistory();
      const before = await routed('primary', 'down');
      for (const path of ['/v1/payouts?limit=5', '/v1/inflows', '/v1/refunds', '/v1/webhooks/deliveries']) {
        const res = await get(path);
        expect(res.status, `${path}: ${JSON.stringify(res.body)}`).to.equal(200);
        if (path.startsWith('/v1/payouts'))
          expect(res.body.data.map((p: { id: string }) => p.id)).to.include(id);
      }
      expect(await routed('primary', 'down')).to.equal(before + 4);
      expect(warn.calledWithMatch({ reason: 'down' }), 'a warning').to.equal(true);
      expect((await adminCall('admin.exceptions')).status).to.equal(200);
    } finally {
      asPostgres(['-D', data!, '-l', path.join(path.dirname(data!), 'replica.log'), '-w', 'start']);
      replica = new pg.Pool({ connectionString: harness().replicaUrl, max: 2 });
    }
    await servedByReplica('the payouts list', () => get('/v1/payouts?limit=5'));
  });
});

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
