import { expect } from 'chai';
import { maintainPartitions, PARTITIONED_TABLES } from '#src/db/partitions.ts';
import { harness } from '../harness.ts';

/**
 * The ledger's entries and the audit trail, partitioned by month and never dropped from
 * (Migration20261129050000_partitioned_ledger_audit, docs/scaling.md "Partitioned tables"), and
 * the statement triggers every partition of the entries must carry (`partition_guard()`).
 */

const DAY = 86_400_000;
const KEPT = ['ledger_entries', 'audit'] as const;

const em = () => harness().service.deps.orm.em.fork();

async function partitionsOf(table: string): Promise<string[]> {
  const rows = await em().execute<{ name: string }[]>(
    `select c.relname as name from pg_inherits i join pg_class c on c.oid = i.inhrelid
      where i.inhparent = ?::regclass order by c.relname`,
    [table],
  );
  return rows.map((r) => r.name);
}

/** The statement triggers of `relation`, by name. */
async function statementTriggers(relation: string): Promise<string[]> {
  const rows = await em().execute<{ name: string }[]>(
    `select tgname as name from pg_trigger
      where tgrelid = ?::regclass and not tgisinternal and (tgtype & 1) = 0 order by 1`,
    [relation],
  );
  return rows.map((r) => r.name);
}

async function partmanRegistered(table: string): Promise<boolean> {
  const [row] = await em().execute<{ found: boolean }[]>(
    `select to_regclass('partman.part_config') is not null as found`,
  );
  if (!row?.found) return false;
  const rows = await em().execute(`select 1 from partman.part_config where parent_table = 'public.' || ?`, [
    table,
  ]);
  return rows.length === 1;
}

const month = (d: Date) => `${d.getUTCFullYear()}_${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
const addMonths = (d: Date, n: number) => new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + n, 15));

describe('partitioned tables kept for ever: the ledger’s entries and the audit trail', () => {
  for (const table of KEPT) {
    it(`stores ${table} in monthly partitions: this month, three ahead and a default, none ever dropped`, async () => {
      expect(PARTITIONED_TABLES.find((t) => t.table === table)?.interval).to.equal('month');
      const names = await partitionsOf(table);
      const now = new Date();
      for (let i = 0; i <= 3; i++) expect(names).to.include(`${table}_p${month(addMonths(now, i))}`);
      expect(names).to.include(`${table}_default`);
      // A pass ten years on drops nothing of it, whichever way the server keeps partitions.
      const { sql, config } = harness().service.deps;
      const far = await maintainPartitions(sql, {
        now: new Date(Date.now() + 3650 * DAY),
        config,
        tables: PARTITIONED_TABLES.filter((t) => t.table === table),
      });
      expect(far.filter((c) => c.action === 'dropped')).to.deep.equal([]);
      for (const name of names) expect(await partitionsOf(table)).to.include(name);
    });
  }

  it('gives every partition of the entries the parent’s statement triggers, the ones made later too', async () => {
    const { sql, config } = harness().service.deps;
    const ledger = PARTITIONED_TABLES.filter((t) => t.table === 'ledger_entries');
    const parent = await statementTriggers('ledger_entries');
    expect(parent).to.deep.equal(['ledger_entries_balances', 'ledger_entries_no_truncate']);
    let made: string;
    if (await partmanRegistered('ledger_entries')) {
      // pg_partman makes again the last month it made ahead, once gone; the job then guards it.
      made = (await partitionsOf('ledger_entries')).filter((n) => /_p\d{4}_\d{2}$/.test(n)).at(-1)!;
      await em().execute(`drop table ${made}`);
      const changes = await maintainPartitions(sql, { now: new Date(), config, tables: ledger });
      expect(changes.map((c) => [c.action, c.partition, c.by])).to.deep.include([
        'created',
        made,
        'pg_partman',
      ]);
    } else {
      const later = addMonths(new Date(), 7);
      made = `ledger_entries_p${month(later)}`;
      const changes = await maintainPartitions(sql, { now: later, config, tables: ledger });
      expect(changes.map((c) => c.partition)).to.include(made);
    }
    for (const name of await partitionsOf('ledger_entries')) {
      expect(await statementTriggers(name), name).to.deep.equal(parent);
    }
    const err = await em()
      .execute(`truncate ${made}`)
      .then(
        () => null,
        (e: Error) => e,
      );
    expect(err?.message).to.match(/ledger entries are immutable: TRUNCATE refused/);
  });
});
