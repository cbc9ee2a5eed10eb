import { expect } from 'chai';
import { AuditEntry } from '#src/audit/entities.ts';
import { cliEnv } from '#src/cli/admin.ts';
import { ROOT_OPERATOR_ID } from '#src/operators/entities.ts';
import { hasRole, ROLES, type Role, requiredRole } from '#src/operators/roles.ts';
import { appRouter } from '#src/router.ts';
import { uniqueName } from '../client.ts';
import { harness } from '../harness.ts';
import { cliAs, newOperator, operatorWith, refusal, trpcCall } from './fixtures.ts';

const root = cliAs();

/** Every procedure under `admin.*`, with its kind and the role it needs. */
function adminProcedures(): { path: string; type: 'query' | 'mutation'; role: Role }[] {
  const procedures = (appRouter._def as unknown as { procedures: Record<string, any> }).procedures;
  return Object.entries(procedures)
    .filter(([path]) => path.startsWith('admin.'))
    .map(([path, p]) => ({ path, type: p._def.type, role: requiredRole(p._def.meta, p._def.type) }));
}

describe('operators and roles', () => {
  it('knows ADMIN_TOKEN as root, the bootstrap admin', async () => {
    expect(await root('whoami')).to.deep.equal({ id: ROOT_OPERATOR_ID, name: 'root', role: 'admin' });
  });

  it('creates an operator whose token is shown once, works at once, and stops working when revoked', async () => {
    const name = `Ada ${Date.now()}`;
    const created = await root('operator', 'create', '--name', name, '--role', 'operator');
    expect(Object.keys(created).sort()).to.deep.equal(['id', 'name', 'role', 'token']);
    expect(created).to.include({ name, role: 'operator' });
    expect(created.token).to.match(/^op_[A-Za-z0-9_-]{43}$/);

    const ada = cliAs({ token: created.token });
    expect(await ada('whoami')).to.deep.equal({ id: created.id, name, role: 'operator' });

    const listed = (await root('operator', 'list', '--limit', '100')).data.find(
      (o: { id: string }) => o.id === created.id,
    );
    expect(listed).to.include({ name, role: 'operator', revoked_at: null, created_by: ROOT_OPERATOR_ID });
    expect(listed.token_prefix).to.equal(created.token.slice(0, 11));
    expect(JSON.stringify(await root('operator', 'list', '--limit', '100'))).to.not.include(created.token);

    const revoked = await root('operator', 'revoke', created.id);
    expect(revoked.revoked_at).to.be.a('string');
    // Revoking again changes nothing: the same answer, and no second audit row.
    expect(await root('operator', 'revoke', created.id)).to.deep.equal(revoked);
    const audits = await harness()
      .service.deps.orm.em.fork()
      .find(AuditEntry, { action: 'admin.operators.revoke', targetIds: { $contains: [created.id] } });
    expect(audits).to.have.length(1);
    expect((await refusal(ada('whoami'))).code).to.equal('ADMIN_UNAUTHORIZED');
    const active = (await root('operator', 'list', '--active', '--limit', '100')).data;
    expect(active.map((o: { id: string }) => o.id)).to.not.include(created.id);
  });

  it('lets a deployment with root as its only admin create its first approvers and admins alone; four eyes from the second admin on', async () => {
    const em = () => harness().service.deps.orm.em.fork();
    // The run's other admins, set aside for this test as if the deployment were new, then restored.
    const others = (
      await em().execute<{ id: string }[]>(
        `select id from operators where role = 'admin' and revoked_at is null and id <> ?`,
        [ROOT_OPERATOR_ID],
      )
    ).map((r) => r.id);
    const now = harness().clock.now();
    if (others.length > 0)
      await em().execute(
        `update operators set revoked_at = ? where id in (${others.map(() => '?').join(', ')})`,
        [now, ...others],
      );
    let secondAdmin: string | undefined;
    try {
      const approver = await root(
        'operator',
        'create',
        '--name',
        uniqueName('First approver'),
        '--role',
        'approver',
      );
      expect(approver).to.include({ role: 'approver' });
      expect(approver).to.not.have.property('approval');
      const viewer = await root(
        'operator',
        'create',
        '--name',
        uniqueName('First viewer'),
        '--role',
        'viewer',
      );
      const raised = await root('operator', 'role', viewer.id, '--role', 'approver');
      expect(raised).to.deep.include({ approval: null });
      expect(raised.operator).to.include({ role: 'approver' });
      const admin = await root('operator', 'create', '--name', uniqueName('Second admin'), '--role', 'admin');
      expect(admin).to.include({ role: 'admin' });
      expect(admin).to.not.have.property('approval');
      secondAdmin = admin.id;
      expect(await cliAs({ token: admin.token })('whoami')).to.include({ role: 'admin' });

      // Two admins now: the next approver waits for the other admin.
      const next = await root(
        'operator',
        'create',
        '--name',
        uniqueName('Next approver'),
        '--role',
        'approver',
      );
      expect(next).to.include({ role: 'viewer' });
      expect(next.approval).to.include({ action: 'operator.role', state: 'PENDING' });
      await cliAs({ token: admin.token })('approval', 'approve', next.approval.id);
      expect(await cliAs({ token: next.token })('whoami')).to.include({ role: 'approver' });
    } finally {
      if (others.length > 0)
        await em().execute(
          `update operators set revoked_at = null where id in (${others.map(() => '?').join(', ')})`,
          others,
        );
      if (secondAdmin) await root('operator', 'revoke', secondAdmin);
    }
  });

  it('needs a second admin to make or raise an approver or admin once two admins exist; lowering is immediate', async () => {
    const other = await operatorWith('admin');
    const asOther = cliAs(other);
    const name = `Eve ${Date.now()}`;
    const created = await root('operator', 'create', '--name', name, '--role', 'approver');
    // Created, with its token, as a viewer; the raise waits for another admin.
    expect(created).to.include({ name, role: 'viewer' });
    expect(created.token).to.match(/^op_/);
    expect(created.approval).to.include({
      action: 'operator.role',
      state: 'PENDING',
      required_approvers: 1,
      target_state: `${name}: viewer`,
    });
    expect(created.approval.approver_roles).to.deep.equal(['admin']);
    expect(await cliAs({ token: created.token })('whoami')).to.include({ role: 'viewer' });
    // Not its proposer, not an approver: another admin.
    expect((await refusal(root('approval', 'approve', created.approval.id))).code).to.equal(
      'SELF_APPROVAL_FORBIDDEN',
    );
    const approver = await operatorWith('approver');
    expect((await refusal(cliAs(approver)('approval', 'approve', created.approval.id))).code).to.equal(
      'ADMIN_ROLE_REQUIRED',
    );
    await asOther('approval', 'approve', created.approval.id);
    expect(await cliAs({ token: created.token })('whoami')).to.include({ role: 'approver' });

    // Raising to admin: a proposal too; a second one on the same operator is refused.
    const raise = await root('operator', 'role', created.id, '--role', 'admin');
    expect(raise.operator).to.include({ role: 'approver' });
    expect(raise.approval).to.include({ action: 'operator.role', state: 'PENDING' });
    expect((await refusal(root('operator', 'role', created.id, '--role', 'admin'))).code).to.equal(
      'APPROVAL_ALREADY_PENDING',
    );
    await asOther('approval', 'approve', raise.approval.id);
    expect(await cliAs({ token: created.token })('whoami')).to.include({ role: 'admin' });

    // Lowering is immediate, and the same role again changes nothing and writes no audit row.
    const lowered = await root('operator', 'role', created.id, '--role', 'viewer');
    expect(lowered).to.deep.include({ approval: null });
    expect(lowered.operator).to.include({ role: 'viewer' });
    await root('operator', 'role', created.id, '--role', 'viewer');
    const audits = await harness()
      .service.deps.orm.em.fork()
      .find(AuditEntry, { action: 'admin.operators.role', targetIds: { $contains: [created.id] } });
    expect(audits.map((a) => a.outcome)).to.deep.equal(['PENDING', 'OK']);
    expect((await refusal(root('operator', 'role', ROOT_OPERATOR_ID, '--role', 'viewer'))).code).to.equal(
      'VALIDATION_FAILED',
    );
  });

  it('keeps names unique among active operators, root reserved, and never revokes root', async () => {
    const name = `Grace ${Date.now()}`;
    const first = await root('operator', 'create', '--name', name, '--role', 'viewer');
    expect(
      (await refusal(root('operator', 'create', '--name', name.toUpperCase(), '--role', 'viewer'))).code,
    ).to.equal('OPERATOR_NAME_TAKEN');
    expect((await refusal(root('operator', 'create', '--name', 'Root', '--role', 'admin'))).code).to.equal(
      'OPERATOR_NAME_TAKEN',
    );
    await root('operator', 'revoke', first.id);
    expect((await root('operator', 'create', '--name', name, '--role', 'viewer')).id).to.not.equal(first.id);

    const rootRevoke = await refusal(root('operator', 'revoke', ROOT_OPERATOR_ID));
    expect(rootRevoke.code).to.equal('VALIDATION_FAILED');
    expect(rootRevoke.message).to.not.equal('');
    expect(await root('whoami')).to.include({ name: 'root' });
    expect((await refusal(root('operator', 'revoke', crypto.randomUUID()))).code).to.equal(
      'OPERATOR_NOT_FOUND',
    );
  });

  it('refuses tokens that are unknown, malformed or missing with 401', async () => {
    for (const token of [null, 'op_not-a-real-token', harness().adminToken.slice(0, -1), 'Bearer']) {
      const res = await trpcCall('admin.me', 'query', undefined, token);
      expect(res.status, String(token)).to.equal(401);
      expect(res.body.error.data.app_code).to.equal('ADMIN_UNAUTHORIZED');
    }
  });

  it('declares a role for every admin procedure: reads are open to viewers', () => {
    const procedures = adminProcedures();
    expect(procedures.length).to.be.greaterThan(10);
    for (const p of procedures.filter((p) => p.type === 'query')) expect(p.role, p.path).to.equal('viewer');
    const mutations = Object.fromEntries(
      procedures.filter((p) => p.type === 'mutation').map((p) => [p.path, p.role]),
    );
    expect(mutations).to.include({
      'admin.operators.create': 'admin',
      'admin.operators.revoke': 'admin',
      'admin.tenant.create': 'operator',
      'admin.key.issue': 'operator',
    });
  });

  it('refuses every admin procedure to each role below its own with 403 and a code naming the role wanted', async () => {
    for (const procedure of adminProcedures()) {
      for (const role of ROLES) {
        const operator = await operatorWith(role);
        const res = await trpcCall(procedure.path, procedure.type, {}, operator.token);
        const code = res.body.error?.data?.app_code;
        if (hasRole(role, procedure.role)) {
          expect([401, 403], `${procedure.path} as ${role}`).to.not.include(res.status);
          continue;
        }
        expect(res.status, `${procedure.path} as ${role}`).to.equal(403);
        expect(code, `${procedure.path} as ${role}`).to.equal(
          `${procedure.role.toUpperCase()}_ROLE_REQUIRED`,
        );
        expect(res.body.error.data.details[0]).to.deep.include({ field: 'Authorization' });
        expect(res.body.error.message).to.include(procedure.role);
      }
    }
  });

  it('lets an operator manage tenants and keys but not operators', async () => {
    const operator = cliAs(await newOperator('operator'));
    const tenant = await operator('tenant', 'create', '--name', uniqueName('Made by an operator'));
    expect(await operator('key', 'issue', '--tenant', tenant.id, '--scopes', 'banks:read')).to.include.keys(
      'api_key',
    );
    const refused = await refusal(operator('operator', 'create', '--name', 'Sneaky', '--role', 'admin'));
    expect(refused.code).to.equal('ADMIN_ROLE_REQUIRED');
  });

  it('reads OPERATOR_TOKEN before ADMIN_TOKEN, and the address npm start would use', () => {
    expect(cliEnv({ OPERATOR_TOKEN: 'op_x', ADMIN_TOKEN: 'adm_y', PORT: '4321' })).to.deep.equal({
      serviceUrl: 'http://127.0.0.1:4321',
      token: 'op_x',
    });
    expect(cliEnv({ ADMIN_TOKEN: 'adm_y' }).token).to.equal('adm_y');
    expect(cliEnv({ ADMIN_TOKEN: 'adm_y', SERVICE_URL: 'http://svc:9' }).serviceUrl).to.equal('http://svc:9');
  });
});
