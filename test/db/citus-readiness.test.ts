import { expect } from 'chai';
import { type Distribution, KEYED_BY_ID_ALONE, TABLE_DISTRIBUTION } from '#src/db/distribution.ts';
import { harness } from '../harness.ts';

/**
 * The schema stays ready for Citus (docs/scaling.md, "Sharding by tenant"): read from pg_catalog
 * after the migrations ran, every table is placed (src/db/distribution.ts) and keeps the rules of
 * its placement. Each rule is one that `create_distributed_table` or `create_reference_table`
 * would enforce on a cluster.
 */

interface Table {
  name: string;
  tenantId: 'not null' | 'null' | null;
}
interface Key {
  table: string;
  name: string;
  primary: boolean;
  columns: string[];
  /** The table's partition key, when it is partitioned: its unique keys must include it. */
  partitionKey: string[];
}
interface ForeignKey {
  table: string;
  name: string;
  columns: string[];
  target: string;
  targetColumns: string[];
}

async function rows<R>(sql: string): Promise<R[]> {
  return harness().service.deps.orm.em.getConnection().execute<R[]>(sql);
}

// Tables and partitioned tables of the public schema; partitions are their parent's.
async function tables(): Promise<Table[]> {
  return rows<Table>(`
    select c.relname as name,
           (select case when a.attnotnull then 'not null' else 'null' end from pg_attribute a
             where a.attrelid = c.oid and a.attname = 'tenant_id' and not a.attisdropped) as "tenantId"
      from pg_class c
     where c.relnamespace = 'public'::regnamespace and c.relkind in ('r', 'p') and not c.relispartition
     order by 1`);
}

// Every unique index, constraint or not (a partial unique index deduplicates as much as a key).
async function uniqueKeys(): Promise<Key[]> {
  return rows<Key>(`
    select t.relname as table, ic.relname as name, i.indisprimary as primary,
           array(select a.attname::text from unnest(i.indkey) with ordinality k(attnum, n)
                   join pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum order by k.n) as columns,
           array(select a.attname::text from pg_partitioned_table pt cross join unnest(pt.partattrs) k(attnum)
                   join pg_attribute a on a.attrelid = pt.partrelid and a.attnum = k.attnum
                  where pt.partrelid = i.indrelid) as "partitionKey"
      from pg_index i join pg_class t on t.oid = i.indrelid join pg_class ic on ic.oid = i.indexrelid
     where t.relnamespace = 'public'::regnamespace and i.indisunique and not t.relispartition
     order by 1, 2`);
}

async function foreignKeys(): Promise<ForeignKey[]> {
  return rows<ForeignKey>(`
    select t.relname as table, c.conname as name, f.relname as target,
           array(select a.attname::text from unnest(c.conkey) with ordinality k(attnum, n)
                   join pg_attribute a on a.attrelid = c.conrelid and a.attnum = k.attnum order by k.n) as columns,
           array(select a.attname::text from unnest(c.confkey) with ordinality k(attnum, n)
                   join pg_attribute a on a.attrelid = c.confrelid and a.attnum = k.attnum order by k.n) as "targetColumns"
      from pg_constraint c join pg_class t on t.oid = c.conrelid join pg_class f on f.oid = c.confrelid
     where c.contype = 'f' and t.relnamespace = 'public'::regnamespace and not t.relispartition
       and c.conparentid = 0
     order by 1, 2`);
}

const placement = (table: string): Distribution | undefined =>
  (TABLE_DISTRIBUTION as Record<string, Distribution>)[table];

describe('a schema ready for Citus (read from pg_catalog)', () => {
  it('places every table, and only tables that exist', async () => {
    const names = (await tables()).map((t) => t.name);
    expect(
      names.filter((n) => !placement(n)),
      'tables missing from TABLE_DISTRIBUTION',
    ).to.deep.equal([]);
    expect(
      Object.keys(TABLE_DISTRIBUTION).filter((n) => !names.includes(n)),
      'placed tables that do not exist',
    ).to.deep.equal([]);
  });

  it('gives every distributed table a tenant_id that is never null', async () => {
    const wrong = (await tables())
      .filter((t) => placement(t.name) === 'distributed' && t.tenantId !== 'not null')
      .map((t) => `${t.name}: tenant_id ${t.tenantId ?? 'missing'}`);
    expect(wrong).to.deep.equal([]);
  });

  it('keeps tenant_id in every unique key of a distributed table, the documented (id) keys aside', async () => {
    const keys = (await uniqueKeys()).filter((k) => placement(k.table) === 'distributed');
    // (id), or (id) and the partition key: a partitioned table's keys must include it.
    const byId = (k: Key) => k.primary && k.columns.join() === ['id', ...k.partitionKey].join();
    const wrong = keys
      .filter((k) => !k.columns.includes('tenant_id'))
      .filter((k) => !(KEYED_BY_ID_ALONE.includes(k.table) && byId(k)))
      .map((k) => `${k.table}.${k.name} (${k.columns.join(', ')})`);
    expect(wrong).to.deep.equal([]);
    // The list of tables still keyed by id alone is exact: a table that moves to (id, tenant_id)
    // leaves it, and no new table joins it unnoticed.
    const byIdAlone = keys.filter(byId).map((k) => k.table);
    expect(byIdAlone.sort()).to.deep.equal([...KEYED_BY_ID_ALONE].sort());
  });

  it('makes every foreign key between distributed tables go through tenant_id', async () => {
    const wrong = (await foreignKeys())
      .filter((fk) => placement(fk.table) === 'distributed' && placement(fk.target) === 'distributed')
      .filter((fk) => {
        const at = fk.columns.indexOf('tenant_id');
        return at < 0 || fk.targetColumns[at] !== 'tenant_id';
      })
      .map((fk) => `${fk.table}.${fk.name} (${fk.columns.join(', ')}) -> ${fk.target}`);
    expect(wrong).to.deep.equal([]);
  });

  it('lets reference and local tables reference no distributed table, and reference tables no local one', async () => {
    const wrong = (await foreignKeys())
      .filter((fk) => {
        const from = placement(fk.table);
        const to = placement(fk.target);
        if (from === 'distributed') return to === 'local';
        if (from === 'reference') return to !== 'reference';
        return to === 'distributed';
      })
      .map((fk) => `${fk.table} (${placement(fk.table)}) -> ${fk.target} (${placement(fk.target)})`);
    expect(wrong).to.deep.equal([]);
  });
});
