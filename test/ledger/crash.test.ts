import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { loadConfig } from '#src/config.ts';
import { Corridors } from '#src/corridors/corridors.ts';
import { createDeps } from '#src/create-deps.ts';
import { startEmbeddedPostgres } from '#src/db/embedded.ts';
import type { Deps } from '#src/deps.ts';
import { checkLedger } from '#src/ledger/checks.ts';
import { runLedgerOnce } from '#src/ledger/job.ts';
import { payoutEntries } from '#src/ledger/read.ts';
import { systemClock } from '#src/lib/clock.ts';
import type { CrashPoint } from '#src/lib/crash-points.ts';
import { createLogger } from '#src/lib/log.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { within } from '#src/lib/within.ts';
import { type RunningSandbox, startSandbox } from '#src/sandbox/server.ts';
import { secretsFrom } from '#src/secrets.ts';
import { createTenant, issueApiKey } from '#src/tenants/service.ts';
import { apiAt } from '../client.ts';
import { harness } from '../harness.ts';
import { createScratchDatabase } from '../scratch-database.ts';
import { skipBecause } from '../skip.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** One payout of the run: how it settles, how the merchant pays it, how it must end. */
interface Plan {
  /** The test's name for it, in the kills below and in failures. */
  name: string;
  suffix: string;
  settlement: 'USDT' | 'NGN';
  pay: 'exact' | 'over' | 'under-then-rest';
  ends: 'SUCCESSFUL' | 'FAILED';
}

// The processor's magic endings (docs/sandbox.md): 1001 rejects at once (the payout fails and is
// refunded), 1002 fails the first attempt retryably and pays the second, 1004 pays but never calls
// back (the service learns the outcome only by asking: a resubmit, or a status query); others pay.
// Payouts paid in USDT share the merchant's deposit address, where only the exact amount tells them
// apart: over- and underpayments are made on the bank's virtual accounts, one per payout.
const PLANS: readonly Plan[] = [
  { name: 'bank-silent', suffix: '1004', settlement: 'NGN', pay: 'exact', ends: 'SUCCESSFUL' },
  { name: 'chain-paid', suffix: '5678', settlement: 'USDT', pay: 'exact', ends: 'SUCCESSFUL' },
  { name: 'chain-refunded', suffix: '1001', settlement: 'USDT', pay: 'exact', ends: 'FAILED' },
  { name: 'bank-over-refunded', suffix: '1001', settlement: 'NGN', pay: 'over', ends: 'FAILED' },
  { name: 'chain-retried', suffix: '1002', settlement: 'USDT', pay: 'exact', ends: 'SUCCESSFUL' },
  { name: 'bank-under', suffix: '5680', settlement: 'NGN', pay: 'under-then-rest', ends: 'SUCCESSFUL' },
];

/**
 * Where the kills land: each a crash point (`src/lib/crash-points.ts`) for one payout. One process
 * dies per kill, at whichever armed kill its work reaches first; a payout's own kills come in the
 * order its life passes them. Every point is killed at once; the window that matters most, the
 * processor holding a transfer the service has not recorded, on the payout the processor never
 * calls back about, so that only the next dispatch (never a callback) can tell the service the outcome.
 */
/**
 * The points reached after a commit or a provider's answer: a kill that lands elsewhere in their
 * window leaves what they aim at, and they are not reached again. The others come before a commit,
 * which the kill rolls back, so they are reached again.
 */
const AFTER_COMMIT: ReadonlySet<CrashPoint> = new Set([
  'matching.committed',
  'dispatch.attempt-committed',
  'dispatch.submitted',
  'refund.sent',
]);

