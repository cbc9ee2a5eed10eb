import { expect } from 'chai';
import { harness } from '../harness.ts';

describe('database schema', () => {
  it('is exactly what the entities describe once the committed migrations ran', async () => {
    const { orm } = harness().service.deps;
    const diff = await orm.schema.getUpdateSchemaSQL({ wrap: false, safe: false });
    // The ORM cannot describe a foreign key of two columns onto a table keyed by one: the
    // (tenant_id, …) keys the migrations write (docs/scaling.md, Citus) would read as extra.
    // test/db/citus-readiness.test.ts checks those.
    const tenantKeys = new Set(
      (
        await orm.em.getConnection().execute<{ name: string }[]>(
          `select conname as name from pg_constraint
            where contype = 'f' and connamespace = 'public'::regnamespace and cardinality(conkey) > 1
              and (select attname from pg_attribute where attrelid = conrelid and attnum = conkey[1]) = 'tenant_id'`,
        )
      ).map((r) => r.name),
    );
    const rest = diff
      .split('\n')
      .filter((line) => {
        const dropped = /^alter table "[^"]+" drop constraint "([^"]+)";$/.exec(line.trim());
        return !(dropped?.[1] && tenantKeys.has(dropped[1]));
      })
      .join('\n');
    expect(rest.trim()).to.equal('');
  });
});
