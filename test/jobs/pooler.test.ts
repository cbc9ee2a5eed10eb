import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pg from 'pg';
import { Corridors } from '#src/corridors/corridors.ts';
import { behindPooler } from '#src/db/sql.ts';
import { systemClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { type RunningSandbox, startSandbox } from '#src/sandbox/server.ts';
import { apiAt, uniqueName } from '../client.ts';
import { harness, sameServer } from '../harness.ts';
import { skipBecause } from '../skip.ts';

const MAIN = new URL('../../src/main.ts', import.meta.url).pathname;
const INSTANCES = 4;
const PAYOUTS = 200;

/** A service process (`npm start` with every job), and everything it wrote on stdout and stderr. */
interface Instance {
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/** A port nothing listens on now, for a process to take. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

/**
 * Four service processes, each with every job (8 + 9 × 2 = 26 connections), share one PgBouncer
 * in transaction mode whose server pool (20 connections, `.ci/topology.sh`) is smaller than their
 * 104 client connections. Runs where DATABASE_URL is such a pooler and DATABASE_DIRECT_URL reaches
 * the server behind it (`.ci/run`); real processes on the real clock, in a database of its own.
 */
describe('four instances behind one PgBouncer in transaction mode', function () {
  this.timeout(420_000);

  const stops: (() => Promise<void>)[] = [];
  const instances: Instance[] = [];
  const received = new Map<string, number>();
  let sandbox: RunningSandbox;
  let direct: pg.Pool;
  let apiKey: string;

  before(async function () {
    const { directUrl, databaseUrl } = harness();
    const pool = await harness().service.deps.orm.em.getConnection().getNativeClient();
    if (!directUrl || !(await behindPooler(pool))) {
      skipBecause(
        this,
        'needs DATABASE_URL through PgBouncer and DATABASE_DIRECT_URL past it, as .ci/run gives',
      );
    }
    const name = `pooler_${randomBytes(6).toString('hex')}`;
    const maintenance = new pg.Client({ connectionString: directUrl });
    await maintenance.connect();
    await maintenance.query(`create database "${name}"`);
    stops.push(async () => {
      await maintenance.query(`drop database if exists "${name}" with (force)`);
      await maintenance.end();
    });
    direct = new pg.Pool({ connectionString: sameServer(directUrl!, name), max: 2 });
    stops.push(async () => {
      // end() resolves once each client is told to close, not once it has: the database's drop
      // (the stop pushed first, so run last), with force, would otherwise terminate a closing
      // client, whose error no listener would catch. Bounded, so a lost event cannot hang the hook.
      let open = direct.totalCount;
      const closed = new Promise<void>((resolve) => {
        if (open === 0) resolve();
        direct.on('remove', () => {
          if (--open === 0) resolve();
        });
      });
      await direct.end();
      await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 5_000))]);
    });

    const callbackSecret = randomBytes(32).toString('base64url');
    sandbox = await startSandbox({
      corridors: Corridors.load(),
      clock: systemClock,
      log: createLogger({ level: 'silent' }),
      port: 0,
      blockIntervalMs: 0,
      callbackDelayMs: 20,
      callbackSecret,
    });
    stops.push(sandbox.close);

    const receiver: Server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => {
        body += chunk.toString('utf8');
      });
      req.on('end', () => {
        const id = (JSON.parse(body) as { event_id: string }).event_id;
        received.set(id, (received.get(id) ?? 0) + 1);
        res.end('ok');
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    stops.push(() => new Promise((resolve) => receiver.close(() => resolve())));

    const dataDir = mkdtempSync(path.join(tmpdir(), 'payout-pooler-'));
    stops.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    const adminToken = `adm_pooler_${randomBytes(16).toString('hex')}`;
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      DATA_DIR: dataDir,
      DATABASE_URL: sameServer(databaseUrl, name),
      DATABASE_DIRECT_URL: sameServer(directUrl!, name),
      PROVIDERS_URL: sandbox.url,
      PROVIDER_CALLBACK_SECRET: callbackSecret,
      ADMIN_TOKEN: adminToken,
      ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      JOBS: 'all',
      LOG_LEVEL: 'info',
      WORKER_POLL_INTERVAL_MS: '100',
      INSTRUCTION_SWEEP_INTERVAL_MS: '200',
      CONFIRMATIONS_TRON: '2',
      WEBHOOK_ALLOW_LOCALHOST: 'true',
      RATE_LIMIT_PER_SECOND: '10000',
      RATE_LIMIT_BURST: '10000',
    };
    const start = async (): Promise<Instance> => {
      const port = await freePort();
      const child: ChildProcess = spawn(process.execPath, ['-r', './src/node-guard.cjs', MAIN], {
        env: { ...env, PORT: String(port) },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout?.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
      });
      child.stderr?.on('data', (chunk: Buffer) => {
        out += chunk.toString('utf8');
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const stop = async () => {
        if (child.exitCode === null) child.kill('SIGTERM');
        await exited;
      };
      stops.push(stop);
      const url = `http://127.0.0.1:${port}`;
      await until(
        `instance on ${port} to be ready`,
        async () => {
          if (child.exitCode !== null) throw new Error(`instance exited: ${out}`);
          return (await fetch(`${url}/health/ready`)).ok ? true : undefined;
        },
        120_000,
      ).catch((e) => {
        throw new Error(`${(e as Error).message}\n${out}`);
      });
      return { url, output: () => out, stop };
    };
    // The first applies the migrations (over DATABASE_DIRECT_URL) before the others start.
    instances.push(await start());
    instances.push(...(await Promise.all(Array.from({ length: INSTANCES - 1 }, start))));

    const admin = async (procedure: string, input: unknown) => {
      const res = await fetch(`${instances[0]!.url}/trpc/${procedure}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(input),
      });
      const body = (await res.json()) as { result: { data: Record<string, string> } };
      expect(res.status, JSON.stringify(body)).to.equal(200);
      return body.result.data;
    };
    const tenant = await admin('admin.tenant.create', { name: uniqueName('Pooled Ltd'), approved: true });
    apiKey = (await admin('admin.key.issue', { tenant_id: tenant.id }))!.api_key!;
    await api(0, 'PUT', '/v1/refund-destinations', {
      currency: 'USDT',
      type: 'CRYPTO_ADDRESS',
      network: 'TRON',
      address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
    });
    const { port } = receiver.address() as AddressInfo;
    await api(0, 'PUT', '/v1/webhooks/config', { webhook_url: `http://127.0.0.1:${port}/hook` });
  });

  after(async () => {
    for (const stop of stops.reverse()) await stop();
  });

  async function api(i: number, method: string, path: string, body?: unknown): Promise<any> {
    return apiAt(instances[i % INSTANCES]!.url, apiKey, method, path, body);
  }

  async function count(sql: string): Promise<number> {
    const { rows } = await direct.query<{ n: string }>(sql);
    return Number(rows[0]!.n);
  }

  it(`pays ${PAYOUTS} funded payouts exactly once and delivers every event once, with no statement or pool error`, async () => {
    let peakServerConnections = 0;
    const sampling = setInterval(() => {
      void count(
        `select count(*) as n from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()`,
      ).then((n) => {
        // The test's own direct pool holds up to one more.
        peakServerConnections = Math.max(peakServerConnections, n - 1);
      });
    }, 250);
    try {
      const ids: string[] = [];
      for (let from = 0; from < PAYOUTS; from += 8) {
        const batch = Array.from({ length: Math.min(8, PAYOUTS - from) }, (_, j) => from + j);
        const created = await Promise.all(
          batch.map((i) =>
            api(i, 'POST', '/v1/payouts', {
              destination_type: 'BANK_ACCOUNT',
              destination_country: 'NG',
              destination_currency: 'NGN',
              destination_amount: 50_000 + i,
              // Last four digits 5000-5199: no magic value of the sandbox.
              destination_account_unique: `023456${5000 + i}`,
              destination_provider_name: 'Guaranty Trust Bank',
              destination_provider_code: '058',
              destination_account_name: 'ADAEZE OKONKWO',
            }),
          ),
        );
        ids.push(...created.map((p: { id: string }) => p.id));
      }

      await until(
        'every instruction',
        async () =>
          (await count(`select count(*) as n from payouts where status = 'PENDING_PAYMENT'`)) === PAYOUTS
            ? true
            : undefined,
        180_000,
      );
      for (const [i, id] of ids.entries()) {
        const { payment_instruction: instruction } = await api(i, 'GET', `/v1/payouts/${id}`);
        sandbox.chains.transfer({
          network: 'TRON',
          toAddress: instruction.account_unique,
          amount: String(instruction.expected_amount),
        });
      }
      sandbox.chains.mine('TRON', 3);

      await until(
        'every payout to succeed',
        async () =>
          (await count(`select count(*) as n from payouts where status = 'SUCCESSFUL'`)) === PAYOUTS
            ? true
            : undefined,
        240_000,
      );
      const { rows: outflows } = await direct.query<{ id: string }>('select id from outflows');
      expect(outflows, 'one dispatch per payout').to.have.length(PAYOUTS);
      for (const outflow of outflows) {
        expect(sandbox.processor.payouts(outflow.id), `processor payouts of ${outflow.id}`).to.have.length(1);
      }
      expect(
        await count('select count(*) as n from inflows where is_matched'),
        'one matched inflow each',
      ).to.equal(PAYOUTS);

      const events = await count('select count(*) as n from outbox_events');
      expect(events, 'five events per successful payout').to.equal(PAYOUTS * 5);
      await until(
        'every event to be delivered',
        async () => (received.size === events ? true : undefined),
        120_000,
      );
      // Anything delivered twice would have arrived by the time the deliveries are all recorded.
      await until(
        'every delivery to be recorded',
        async () =>
          (await count(`select count(*) as n from webhook_deliveries where status = 'SUCCEEDED'`)) === events
            ? true
            : undefined,
        60_000,
      );
      expect(
        [...received.values()].filter((n) => n !== 1),
        'events delivered more than once',
      ).to.deep.equal([]);
    } finally {
      clearInterval(sampling);
    }
    expect(peakServerConnections, 'server connections at most the pool of 20').to.be.at.most(20);

    await Promise.all(instances.map((i) => i.stop()));
    const problems = instances
      .flatMap((instance) => instance.output().split('\n'))
      .filter((line) =>
        /prepared statement .* does not exist|query_wait_timeout|timeout exceeded when trying to connect|no more connections allowed/i.test(
          line,
        ),
      );
    expect(problems, 'statement and pool errors in the logs').to.deep.equal([]);
  });
});
