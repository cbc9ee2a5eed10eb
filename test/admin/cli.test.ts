import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { run } from '#src/cli/admin.ts';
import { call, errorOf } from '../client.ts';
import { harness } from '../harness.ts';

const exec = promisify(execFile);

describe('admin CLI over tRPC', () => {
  const env = () => ({ serviceUrl: harness().url, token: harness().adminToken });

  it('creates a tenant, issues a key that works, and revokes it', async () => {
    const tenant = (await run(['tenant', 'create', '--name', 'Acme Payouts Ltd'], env())) as Record<
      string,
      unknown
    >;
    expect(tenant).to.include({ name: 'Acme Payouts Ltd', payouts_approved: false });
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

    await run(['key', 'revoke', key.id], env());
    const revoked = await call('GET', '/v1/banks?country=NG&destination_type=BANK_ACCOUNT', {
      key: key.api_key,
    });
    expect(revoked.status).to.equal(401);
  });

  it('issues keys with every merchant scope by default', async () => {
    const tenant = (await run(['tenant', 'create', '--name', 'Default Scopes', '--approved'], env())) as {
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
    const { stdout } = await exec(process.execPath, [cli, 'tenant', 'create', '--name', 'From the shell'], {
      env: envVars,
    });
    const printed = JSON.parse(stdout) as Record<string, unknown>;
    expect(printed).to.include({ name: 'From the shell', payouts_approved: false });

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

    const usage = await exec(process.execPath, [cli, 'tenant', 'explode'], { env: envVars }).then(
      () => null,
      (err: { code: number }) => err,
    );
    expect(usage?.code).to.equal(2);
  });
});
