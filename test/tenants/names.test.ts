import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import { Migration20261128180000_tenant_name_unique } from '../../migrations/Migration20261128180000_tenant_name_unique.ts';
import { harness } from '../harness.ts';
import { cliAs, newOperator, refusal, trpcCall } from '../operators/fixtures.ts';

/** Tenant names are unique, ignoring case and surrounding spaces (issue 25 §4). */
describe('tenant names', () => {
  it('refuses a second tenant with the same name through tRPC and the CLI, naming the first', async () => {
    const operator = await newOperator('operator');
    const name = `Okafor Trading ${randomUUID().slice(0, 8)}`;
    const first = await cliAs(operator)('tenant', 'create', '--name', name);

    const again = await trpcCall(
      'admin.tenant.create',
      'mutation',
      { name: `  ${name.toUpperCase()} ` },
      operator.token,
    );
    expect(again.status).to.equal(409);
    expect(again.body.error.data.app_code).to.equal('TENANT_NAME_TAKEN');
    expect(again.body.error.message).to.equal(
      `A tenant named "${name}" exists already: choose another name.`,
    );
    expect(again.body.error.data.details).to.deep.equal([
      { field: 'name', issue: `is taken by tenant ${first.id}` },
    ]);

    const cli = await refusal(cliAs(operator)('tenant', 'create', '--name', name.toLowerCase()));
    expect(cli.code).to.equal('TENANT_NAME_TAKEN');

    // Nothing was created by the refusals.
    const [count] = await harness()
      .service.deps.orm.em.fork()
      .execute<{ n: number }[]>('select count(*)::int as n from tenants where lower(name) = lower(?)', [
        name,
      ]);
    expect(count?.n).to.equal(1);
  });

  it('lets only one of two creates of one name at once win', async () => {
    const operator = await newOperator('operator');
    const name = `Race ${randomUUID().slice(0, 8)}`;
    const results = await Promise.all(
      Array.from({ length: 4 }, () => trpcCall('admin.tenant.create', 'mutation', { name }, operator.token)),
    );
    expect(results.map((r) => r.status).sort()).to.deep.equal([200, 409, 409, 409]);
    for (const r of results.filter((r) => r.status === 409))
      expect(r.body.error.data.app_code).to.equal('TENANT_NAME_TAKEN');
  });

  it('migrates a table that holds duplicates: the oldest keeps the name, later ones get a suffix', async () => {
    const em = harness().service.deps.orm.em.fork();
    const base = `Dupe ${randomUUID().slice(0, 8)}`;
    const ids = [randomUUID(), randomUUID(), randomUUID()];
    const migration = new Migration20261128180000_tenant_name_unique(em.getDriver(), em.config);
    await migration.up();
    const [rename, index] = migration.getQueries().map((q) => String(q));
    // Run as it ran on a database made before the index: inside a transaction rolled back at the end.
    const rollback = new Error('rollback');
    const names = await em
      .transactional(async (tx) => {
        await tx.execute('drop index "tenants_name_unique"');
        const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));
        for (const [i, name] of [base, ` ${base.toUpperCase()}`, base.toLowerCase()].entries())
          await tx.execute(
            'insert into tenants (id, name, payouts_approved, created_at, updated_at) values (?, ?, false, ?, ?)',
            [ids[i], name, at(i), at(i)],
          );
        await tx.execute(rename!);
        await tx.execute(index!);
        const rows = await tx.execute<{ id: string; name: string }[]>(
          'select id, name from tenants where id in (?, ?, ?)',
          ids,
        );
        throw Object.assign(rollback, { rows });
      })
      .catch((e: Error & { rows?: { id: string; name: string }[] }) => {
        if (e !== rollback) throw e;
        return new Map(e.rows!.map((r) => [r.id, r.name]));
      });
    expect(names.get(ids[0]!)).to.equal(base);
    expect(names.get(ids[1]!)).to.equal(`${base.toUpperCase()} (duplicate ${ids[1]!.slice(-12)})`);
    expect(names.get(ids[2]!)).to.equal(`${base.toLowerCase()} (duplicate ${ids[2]!.slice(-12)})`);
  });
});
