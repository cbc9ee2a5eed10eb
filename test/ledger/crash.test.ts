import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
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
import { createLogger } from '#src/lib/log.ts';
import { type Decimal, toDecimal } from '#src/lib/money.ts';
import { type RunningSandbox, startSandbox } from '#src/sandbox/server.ts';
import { secretsFrom } from '#src/secrets.ts';
import { createTenant, issueApiKey } from '#src/tenants/service.ts';
import { apiAt } from '../client.ts';
import { harness } from '../harness.ts';
import { createScratchDatabase } from '../scratch-database.ts';
import { skipBecause } from '../skip.ts';

const ROOT = new URL('../..', import.meta.url).pathname;

/** What one payout of the run is: how it settles, how the merchant pays it, how it must end. */
interface Plan {
  suffix: string;
  settlement: 'USDT' | 'NGN';
  pay: 'exact' | 'over' | 'under-then-rest';
  ends: 'SUCCESSFUL' | 'FAILED';
}

// The processor's magic endings (docs/sandbox.md): 1001 rejects at once (the payout fails and is
// refunded), 1002 fails the first attempt retryably and pays the second; others pay. Payouts paid
// in USDT share the merchant's deposit address, where only the exact amount tells them apart:
// over- and underpayments are made on the bank's virtual accounts, one per payout.
const KINDS: readonly Plan[] = [
  { suffix: '5678', settlement: 'USDT', pay: 'exact', ends: 'SUCCESSFUL' },
  { suffix: '5679', settlement: 'NGN', pay: 'exact', ends: 'SUCCESSFUL' },
  { suffix: '1001', settlement: 'USDT', pay: 'exact', ends: 'FAILED' },
  { suffix: '1001', settlement: 'NGN', pay: 'over', ends: 'FAILED' },
  { suffix: '1002', settlement: 'USDT', pay: 'exact', ends: 'SUCCESSFUL' },
  { suffix: '5680', settlement: 'NGN', pay: 'under-then-rest', ends: 'SUCCESSFUL' },
];
const PAYOUTS = 24;
const WAVES = 6;
/** Kills that must have had each phase in flight; the rounds go on (up to MAX_ROUNDS) until they have. */
const KILLS_PER_PHASE = 2;
/** Rounds at most (one kill each); more than WAVES only while a phase was not hit often enough. */
const MAX_ROUNDS = 10;
const PHASES = ['matching', 'dispatch', 'refund'] as const;
type Phase = (typeof PHASES)[number];

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
 * kill -9 during matching, dispatch and refund, with the ledger (issue 24, "Reliability"): the
 * service runs as a child process with all its jobs, against a database and a sandbox this test
 * holds; the merchant pays payouts through the sandbox in waves while the test SIGKILLs the
 * process whenever the phase it aims at has work in flight, and starts it again. Once everything
 * settled: every payout was paid or refunded once at the rails, no payment was lost, each payout's
 * ledger money matches its final state, every ledger transaction balances, the ledger's checks
 * find nothing, and the balances the `ledger` job folds equal the sums of the entries.
 *
 * On the embedded database, the test holds PGlite and serves it over its socket to the child, as
 * `npm start` serves it to its own job threads: a connection cut by the kill rolls its
 * transaction back. Real processes on the real clock: the test waits for real work.
 */
