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
    // The entities are keyed by id (the ORM's identity map, every lookup and relation by id); the
    // database keys the merchant tables by (id, tenant_id), the timeline by (id, tenant_id,
    // created_at): the primary key the ORM would write back is the database's less tenant_id.
    const primaryKeys = new Map(
      (
        await orm.em.getConnection().execute<{ table: string; columns: string[] }[]>(
          `select conrelid::regclass::text as table,
                  array(select a.attname::text from unnest(conkey) with ordinality k(attnum, n)
                          join pg_attribute a on a.attrelid = conrelid and a.attnum = k.attnum order by k.n) as columns
             from pg_constraint where contype = 'p' and connamespace = 'public'::regnamespace and conparentid = 0`,
        )
      ).map((r) => [r.table, r.columns.join()]),
    );
    // A partitioned table's key also holds its partition key, which an entity keyed by id alone
    // (the outbox's: the deliveries' relation to an event is by its id) does not name.
    const partitionKeys = new Map(
      (
        await orm.em.getConnection().execute<{ table: string; columns: string[] }[]>(
          `select partrelid::regclass::text as table,
                  array(select a.attname::text from unnest(partattrs) k(attnum)
                          join pg_attribute a on a.attrelid = partrelid and a.attnum = k.attnum) as columns
             from pg_partitioned_table`,
        )
      ).map((r) => [r.table, r.columns]),
    );
    const keyedWithTenant = (table: string, columns: string) => {
      const key = columns
        .split(', ')
        .map((c) => c.replaceAll('"', ''))
        .flatMap((c) => (c === 'id' ? ['id', 'tenant_id'] : [c]));
      for (const c of partitionKeys.get(table) ?? []) if (!key.includes(c)) key.push(c);
      return primaryKeys.get(table) === key.join();
    };
    const lines = diff.split('\n').map((line) => line.trim());
    const rest = lines
      .filter((line, at) => {
        const dropped = /^alter table "([^"]+)" drop constraint "([^"]+)";$/.exec(line);
        if (dropped?.[2] && tenantKeys.has(dropped[2])) return false;
        const readded = (l: string | undefined) =>
          /^alter table "([^"]+)" add primary key \((.+)\);$/.exec(l ?? '');
        if (dropped && dropped[2] === `${dropped[1]}_pkey`) {
          const next = readded(lines[at + 1]);
          return !(next && next[1] === dropped[1] && keyedWithTenant(dropped[1]!, next[2]!));
        }
        const added = readded(line);
        return !(added?.[1] && keyedWithTenant(added[1], added[2]!));
      })
      .join('\n');
    expect(rest.trim()).to.equal('');
  });
});