const KILLS: readonly { point: CrashPoint; payout: string }[] = [
  // The bank's credit callback matches in the service's own thread: rolled back, the bank's retry
  // or the statement pull brings the credit again.
  { point: 'matching.before-commit', payout: 'bank-silent' },
  // The chains' inflows match in the settlement job's thread: matched, not yet dispatched.
  { point: 'matching.committed', payout: 'chain-paid' },
  { point: 'dispatch.attempt-committed', payout: 'chain-paid' },
  { point: 'dispatch.submitted', payout: 'bank-silent' },
  { point: 'dispatch.before-commit', payout: 'bank-silent' },
  { point: 'refund.sent', payout: 'chain-refunded' },
  { point: 'refund.before-commit', payout: 'chain-refunded' },
];

/**
 * The jobs that move money, and write the ledger with it, in every process; the first also runs
 * the instructions job, for the payouts' payment instructions. The others have no work here (the
 * `ledger` job's fold of the balances the test runs itself at the end): each job thread left out
 * is one less to load at every start.
 */
const MONEY_JOBS = 'settlement,dispatch,refunds';

interface Tracked extends Plan {
  id: string;
  account: string;
  /** What the merchant sent, per rail reference (tx hash or bank session id). */
  sent: Map<string, string>;
  /** Every part sent: the payout is fully paid at the sandbox. */
  funded: boolean;
}

/** A loopback port nobody listens on now: the service takes it again on every restart. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const sum = (values: Iterable<Decimal | string>): Decimal => {
  let total = toDecimal(0);
  for (const v of values) total = total.plus(v);
  return total;
};

/**
 * kill -9 at chosen points of matching, dispatch and refund, with the ledger (issue 24,
 * "Reliability"): the service runs as a child process with its money jobs, against a database and
 * a sandbox this test holds, with the test's crash hook preloaded (`test/crash-hook.ts`). The
 * merchant pays every payout through the sandbox; each process dies by SIGKILL at the first armed
 * crash point its work reaches (KILLS), and the next one starts armed with the kills still to land,
 * the last with none. Once everything settled: every payout was paid (counted by reference in the
 * processor's own records) or refunded exactly once, no payment was lost, each payout's ledger
 * money matches its final state with nothing left in transit, every ledger transaction balances
 * and none was written twice, the ledger's checks find nothing, and the balances the `ledger` job
 * folds equal the sums of the entries.
 *
 * On the embedded database, the test holds PGlite and serves it over its socket to the child, as
 * `npm start` serves it to its own job threads: a connection cut by the kill rolls its
 * transaction back. Real processes on the real clock: the test waits for real work.
 */
