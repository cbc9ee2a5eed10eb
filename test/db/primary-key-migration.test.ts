import type { EntityManager } from '@mikro-orm/postgresql';
import { expect } from 'chai';
import { Migration20261129030000_citus_primary_keys as PrimaryKeys } from '../../migrations/Migration20261129030000_citus_primary_keys.ts';
import { call } from '../client.ts';
import { deps, failedPayoutWithRefund, merchantWith } from '../dispatch/fixtures.ts';
import { migrationSteps } from './migration-steps.ts';

const TABLES = [
  'idempotency_keys',
  'quotes',
  'refund_destinations',
  'payouts',
  'payout_status_timeline',
  'payment_instructions',
  'inflows',
  'outflows',
  'refunds',
];

interface Shape {
  keys: Record<string, string>;
  foreignKeys: string[];
  rows: Record<string, number>;
}

/** Primary keys, foreign keys onto the tables and row counts, as the catalog and tables say. */
async function shape(em: EntityManager): Promise<Shape> {
  const keys = await em.execute<{ table: string; def: string }[]>(
    `select conrelid::regclass::text as table, pg_get_constraintdef(oid) as def from pg_constraint
      where contype in ('p', 'u') and conparentid = 0 and conrelid::regclass::text in (${TABLES.map((t) => `'${t}'`).join()})
        and (contype = 'p' or conname = conrelid::regclass::text || '_id_tenant_id_unique')
      order by conname`,
  );
  const foreignKeys = await em.execute<{ def: string }[]>(
    `select conrelid::regclass::text || '.' || conname || ': ' || pg_get_constraintdef(oid) as def from pg_constraint
      where contype = 'f' and conparentid = 0 and convalidated
        and confrelid::regclass::text in ('payouts', 'payment_instructions', 'inflows')
      order by 1`,
  );
  const rows: Record<string, number> = {};
  for (const table of TABLES) {
    const [counted] = await em.execute<{ n: number }[]>(`select count(*)::int as n from "${table}"`);
    rows[table] = counted!.n;
  }
  const byTable: Record<string, string> = {};
  for (const k of keys) byTable[k.table] = [byTable[k.table], k.def].filter(Boolean).join('; ');
  return { keys: byTable, foreignKeys: foreignKeys.map((f) => f.def), rows };
}

/**
 * The migration that keys the merchant tables by (id, tenant_id), run down and up again on the
 * test database once a payout has gone the whole way to a refund (every table it keys has rows,
 * and every foreign key it makes again has rows to check), in a transaction rolled back at the end.
 */
describe('keying the merchant tables by (id, tenant_id) (Migration20261129030000)', () => {
  it('moves filled tables from (id) to (id, tenant_id) and back, keeping every row and foreign key', async () => {
    const merchant = await merchantWith();
    const quote = await call('POST', '/v1/rates/quotes', {
      key: merchant.key,
      body: { settlement_currency: 'USDT', destination_currency: 'NGN', destination_amount: 150000 },
    });
    expect(quote.status, quote.text).to.equal(201);
    await failedPayoutWithRefund(merchant, 'USDT');

    const { orm } = deps();
    const statements = migrationSteps(new PrimaryKeys(orm.em.getDriver(), orm.config));
    const rolledBack = new Error('rolled back');
    await orm.em
      .fork()
      .transactional(async (em) => {
        const keyed = await shape(em);
        for (const table of TABLES) expect(keyed.rows[table], table).to.be.greaterThan(0);
        expect(keyed.keys).to.deep.equal({
          ...Object.fromEntries(TABLES.map((t) => [t, 'PRIMARY KEY (id, tenant_id)'])),
          payout_status_timeline: 'PRIMARY KEY (id, tenant_id, created_at)',
        });
        expect(keyed.foreignKeys).to.have.length(7);

        await statements(em, 'down');
        const before = await shape(em);
        expect(before.keys).to.deep.equal({
          ...Object.fromEntries(TABLES.map((t) => [t, 'PRIMARY KEY (id)'])),
          payouts: 'UNIQUE (id, tenant_id); PRIMARY KEY (id)',
          payment_instructions: 'UNIQUE (id, tenant_id); PRIMARY KEY (id)',
          inflows: 'UNIQUE (id, tenant_id); PRIMARY KEY (id)',
          payout_status_timeline: 'PRIMARY KEY (id, created_at)',
        });
        expect(before.foreignKeys).to.deep.equal(keyed.foreignKeys);
        expect(before.rows).to.deep.equal(keyed.rows);

        await statements(em, 'up');
        expect(await shape(em)).to.deep.equal(keyed);
        throw rolledBack;
      })
      .catch((err: unknown) => {
        if (err !== rolledBack) throw err;
      });
  });
});
