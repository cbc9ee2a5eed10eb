import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { cliEnv, HelpText, reportOf, run, usage } from '#src/cli/admin.ts';
import { failedRefund, heldPayout, strayInflow } from '../approvals/fixtures.ts';
import { call, errorOf, uniqueName } from '../client.ts';
import { harness } from '../harness.ts';
import { cliAs, newOperator } from '../operators/fixtures.ts';
import { payoutReadyMerchant } from '../payouts/fixtures.ts';

const exec = promisify(execFile);

describe('admin CLI over tRPC', () => {
  const env = () => ({ serviceUrl: harness().url, token: harness().adminToken });

  it('creates a tenant, issues a key that works, and revokes it', async () => {
    const name = uniqueName('Acme Payouts Ltd');
    const tenant = (await run(['tenant', 'create', '--name', name], env())) as Record<string, unknown>;
    expect(tenant).to.include({ name, payouts_approved: false });
    expect(tenant.id).to.be.a('string');

    const approved = (await run(['tenant', 'approve', String(tenant.id)], env())) as Record<string, unknown>;
    expect(approved.payouts_approved).to.equal(true);

    const key = (await run(
      ['key', 'issue', '--tenant', String(tenant.id), '--scopes', 'banks:read'],
      env(),
    )) as {
      id: string;
      api_key: string;
      scopes: string[];
    };
    expect(Object.keys(key).sort()).to.deep.equal(['api_key', 'id', 'scopes']);
    expect(key.api_key).to.match(/^sk_[A-Za-z0-9_-]{43}$/);
    expect(key.scopes).to.deep.equal(['banks:read']);

    const ok = await call('GET', '/v1/banks?country=NG&destination_type=BANK_ACCOUNT', { key: key.api_key });
    expect(ok.status).to.equal(200);
    const denied = await call('POST', '/v1/banks/resolve', { key: key.api_key, body: {} });
    expect(errorOf(denied).code).to.equal('INSUFFICIENT_SCOPES');

    // The tenant's keys: never the key itself, only its visible start.
    type Listed = { data: Record<string, unknown>[]; meta: { has_more: boolean } };
    const listed = (await run(['key', 'list', '--tenant', String(tenant.id)], env())) as Listed;
    expect(listed.data).to.have.length(1);
    expect(Object.keys(listed.data[0]!).sort()).to.deep.equal([
      'created_at',
      'id',
      'prefix',
      'revoked_at',
      'scopes',
    ]);
    expect(listed.data[0]).to.deep.include({ id: key.id, scopes: ['banks:read'], revoked_at: null });
    expect(key.api_key.startsWith(String(listed.data[0]!.prefix))).to.equal(true);
    expect(key.api_key).to.not.equal(listed.data[0]!.prefix);
    expect(JSON.stringify(listed)).to.not.include(key.api_key);

    await run(['key', 'revoke', key.id], env());
    const revoked = await call('GET', '/v1/banks?country=NG&destination_type=BANK_ACCOUNT', {
      key: key.api_key,
    });
    expect(revoked.status).to.equal(401);
    const after = (await run(['key', 'list', '--tenant', String(tenant.id)], env())) as Listed;
    expect(after.data[0]!.revoked_at).to.be.a('string');
  });

  it('issues keys with every merchant scope by default', async () => {
    const tenant = (await run(
      ['tenant', 'create', '--name', uniqueName('Default Scopes'), '--approved'],
      env(),
    )) as {
      id: string;
      payouts_approved: boolean;
    };
    expect(tenant.payouts_approved).to.equal(true);
    const key = (await run(['key', 'issue', '--tenant', tenant.id], env())) as { scopes: string[] };
    expect(key.scopes).to.include.members([
      'payouts:write',
      'payouts:read',
      'refunds:manage',
      'refunds:read',
      'rates:read',
      'identity:enquiry',
      'webhooks:manage',
    ]);
  });

  it('filters approval list on the server by proposer, decision, action and target', async () => {
    const [ada, ben, approver] = await Promise.all([
      newOperator('operator'),
      newOperator('operator'),
      newOperator('approver'),
    ]);
    // Proposing checks that the move would run: each needs a target in the state its move needs.
    const merchant = await payoutReadyMerchant();
    const [{ payoutId: payout }, { refundId: refund }, { inflowId: inflow }] = [
      await heldPayout(merchant),
      await failedRefund({ corrected: true }),
      await strayInflow(merchant),
    ];
    const fail = (await cliAs(ada)('payout', 'fail', payout, '--note', 'held for a week')).approval.id;
    const retry = (await cliAs(ada)('refund', 'retry', refund, '--note', 'address fixed')).approval.id;
    const back = (
      await cliAs(ben)('inflow', 'return', inflow, '--reference', 'FT1', '--note', 'sent back by hand')
    ).approval.id;
    await cliAs(approver)('approval', 'reject', retry, '--note', 'not fixed yet');

    const ids = async (...filters: string[]) =>
      (
        (await cliAs()('approval', 'list', ...filters, '--limit', '100')) as { data: { id: string }[] }
      ).data.map((a) => a.id);
    expect(await ids('--proposer', ada.id)).to.deep.equal([retry, fail]);
    expect(await ids('--proposer', ada.id, '--decided')).to.deep.equal([retry]);
    expect(await ids('--proposer', ada.id, '--state', 'PENDING')).to.deep.equal([fail]);
    expect(await ids('--proposer', ben.id, '--action', 'inflow.return')).to.deep.equal([back]);
    expect(await ids('--proposer', ben.id, '--action', 'payout.fail')).to.deep.equal([]);
    expect(await ids('--target', payout)).to.deep.equal([fail]);
    expect(await ids('--action', 'refund.retry', '--target', refund, '--decided')).to.deep.equal([retry]);
  });

  it('is refused with a wrong admin token', async () => {
    const error = await run(['tenant', 'list'], {
      serviceUrl: harness().url,
      token: 'wrong-token-wrong-token',
    }).then(
      () => null,
      (err: Error) => err,
    );
    expect(error?.message).to.match(/admin bearer token/);
  });

  it('prints one JSON object on stdout as a process, and JSON errors on stderr', async () => {
    const cli = 'src/cli/admin.ts';
    const envVars = { ...process.env, SERVICE_URL: harness().url, ADMIN_TOKEN: harness().adminToken };
    const name = uniqueName('From the shell');
    const { stdout } = await exec(process.execPath, [cli, 'tenant', 'create', '--name', name], {
      env: envVars,
    });
    const printed = JSON.parse(stdout) as Record<string, unknown>;
    expect(printed).to.include({ name, payouts_approved: false });

    const failed = await exec(
      process.execPath,
      [cli, 'tenant', 'approve', '00000000-0000-4000-8000-000000000000'],
      { env: envVars },
    ).then(
      () => null,
      (err: { code: number; stderr: string }) => err,
    );
    expect(failed?.code).to.equal(1);
    expect(JSON.parse(failed?.stderr ?? '{}').error.code).to.equal('NOT_FOUND');

    const usage = await exec(process.execPath, [cli, 'tenant', 'approve'], { env: envVars }).then(
      () => null,
      (err: { code: number; stdout: string; stderr: string }) => err,
    );
    expect(usage?.code).to.equal(2);
    expect(usage?.stdout).to.equal('');
    expect(usage?.stderr.trim().split('\n'), 'one line, not the whole usage').to.have.length(1);
    expect(JSON.parse(usage?.stderr ?? '{}').error).to.deep.equal({
      code: 'USAGE',
      message: 'TENANT_ID is required',
      usage: 'npm run -s admin -- tenant approve TENANT_ID',
    });
  });

  describe('as a command line', () => {
    /**
     * What the CLI process would print for `args`: stdout text, or the error object of stderr and
     * the exit code, computed in this process (one process start costs seconds on this machine).
     */
    const outcome = async (args: string[], vars: Record<string, string> = {}) => {
      let serviceUrl = '';
      try {
        const result = await run(args, () => {
          const resolved = cliEnv(vars);
          serviceUrl = resolved.serviceUrl;
          return resolved;
        });
        return {
          exit: 0,
          stdout: result instanceof HelpText ? result.text : JSON.stringify(result),
          error: null,
        };
      } catch (err) {
        const { exit, error } = reportOf(err, serviceUrl);
        return { exit, stdout: '', error: error as Record<string, string> };
      }
    };
    const asRoot = () => ({ SERVICE_URL: harness().url, ADMIN_TOKEN: harness().adminToken });

    it('prints help for help, --help and a command with --help, without a service or a token', async () => {
      for (const args of [['help'], ['--help'], ['-h'], []]) {
        const { exit, stdout } = await outcome(args);
        expect(exit, args.join(' ')).to.equal(0);
        expect(stdout).to.match(/^usage: npm run -s admin -- <command>/);
        for (const command of ['tenant create', 'operator create', 'inflow attribute', 'webhooks dead'])
          expect(stdout).to.include(command);
      }
      expect((await outcome(['help', 'tenant'])).stdout)
        .to.include('tenant approve')
        .and.not.include('operator create');
      const one = await outcome(['key', 'issue', '--help']);
      expect(one.exit).to.equal(0);
      expect(one.stdout).to.include('key issue --tenant TENANT_ID [--scopes s1,s2]');
      expect((await outcome(['approval', 'list', '--help'])).stdout)
        .to.include('[--decided]')
        .and.include('[--action inflow.attribute|')
        .and.include('[--proposer OPERATOR_ID] [--target ID]');
    });

    it('prints the help of one noun or one command however it is asked for', async () => {
      for (const args of [
        ['tenant', '--help'],
        ['tenant', '-h'],
        ['help', 'tenant'],
        ['--help', 'tenant'],
      ]) {
        const { exit, stdout } = await outcome(args);
        expect(exit, args.join(' ')).to.equal(0);
        expect(stdout, args.join(' ')).to.include('tenant approve').and.not.include('operator create');
      }
      for (const args of [
        ['help', 'webhooks', 'redeliver'],
        ['webhooks', 'redeliver', '--help'],
      ]) {
        const { exit, stdout } = await outcome(args);
        expect(exit, args.join(' ')).to.equal(0);
        expect(stdout.split('\n')[0]).to.equal(
          'usage: npm run -s admin -- webhooks redeliver DELIVERY_ID | --tenant TENANT_ID --since ISO_TIME [--until ISO_TIME]',
        );
      }
      const cases: [string[], string][] = [
        [
          ['tenant'],
          'tenant needs a command: create, approve, list, payee-policy; try: npm run -s admin -- help tenant',
        ],
        [
          ['help', 'tenant', 'explode'],
          'unknown command tenant explode; try: npm run -s admin -- help tenant',
        ],
        [['help', 'explode'], 'unknown command explode; try: npm run -s admin -- help'],
        [['explode'], 'unknown command explode; try: npm run -s admin -- help'],
      ];
      for (const [args, message] of cases) {
        const { exit, error } = await outcome(args, { DATA_DIR: '/nonexistent' });
        expect(exit, args.join(' ')).to.equal(2);
        expect(error, args.join(' ')).to.deep.equal({ code: 'USAGE', message });
      }
    });

    it('answers a bad argument with a short error and the usage of that command only', async () => {
      const cases: [string[], RegExp][] = [
        [['tenant', 'approve'], /^TENANT_ID is required$/],
        [['tenant', 'create', '--nme', 'x'], /^Unknown option '--nme'$/],
        [['tenant', 'list', '--limit', 'lots'], /--limit must be an integer from 1 to 100/],
        [['inflow', 'list', '--state', 'LOST'], /--state must be one of HELD, UNMATCHED/],
        [
          ['approval', 'list', '--action', 'payout.explode'],
          /^--action must be one of inflow.attribute, inflow.return, payout.fail, refund.retry, refund.raise, overpayment.return, recon.resolve, payee.accept, approval_rule.set, operator.role$/,
        ],
        [['approval', 'list', '--decided=yes'], /^Option '--decided' does not take an argument$/],
        [
          ['operator', 'create', '--name', 'x', '--role', 'boss'],
          /--role must be one of viewer, operator, approver, admin/,
        ],
        [['tenant', 'approve', 'a', 'b'], /^unexpected argument b$/],
      ];
      for (const [args, message] of cases) {
        // No token anywhere: the command line is judged before the environment is read.
        const { exit, error } = await outcome(args, { DATA_DIR: '/nonexistent' });
        expect(exit, args.join(' ')).to.equal(2);
        expect(error?.code).to.equal('USAGE');
        expect(error?.message).to.match(message);
        expect(error?.usage).to.match(new RegExp(`^npm run -s admin -- ${args[0]} ${args[1]}`));
      }
      expect((await outcome(['tenant', 'explode'])).error?.message).to.equal(
        'unknown command tenant explode; try: npm run -s admin -- help tenant',
      );
    });

    it('lists the valid scopes when one is unknown', async () => {
      const { exit, error } = await outcome([
        'key',
        'issue',
        '--tenant',
        crypto.randomUUID(),
        '--scopes',
        'payouts:read,payouts:fly',
      ]);
      expect(exit).to.equal(2);
      expect(error?.message).to.equal(
        'unknown scope payouts:fly; the scopes are payouts:write, payouts:read, refunds:manage, refunds:read, rates:read, identity:enquiry, webhooks:manage, banks:read, inflows:read, webhooks:read',
      );
    });

    it('lists the valid scopes when the service refuses one too (a tool other than this CLI)', async () => {
      const tenant = (await run(['tenant', 'create', '--name', uniqueName('Scoped')], env())) as {
        id: string;
      };
      const res = await fetch(`${harness().url}/trpc/admin.key.issue`, {
        method: 'POST',
        headers: { authorization: `Bearer ${harness().adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ tenant_id: tenant.id, scopes: ['payouts:fly'] }),
      });
      expect(res.status).to.equal(400);
      const body = (await res.json()) as {
        error: { data: { app_code: string; details: { issue: string }[] } };
      };
      expect(body.error.data.app_code).to.equal('VALIDATION_FAILED');
      expect(body.error.data.details[0]!.issue).to.include('payouts:write').and.include('webhooks:read');
    });

    it('finds the service on PORT and the admin token in DATA_DIR, as npm start leaves them', async () => {
      const dataDir = mkdtempSync(path.join(tmpdir(), 'admin-cli-'));
      writeFileSync(path.join(dataDir, 'admin-token'), `${harness().adminToken}\n`);
      const port = new URL(harness().url).port;
      const { exit, stdout } = await outcome(['whoami'], { PORT: port, DATA_DIR: dataDir });
      expect(exit).to.equal(0);
      expect(JSON.parse(stdout)).to.include({ name: 'root', role: 'admin' });
      const none = await outcome(['whoami'], { PORT: port, DATA_DIR: path.join(dataDir, 'missing') });
      expect(none.error?.message).to.match(/^no token: set OPERATOR_TOKEN/);
    });

    it('names the URL it could not reach', async () => {
      // A port that was free a moment ago: nothing listens there.
      const port = await new Promise<number>((resolve) => {
        const server = createServer().listen(0, '127.0.0.1', () => {
          const { port } = server.address() as { port: number };
          server.close(() => resolve(port));
        });
      });
      const { exit, error } = await outcome(['tenant', 'list'], {
        PORT: String(port),
        ADMIN_TOKEN: 'adm_anything_long',
      });
      expect(exit).to.equal(1);
      expect(error?.code).to.equal('SERVICE_UNREACHABLE');
      expect(error?.message).to.include(`http://127.0.0.1:${port}`).and.include('ECONNREFUSED');
    });

    it('prints every list as { data, meta }', async () => {
      // Every command that pages (takes --cursor), as the usage lists them.
      const lists = usage()
        .split('\n')
        .filter((line) => line.includes('[--cursor CURSOR]'))
        .map((line) => line.trim().split(' ').slice(0, 2));
      expect(lists.map((l) => l.join(' '))).to.include.members([
        'tenant list',
        'key list',
        'operator list',
        'inflow list',
        'refund list-failed',
        'refund held',
        'audit list',
        'webhooks dead',
      ]);
      // The options a list cannot do without.
      const tenant = (await run(['tenant', 'create', '--name', uniqueName('Listed keys')], env())) as {
        id: string;
      };
      const needs: Record<string, string[]> = { 'key list': ['--tenant', tenant.id] };
      for (const args of lists) {
        const extra = needs[args.join(' ')] ?? [];
        const { exit, stdout, error } = await outcome([...args, ...extra, '--limit', '1'], asRoot());
        expect(exit, `${args.join(' ')}: ${JSON.stringify(error)}`).to.equal(0);
        const printed = JSON.parse(stdout);
        expect(Object.keys(printed).sort(), args.join(' ')).to.deep.equal(['data', 'meta']);
        expect(printed.data).to.be.an('array');
        expect(Object.keys(printed.meta).sort()).to.deep.equal(['has_more', 'limit', 'next_cursor']);
      }
    });

    it('pages a list with the cursor it printed', async () => {
      for (let i = 0; i < 3; i++) await run(['tenant', 'create', '--name', uniqueName(`Paged ${i}`)], env());
      const first = (await run(['tenant', 'list', '--limit', '2'], env())) as {
        data: { id: string }[];
        meta: { has_more: boolean; next_cursor: string };
      };
      expect(first.meta).to.include({ has_more: true, limit: 2 });
      const second = (await run(
        ['tenant', 'list', '--limit', '2', '--cursor', first.meta.next_cursor],
        env(),
      )) as {
        data: { id: string }[];
      };
      expect(second.data).to.have.length(2);
      expect(second.data.map((t) => t.id)).to.not.include.members(first.data.map((t) => t.id));
    });
  });
});