describe('kill -9 at chosen points of matching, dispatch and refund: the ledger stays whole', function () {
  this.timeout(600_000);

  const stops: (() => Promise<void>)[] = [];
  const log = createLogger({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });
  let sandbox: RunningSandbox;
  let databaseUrl: string;
  let deps: Deps;
  let child: ChildProcess | undefined;
  let output: string[] = [];
  let apiKey: string;
  let port: number;
  let env: Record<string, string>;
  /** The crash hook's list of kills to land (test/crash-hook.ts). */
  let killsFile: string;
  const tracked: Tracked[] = [];
  /** The kills that landed, in order: `point@payout name`. */
  const landed: string[] = [];
  /** The kills another kill overtook in their window (see {@link passed}). */
  const overtaken: string[] = [];

  /**
   * Whether a payout's work went past a point reached after a commit or a provider's answer
   * while the kill was armed. A point fires whenever it is reached armed, so that means the process
   * died between the commit (or the answer) and the point, at another payout's kill in another
   * thread: the state left behind is the one the kill aims at, and the point will not come again.
   */
  async function passed(kill: { point: CrashPoint; payout: string }): Promise<boolean> {
    const p = tracked.find((t) => t.name === kill.payout)!;
    const outflows = await rows<{ id: string }>(`select id from outflows where payout_id = ?`, [p.id]);
    switch (kill.point) {
      case 'matching.committed':
        return (await rows(`select 1 from inflows where payout_id = ?`, [p.id])).length > 0;
      case 'dispatch.attempt-committed':
        return outflows.length > 0;
      case 'dispatch.submitted': {
        const references = new Set(outflows.map((o) => o.id));
        return sandbox.processor.payouts().some((r) => references.has(r.reference));
      }
      case 'refund.sent': {
        const [refund] = await rows<{ id: string }>(`select id from refunds where payout_id = ?`, [p.id]);
        const sends = [...sandbox.chains.sends('TRON'), ...sandbox.chains.sends('BSC')];
        return refund !== undefined && sends.some((s) => s.reference.startsWith(`${refund.id}:`));
      }
      default:
        return false;
    }
  }

  before(async function () {
    if (harness().embedded) {
      const pg = await startEmbeddedPostgres({ maxConnections: 100 });
      stops.push(pg.stop);
      databaseUrl = pg.url;
    } else {
      const scratch = await createScratchDatabase(harness().databaseUrl);
      if ('refused' in scratch)
        skipBecause(
          this,
          `a database of its own is needed and the role may not create one (${scratch.refused})`,
        );
      stops.push(scratch.drop);
      databaseUrl = scratch.url;
    }
    const dataDir = mkdtempSync(path.join(tmpdir(), 'payout-crash-'));
    stops.push(async () => rmSync(dataDir, { recursive: true, force: true }));
    killsFile = path.join(dataDir, 'crash-at');
    writeFileSync(killsFile, '');
    const secrets = secretsFrom({
      encryptionKey: randomBytes(32),
      adminToken: `adm_${randomUUID()}`,
      callbackSecret: randomBytes(32).toString('base64url'),
    });
    sandbox = await startSandbox({
      corridors: Corridors.load(),
      clock: systemClock,
      log,
      port: 0,
      // Blocks every 200 ms: two confirmations, and a refund's send settling, come on their own.
      blockIntervalMs: 200,
      callbackDelayMs: 100,
      // A callback the dead service missed comes again after 0.5 s, 1 s, 2 s, 4 s.
      callbackRetryBaseMs: 500,
      callbackSecret: secrets.callbackSecret,
    });
    stops.push(sandbox.close);
    port = await freePort();
    env = {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      PROVIDERS_URL: sandbox.url,
      ADMIN_TOKEN: secrets.adminToken,
      ENCRYPTION_KEY: secrets.encryptionKey.toString('base64'),
      PROVIDER_CALLBACK_SECRET: secrets.callbackSecret,
      LOG_LEVEL: 'info',
      DEMO_TENANT: 'false',
      WORKER_POLL_INTERVAL_MS: '100',
      INSTRUCTION_SWEEP_INTERVAL_MS: '200',
      BANK_STATEMENT_INTERVAL_MS: '500',
      OUTFLOW_QUERY_GRACE_MS: '500',
      CONFIRMATIONS_TRON: '2',
      CONFIRMATIONS_BSC: '2',
      DATABASE_POOL_SIZE: '3',
      // Stops the service should this test's process die without killing it (src/main.ts).
      npm_lifecycle_event: 'start',
      // Node's cache of compiled modules, which halves what loading the service and each job
      // thread costs. A killed process never writes it: a process that exits writes it first.
      NODE_COMPILE_CACHE: path.join(dataDir, 'compile-cache'),
    };
    await warmCompileCache();
    start(`instructions,${MONEY_JOBS}`);
    await serving();
    deps = await createDeps({
      config: loadConfig({ ...env, LOG_LEVEL: 'silent' }),
      databaseUrl,
      providersUrl: sandbox.url,
      secrets,
      log,
    });
    stops.push(async () => {
      await deps.reads.close();
      await deps.orm.close();
    });
    const em = deps.orm.em.fork();
    const tenant = await createTenant(em, { name: 'Crash Test Ltd', approved: true });
    apiKey = (await issueApiKey(em, { tenantId: tenant.id })).plaintext;
    await api('PUT', '/v1/refund-destinations', {
      currency: 'USDT',
      type: 'CRYPTO_ADDRESS',
      network: 'TRON',
      address: 'TLsV52sRDL79HXGGm9yzwKibb6BeruhUzy',
    });
    await api('PUT', '/v1/refund-destinations', {
      currency: 'NGN',
      type: 'BANK_ACCOUNT',
      bank_code: '058',
      account_number: '0123456789',
    });
  });

  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      const gone = exited(child);
      child.kill('SIGKILL');
      await gone;
    }
    for (const stop of stops.reverse()) await stop();
  });

  function exited(process: ChildProcess): Promise<void> {
    return new Promise((resolve) => {
      if (process.exitCode !== null || process.signalCode !== null) resolve();
      else process.once('exit', () => resolve());
    });
  }

  /** Arms the crash hook with the kills still to land (read by the running process at every point). */
  function arm(kills: readonly { point: CrashPoint; payout: string }[]): void {
    const id = (name: string) => tracked.find((p) => p.name === name)!.id;
    writeFileSync(killsFile, kills.map((k) => `${k.point} ${id(k.payout)}\n`).join(''));
  }

  /** Starts the service with its jobs and the test's crash hook. */
  function start(jobs: string): void {
    output = [];
    const started = spawn(
      process.execPath,
      ['-r', './src/node-guard.cjs', '--import', './test/crash-hook.ts', 'src/main.ts'],
      { cwd: ROOT, env: { ...env, JOBS: jobs, CRASH_AT_FILE: killsFile }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child = started;
    const keep = (chunk: Buffer) => {
      output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      if (output.length > 400) output = output.slice(-200);
    };
    started.stdout?.on('data', keep);
    started.stderr?.on('data', keep);
  }

  /** Loads what the service and its job threads load, in a process that exits and so writes the compile cache. */
  async function warmCompileCache(): Promise<void> {
    const imports = [
      `await import('./src/service.ts');`,
      `const { JOBS } = await import('./src/jobs/registry.ts');`,
      `for (const job of JOBS) await job.load();`,
      `await import('./src/jobs/worker.ts').catch(() => undefined);`,
      `const { readdirSync } = await import('node:fs');`,
      `for (const file of readdirSync('migrations')) await import('./migrations/' + file);`,
    ].join(' ');
    const warm = spawn(
      process.execPath,
      ['-r', './src/node-guard.cjs', '--input-type=module', '-e', imports],
      { cwd: ROOT, env, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let errors = '';
    warm.stderr?.on('data', (chunk: Buffer) => {
      errors += chunk.toString('utf8');
    });
    await exited(warm);
    expect(warm.exitCode, `warming the compile cache: ${errors}`).to.equal(0);
  }

  /** Waits until the service serves and all its jobs run (or start-up carried on without the slow ones). */
  async function serving(): Promise<void> {
    const started = child!;
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (started.exitCode !== null || started.signalCode !== null)
        throw new Error(`the service exited while starting:\n${output.join('\n')}`);
      if (
        output.some((l) => /"background jobs (running|not running yet; carrying on without them)"/.test(l))
      ) {
        const health = await fetch(`http://127.0.0.1:${port}/health`).catch(() => null);
        if (health?.ok) return;
      }
      if (Date.now() > deadline) throw new Error(`the service did not start:\n${output.join('\n')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * Waits for the running service to die at one of its armed kills (SIGKILL, by the crash hook)
   * and returns which one landed. Its leases (of its tasks, and of a rail's cursor it was reading:
   * the chains' and the bank statement's) would lapse only after a minute, and the next process
   * would then take that work; they are ended now instead, so that the run stays short.
   */
  async function killed(timeoutMs: number): Promise<string> {
    const dying = child!;
    const died = await within(exited(dying), timeoutMs);
    if (died.late) {
      // What the work waits for: the open tasks (a backoff, a lease) and the payouts' states.
      const open = await rows<Record<string, unknown>>(
        `select kind, subject_id, attempts, due_at, leased_until, last_error from tasks
          where done_at is null order by due_at`,
      );
      const states = await rows<Record<string, unknown>>(
        `select p.id, p.status, r.status as refund from payouts p left join refunds r on r.payout_id = p.id`,
      );
      throw new Error(
        `no armed crash point reached in ${timeoutMs / 1000} s (${readFileSync(killsFile, 'utf8')});` +
          ` open tasks ${JSON.stringify(open)}; payouts ${JSON.stringify(states)}; the service's last lines:\n` +
          output.slice(-40).join('\n'),
      );
    }
    const line = output.find((l) => l.startsWith('crash point '));
    expect(dying.signalCode, `killed by its crash hook:\n${output.slice(-40).join('\n')}`).to.equal(
      'SIGKILL',
    );
    expect(line, 'the crash hook said where').to.be.a('string');
    const em = deps.orm.em.fork();
    await em.execute(`update tasks set leased_until = null where leased_until is not null`);
    await em.execute(
      `update rail_cursors set lease_token = null, lease_until = null where lease_until is not null`,
    );
    const [, , point, payoutId] = line!.split(' ');
    return `${point}@${tracked.find((p) => p.id === payoutId)?.name ?? payoutId}`;
  }

  async function api(method: string, route: string, body?: unknown): Promise<any> {
    return apiAt(`http://127.0.0.1:${port}`, apiKey, method, route, body);
  }

  async function rows<R>(query: string, params: unknown[] = []): Promise<R[]> {
    return deps.orm.em.fork().execute<R[]>(query, params);
  }

  /** The merchant's side: one transfer to the payout's instruction, through the sandbox's pay endpoints. */
  async function pay(p: Tracked, amount: string): Promise<void> {
    const [instruction] = await rows<{ rail: string; chain: string | null; account_unique: string }>(
      `select rail, chain, account_unique from payment_instructions where payout_id = ?`,
      [p.id],
    );
    const crypto = instruction!.rail === 'CRYPTO';
    const res = await fetch(
      sandbox.url + (crypto ? '/sandbox/crypto/transfers' : '/sandbox/bank/transfers'),
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(
          crypto
            ? {
                network: instruction!.chain,
                to_address: instruction!.account_unique,
                amount,
                currency: 'USDT',
              }
            : { account_number: instruction!.account_unique, amount, currency: 'NGN' },
        ),
      },
    );
    const body = (await res.json()) as { tx_hash?: string; session_id?: string };
    expect(res.status, JSON.stringify(body)).to.equal(201);
    p.sent.set((crypto ? body.tx_hash : body.session_id)!, amount);
  }

  /** What each payout is owed: all of it (more when overpaid), or all but a short part to come later. */
  async function payFirstParts(): Promise<void> {
    for (const p of tracked) {
      const [row] = await rows<{ expected_amount: string }>(
        `select expected_amount from payment_instructions where payout_id = ?`,
        [p.id],
      );
      const expected = toDecimal(row!.expected_amount);
      if (p.pay === 'exact') await pay(p, expected.toFixed());
      else if (p.pay === 'over')
        await pay(p, expected.plus(p.settlement === 'USDT' ? '1.5' : '500').toFixed());
      else await pay(p, expected.minus(shortPart(p)).toFixed());
      p.funded = p.pay !== 'under-then-rest';
    }
  }

  const shortPart = (p: Plan) => (p.settlement === 'USDT' ? '3' : '1000');

  /** Pays the rest of each payout paid short, once the service recorded its first part. */
  async function payRests(): Promise<void> {
    for (const p of tracked.filter((t) => !t.funded)) {
      const [row] = await rows<{ n: string }>(`select count(*) as n from inflows where payout_id = ?`, [
        p.id,
      ]);
      if (Number(row!.n) === 0) continue;
      await pay(p, shortPart(p));
      p.funded = true;
    }
  }

  it('lands every kill where it was aimed, pays and refunds every payout once, and keeps the ledger whole', async () => {
    for (const [i, plan] of PLANS.entries()) {
      const account = `02${String(i).padStart(4, '0')}${plan.suffix}`;
      const payout = await api('POST', '/v1/payouts', {
        destination_type: 'BANK_ACCOUNT',
        destination_country: 'NG',
        destination_currency: 'NGN',
        destination_amount: 50_000 + i * 10,
        destination_account_unique: account,
        destination_provider_name: 'Guaranty Trust Bank',
        destination_provider_code: '058',
        destination_account_name: 'ADAEZE OKONKWO',
        settlement_currency: plan.settlement,
      });
      tracked.push({ ...plan, id: payout.id, account, sent: new Map(), funded: false });
    }
    // Instructions come from the instructions job: wait for all before paying.
    const ids = tracked.map((p) => p.id);
    await until('every instruction', async () => {
      const [row] = await rows<{ n: string }>(
        `select count(*) as n from payment_instructions where payout_id = any(?::uuid[])`,
        [pgArray(ids)],
      );
      return Number(row!.n) === PLANS.length;
    });

    // Every kill armed at once: each process dies at the first one its work reaches, and the next
    // starts armed with the rest. The short payment's rest comes once its first part is recorded.
    let left = [...KILLS];
    arm(left);
    await payFirstParts();
    while (left.length > 0) {
      const kill = await killed(120_000);
      expect(
        left.map((k) => `${k.point}@${k.payout}`),
        `landed ${kill} after ${landed.join(', ') || 'none'}`,
      ).to.include(kill);
      landed.push(kill);
      left = left.filter((k) => `${k.point}@${k.payout}` !== kill);
      for (const k of left.filter((k) => AFTER_COMMIT.has(k.point))) {
        if (!(await passed(k))) continue;
        landed.push(`${k.point}@${k.payout}`);
        overtaken.push(`${k.point}@${k.payout} (by ${kill})`);
        left = left.filter((l) => l !== k);
      }
      arm(left);
      start(MONEY_JOBS);
      await payRests();
    }

    // Let everything settle on the last process, armed with nothing.
    await until(
      'every payout to end, and every refund to arrive',
      async () => {
        await payRests();
        const done = await rows<{ id: string; status: string; refund: string | null }>(
          `select p.id, p.status, r.status as refund from payouts p left join refunds r on r.payout_id = p.id`,
        );
        return done.every(
          (p) => p.status === 'SUCCESSFUL' || (p.status === 'FAILED' && p.refund === 'SUCCESSFUL'),
        );
      },
      120_000,
    );
    const stopping = exited(child!);
    child!.kill('SIGTERM');
    await stopping;
    expect(child!.exitCode, `stopped cleanly:\n${output.slice(-40).join('\n')}`).to.equal(0);

    const payouts = await rows<{
      id: string;
      status: string;
      tenant_id: string;
      destination_amount: string;
      settlement_currency: string;
    }>(`select id, status, tenant_id, destination_amount, settlement_currency from payouts`);
    const refunds = await rows<{
      id: string;
      payout_id: string;
      refund_amount: string;
      received_currency: string;
    }>(`select id, payout_id, refund_amount, received_currency from refunds`);
    const processor = sandbox.processor.payouts();
    const sends = [...sandbox.chains.sends('TRON'), ...sandbox.chains.sends('BSC')];
    const transfers = sandbox.bank.transfers();
    const inflows = await rows<{
      external_ref: string;
      payout_id: string | null;
      state: string;
      amount: string;
    }>(`select external_ref, payout_id, state, amount from inflows`);

    const outflows = await rows<{ id: string; payout_id: string }>(`select id, payout_id from outflows`);

    for (const p of tracked) {
      const payout = payouts.find((x) => x.id === p.id)!;
      const what = `payout ${p.name} ${p.id}`;
      expect(payout.status, what).to.equal(p.ends);

      // Paid exactly once, or not at all: the processor's own records, counted by the references
      // of the payout's attempts and by the beneficiary's account.
      const own = new Set(outflows.filter((o) => o.payout_id === p.id).map((o) => o.id));
      const expected = p.ends === 'SUCCESSFUL' ? [toDecimal(payout.destination_amount).toFixed()] : [];
      const paidByReference = processor.filter((r) => own.has(r.reference) && r.status === 'SUCCESSFUL');
      expect(
        paidByReference.map((r) => r.amount.toFixed()),
        `${what}: paid by the processor, by reference`,
      ).to.deep.equal(expected);
      const paid = processor.filter((r) => r.accountUnique === p.account && r.status === 'SUCCESSFUL');
      expect(
        paid.map((r) => r.amount.toFixed()),
        `${what}: paid by the processor, to its beneficiary`,
      ).to.deep.equal(expected);

      // No settlement lost: each payment the merchant made is one inflow of this payout, matched.
      for (const [ref, amount] of p.sent) {
        const recorded = inflows.filter((f) => f.external_ref === ref);
        expect(
          recorded.map((f) => [f.payout_id, toDecimal(f.amount).toFixed()]),
          `${what}: inflow ${ref}`,
        ).to.deep.equal([[p.id, toDecimal(amount).toFixed()]]);
        expect(recorded[0]!.state, `${what}: inflow ${ref}`).to.be.oneOf(['MATCHED', 'FOR_REFUND']);
      }
      const received = sum(p.sent.values());

      // Refunded at most once: what the chains and the bank sent, by the refund's reference.
      const refund = refunds.find((r) => r.payout_id === p.id);
      const refundSends = [
        ...sends.filter((s) => refund && s.reference.startsWith(`${refund.id}:`) && s.tx !== null),
        ...transfers.filter(
          (t) => refund && t.reference.startsWith(`${refund.id}:`) && t.status === 'SUCCESSFUL',
        ),
      ];
      if (p.ends === 'FAILED') {
        expect(refund, `${what}: its refund`).to.not.equal(undefined);
        expect(
          refundSends.map((s) => s.amount.toFixed()),
          `${what}: sent back`,
        ).to.deep.equal([toDecimal(refund!.refund_amount).toFixed()]);
      } else expect(refund, `${what}: no refund`).to.equal(undefined);

      // The payout's ledger money matches its final state.
      const entries = await payoutEntries(deps.sql, p.id);
      // Nothing left with the payout, and nothing of its money in transit (at the processor, or on
      // a refund's way back).
      const left = new Map<string, Decimal>();
      for (const e of entries) {
        const where = e.account === `tenants:${payout.tenant_id}:payouts:${p.id}` ? 'held' : e.account;
        if (where !== 'held' && !where.startsWith('transit:')) continue;
        const key = `${where} ${e.currency}`;
        left.set(key, (left.get(key) ?? toDecimal(0)).plus(e.amount));
      }
      for (const [where, amount] of left) expect(amount.toFixed(), `${what}: ${where}`).to.equal('0');
      const moved = (movement: string) =>
        sum(entries.filter((e) => e.movement === movement).map((e) => e.amount)).toFixed();
      expect(moved('money_received'), `${what}: received`).to.equal(received.toFixed());
      if (p.ends === 'SUCCESSFUL') {
        expect(moved('paid_out'), `${what}: paid out`).to.equal(
          toDecimal(payout.destination_amount).negated().toFixed(),
        );
        expect(moved('refunded'), `${what}: refunded`).to.equal('0');
      } else {
        expect(moved('paid_out'), `${what}: paid out`).to.equal('0');
        expect(moved('refunded'), `${what}: refunded`).to.equal(
          toDecimal(refund!.refund_amount).negated().toFixed(),
        );
      }
    }

    // Nothing paid or sent back that no payout of the books explains; the processor holds no
    // transfer the service has no attempt for (a dropped or rewritten one).
    const references = new Set(outflows.map((o) => o.id));
    expect(
      processor.filter((r) => !references.has(r.reference)).map((r) => `${r.reference} ${r.accountUnique}`),
      'transfers at the processor that are no attempt of the service',
    ).to.deep.equal([]);
    const accounts = new Set(tracked.map((p) => p.account));
    expect(processor.filter((r) => !accounts.has(r.accountUnique))).to.deep.equal([]);
    const refundIds = refunds.map((r) => r.id);
    expect(
      [...sends, ...transfers].filter((s) => !refundIds.some((id) => s.reference.startsWith(`${id}:`))),
    ).to.deep.equal([]);

    // Every ledger transaction balances in every currency.
    expect(
      await rows(
        `select transaction_id, currency, sum(amount)::text as off from ledger_entries
          group by 1, 2 having sum(amount) <> 0`,
      ),
    ).to.deep.equal([]);
    // No transition wrote the same movement twice: a transition may write several ledger
    // transactions (an outflow that goes from PENDING straight to SUCCESSFUL writes SENT and
    // PAID), never two alike.
    expect(
      await rows(
        `select cause_object, cause_id, transition, entries, count(*)::int as times
           from (select transaction_id, cause_object, cause_id, transition,
                        string_agg(account || ' ' || currency || ' ' || amount::text, ', '
                                   order by account, currency, amount) as entries
                   from ledger_entries group by 1, 2, 3, 4) t
          group by 1, 2, 3, 4 having count(*) > 1`,
      ),
    ).to.deep.equal([]);

    // The ledger's checks, as the `ledger` job and `ledger check --all` run them, find nothing.
    const checked = await checkLedger(deps.sql, { since: null, now: new Date(), log });
    expect(checked.violations).to.deep.equal([]);

    // One pass of the `ledger` job folds what is pending: the balances are then the entries' sums.
    await runLedgerOnce(deps);
    expect(await rows(`select * from ledger_balance_deltas`)).to.deep.equal([]);
    const folded = await rows<{ account: string; currency: string; balance: string; entries: string }>(
      `select account, currency, balance::text, entries::text from ledger_balances`,
    );
    const summed = await rows<{ account: string; currency: string; balance: string; entries: string }>(
      `select regexp_replace(account, '^(tenants:[^:]+:payouts|collection:bank):[^:]+$', '\\1') as account,
              currency, sum(amount)::text as balance, count(*)::text as entries
         from ledger_entries group by 1, 2`,
    );
    const line = (r: { account: string; currency: string; balance: string; entries: string }) =>
      `${r.account} ${r.currency} ${toDecimal(r.balance).toFixed()} (${r.entries})`;
    expect(folded.map(line).sort()).to.deep.equal(summed.map(line).sort());
    expect(summed.length, 'some balances').to.be.greaterThan(5);

    // Every kill landed where it was aimed.
    // Each point is still called: a kill counted as overtaken proves its window only so.
    const reached = new Set(
      readFileSync(`${killsFile}.reached`, 'utf8')
        .split('\n')
        .map((line) => line.split(' ')[0]),
    );
    expect(
      KILLS.map((k) => k.point).filter((point) => !reached.has(point)),
      'points never reached',
    ).to.deep.equal([]);
    expect([...landed].sort(), `overtaken in their window: ${overtaken.join(', ') || 'none'}`).to.deep.equal(
      KILLS.map((k) => `${k.point}@${k.payout}`).sort(),
    );
  });
});

/** A list of ids as one PostgreSQL array parameter (a JavaScript array would be spread into a list). */
function pgArray(ids: readonly string[]): string {
  return `{${ids.join(',')}}`;
}

async function until(what: string, ok: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