describe('kill -9 during matching, dispatch and refund: the ledger stays whole', function () {
  this.timeout(900_000);

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
  const tracked: Tracked[] = [];
  const kills: { aimed: Phase; inFlight: Phase[] }[] = [];

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
      // The jobs that move money and write the ledger; the others have no work here.
      JOBS: 'instructions,settlement,dispatch,refunds,ledger',
      // Stops the service should this test's process die without killing it (src/main.ts).
      npm_lifecycle_event: 'start',
    };
    await start();
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

  /** Starts the service with every job and waits until it serves and all its jobs run. */
  async function start(): Promise<void> {
    output = [];
    const started = spawn(process.execPath, ['-r', './src/node-guard.cjs', 'src/main.ts'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    const keep = (chunk: Buffer) => {
      output.push(...chunk.toString('utf8').split('\n').filter(Boolean));
      if (output.length > 400) output = output.slice(-200);
    };
    started.stdout?.on('data', keep);
    started.stderr?.on('data', keep);
    const deadline = Date.now() + 120_000;
    for (;;) {
      if (started.exitCode !== null || started.signalCode !== null)
        throw new Error(`the service exited while starting:\n${output.join('\n')}`);
      // Once every job thread is running, or start-up gave up waiting for the slow ones (a loaded
      // machine): those keep starting, and pick up their work when they run.
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

  /** SIGKILL: no handler runs, no transaction commits, no lease is given back. */
  async function kill(): Promise<void> {
    const running = child!;
    if (running.exitCode !== null || running.signalCode !== null)
      throw new Error(`the service exited on its own:\n${output.join('\n')}`);
    const gone = exited(running);
    running.kill('SIGKILL');
    await gone;
    expect(running.signalCode).to.equal('SIGKILL');
    // The dead process's task leases would lapse after a minute, and the next process would then
    // claim those tasks; end them now instead, so that the run stays short.
    await deps.orm.em.fork().execute(`update tasks set leased_until = null where leased_until is not null`);
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

  /**
   * Pays one wave's payouts (short, for those paid in two parts) and the rest of the earlier waves'
   * short ones; a wave past the last pays only what is still owed.
   */
  async function payWave(wave: number): Promise<void> {
    for (const [index, p] of tracked.entries()) {
      const first = index % WAVES === wave;
      const rest = index % WAVES < wave && !p.funded;
      if (!first && !rest) continue;
      const [row] = await rows<{ expected_amount: string }>(
        `select expected_amount from payment_instructions where payout_id = ?`,
        [p.id],
      );
      const expected = toDecimal(row!.expected_amount);
      const short = p.settlement === 'USDT' ? '3' : '1000';
      if (rest) await pay(p, short);
      else if (p.pay === 'exact') await pay(p, expected.toFixed());
      else if (p.pay === 'over')
        await pay(p, expected.plus(p.settlement === 'USDT' ? '1.5' : '500').toFixed());
      else await pay(p, expected.minus(short).toFixed());
      p.funded = rest || p.pay !== 'under-then-rest';
    }
  }

  /** The phases with work in flight now, as the database shows it. */
  async function inFlight(): Promise<Phase[]> {
    const funded = tracked.filter((p) => p.funded).map((p) => p.id);
    const [counts] = await rows<{ matching: string; dispatch: string; refund: string }>(
      `select
         count(*) filter (where p.status = 'PENDING_PAYMENT' and p.id = any(?::uuid[])) as matching,
         count(*) filter (where p.status in ('PAYMENT_RECEIVED', 'PROCESSING')) as dispatch,
         count(*) filter (where p.status = 'FAILED' and (r.status is null or r.status <> 'SUCCESSFUL')) as refund
       from payouts p left join refunds r on r.payout_id = p.id`,
      [pgArray(funded)],
    );
    return PHASES.filter((phase) => Number(counts![phase]) > 0);
  }

  /**
   * Kills the service once the phase it aims at has work in flight (a little later, at random), or
   * after 30 s. Aimed at dispatch, it first waits up to 5 s for an attempt whose outcome is not yet
   * recorded (an outflow PENDING: maybe at the processor already) and kills at once.
   */
  async function killDuring(aimed: Phase): Promise<void> {
    if (aimed === 'dispatch') {
      const until = Date.now() + 5_000;
      while (Date.now() < until) {
        const [row] = await rows<{ n: string }>(
          `select count(*) as n from outflows where status = 'PENDING'`,
        );
        if (Number(row!.n) > 0) {
          const atKill = await inFlight();
          await kill();
          kills.push({ aimed, inFlight: atKill });
          return;
        }
        await new Promise((r) => setTimeout(r, 10));
      }
    }
    const deadline = Date.now() + 30_000;
    let phases = await inFlight();
    while (!phases.includes(aimed) && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      phases = await inFlight();
    }
    await new Promise((r) => setTimeout(r, randomInt(0, 120)));
    const atKill = await inFlight();
    await kill();
    kills.push({ aimed, inFlight: atKill });
  }

  /** How many kills had each phase in flight. */
  const hits = (phase: Phase) => kills.filter((k) => k.inFlight.includes(phase)).length;

  it('pays and refunds every payout once, loses no payment, and keeps every ledger transaction balanced', async () => {
    for (let i = 0; i < PAYOUTS; i++) {
      const plan = KINDS[i % KINDS.length]!;
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
      return Number(row!.n) === PAYOUTS;
    });

    // Rounds: pay a wave, then kill while the phase aimed at (the one hit least so far) has work
    // in flight, and start again; after the last wave, until every phase was hit often enough.
    let round = 0;
    for (; round < WAVES || (round < MAX_ROUNDS && PHASES.some((p) => hits(p) < KILLS_PER_PHASE)); round++) {
      await payWave(round);
      const aimed = [...PHASES].sort((a, b) => hits(a) - hits(b))[0]!;
      await killDuring(aimed);
      await start();
    }
    await payWave(Math.max(round, WAVES));

    // Let everything settle on the last process.
    await until(
      'every payout to end, and every refund to arrive',
      async () => {
        const done = await rows<{ id: string; status: string; refund: string | null }>(
          `select p.id, p.status, r.status as refund from payouts p left join refunds r on r.payout_id = p.id`,
        );
        return done.every(
          (p) => p.status === 'SUCCESSFUL' || (p.status === 'FAILED' && p.refund === 'SUCCESSFUL'),
        );
      },
      90_000,
    );
    const stopping = exited(child!);
    child!.kill('SIGTERM');
    await stopping;

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

    for (const p of tracked) {
      const payout = payouts.find((x) => x.id === p.id)!;
      const what = `payout ${p.id} (${p.suffix}, ${p.settlement}, ${p.pay})`;
      expect(payout.status, what).to.equal(p.ends);

      // Paid at most once: the processor's own records, by the beneficiary's account.
      const paid = processor.filter((r) => r.accountUnique === p.account && r.status === 'SUCCESSFUL');
      expect(
        paid.map((r) => r.amount.toFixed()),
        `${what}: paid by the processor`,
      ).to.deep.equal(p.ends === 'SUCCESSFUL' ? [toDecimal(payout.destination_amount).toFixed()] : []);

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
      const own = entries.filter((e) => e.account === `tenants:${payout.tenant_id}:payouts:${p.id}`);
      const held = new Map<string, Decimal>();
      for (const e of own) held.set(e.currency, (held.get(e.currency) ?? toDecimal(0)).plus(e.amount));
      for (const [currency, amount] of held)
        expect(amount.toFixed(), `${what}: holds ${currency}`).to.equal('0');
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

    // Nothing paid or sent back that no payout of the books explains.
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

    // The kills hit each phase with work in flight.
    for (const phase of PHASES) {
      expect(hits(phase), `kills with ${phase} in flight: ${JSON.stringify(kills)}`).to.be.at.least(
        KILLS_PER_PHASE,
      );
    }
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
