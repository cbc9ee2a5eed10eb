import { expect } from 'chai';
import { databaseBefore } from './before-migration.ts';

const MIGRATION = 'Migration20261129050000_partitioned_ledger_audit';
const ENTRIES = 300_000;
const AUDIT_ROWS = 100_000;

/**
 * The migration that partitions the ledger's entries and the audit trail, run on a database of its
 * own holding a year of both from before it (docs/scaling.md has the figures this measures). Each
 * filled table becomes the partition of everything before next month, and afterwards the database
 * still enforces the ledger's rules and the audit's on it.
 */
describe(`partitioning a filled ledger and audit trail (${MIGRATION})`, function () {
  this.timeout(300_000);
  const db = databaseBefore(MIGRATION, 'hundreds of thousands of rows: the embedded database takes minutes');

  it(`moves ${ENTRIES.toLocaleString('en')} entries and ${AUDIT_ROWS.toLocaleString('en')} audit rows into the partitioned tables, and keeps their rules`, async () => {
    const em = db.orm.em.fork();
    await em.begin();
    // A year of balanced pairs, through the triggers: the balances are kept as they are written.
    await em.execute(
      `insert into ledger_entries (id, transaction_id, account, currency, amount, tenant_id, cause_object, cause_id,
          transition, created_at)
       select gen_random_uuid(), md5('tx' || s.n)::uuid, e.account, 'USDT', e.amount, null, 'payout',
              md5('c' || s.n)::uuid, 'TEST (A → B)', now() - (s.n % 365) * interval '1 day'
         from generate_series(1, ${ENTRIES / 2}) s(n)
        cross join (values ('filled:a', -1.5), ('filled:b', 1.5)) e(account, amount)`,
    );
    await em.commit();
    await em.execute(
      `insert into audit (id, operator_id, operator_name, operator_role, action, target_ids, arguments, outcome,
          request_id, created_at)
       select gen_random_uuid(), md5('op' || n % 10)::uuid, 'op', 'ADMIN', 'admin.test', array[md5('t' || n)], '{}',
              'OK', 'req-' || n, now() - (n % 365) * interval '1 day'
         from generate_series(1, ${AUDIT_ROWS}) n`,
    );
    await em.execute('analyze ledger_entries, audit');

    const started = process.hrtime.bigint();
    await db.orm.migrator.up({ to: MIGRATION });
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    console.log(`      migration: ${seconds.toFixed(1)} s`);

    const current = (table: string) => `'${table}_p' || to_char(now() at time zone 'UTC', 'YYYY_MM')`;
    const [counts] = await em.execute<Record<string, unknown>[]>(
      `select (select count(*)::int from ledger_entries) as entries,
              (select count(*)::int from ledger_entries where tableoid = (${current('ledger_entries')})::regclass) as entries_history,
              (select count(*)::int from audit) as audit,
              (select count(*)::int from audit where tableoid = (${current('audit')})::regclass) as audit_history,
              (select string_agg(c.relkind::text, '' order by c.relname) from pg_class c
                where c.relname in ('ledger_entries', 'audit')) as kinds`,
    );
    expect(counts).to.deep.equal({
      entries: ENTRIES,
      entries_history: ENTRIES,
      audit: AUDIT_ROWS,
      audit_history: AUDIT_ROWS,
      kinds: 'pp',
    });
    // The filled tables' indexes serve the partitioned tables' (attached, not built again).
    const attached = await em.execute<{ name: string }[]>(
      `select c.relname as name from pg_index i join pg_class c on c.oid = i.indexrelid
        where i.indrelid = (${current('ledger_entries')})::regclass and c.relname like '%_filled' order by 1`,
    );
    expect(attached.map((a) => a.name)).to.deep.equal([
      'ledger_entries_account_idx_filled',
      'ledger_entries_cause_idx_filled',
      'ledger_entries_movements_idx_filled',
      'ledger_entries_payout_idx_filled',
      'ledger_entries_transaction_idx_filled',
    ]);
    // The balances the entries were written with still read the same.
    const [sums] = await em.execute<{ a: string; b: string }[]>(
      `select (select trim_scale(sum(amount))::text from ledger_balance_deltas where account = 'filled:a') as a,
              (select trim_scale(sum(amount))::text from ledger_balance_deltas where account = 'filled:b') as b`,
    );
    expect(sums).to.deep.equal({ a: String(-1.5 * (ENTRIES / 2)), b: String(1.5 * (ENTRIES / 2)) });

    const refusal = (text: string) =>
      db.orm.em
        .fork()
        .execute(text)
        .then(
          () => '',
          (e: Error) => e.message,
        );
    const history = (await em.execute<{ name: string }[]>(`select ${current('ledger_entries')} as name`))[0]!
      .name;
    const auditHistory = (await em.execute<{ name: string }[]>(`select ${current('audit')} as name`))[0]!
      .name;
    expect(await refusal(`truncate ${history}`)).to.match(/immutable: TRUNCATE refused/);
    expect(await refusal('truncate ledger_entries')).to.match(/immutable: TRUNCATE refused/);
    expect(await refusal(`update ${history} set amount = 2 where account = 'filled:a'`)).to.match(
      /immutable: UPDATE refused/,
    );
    expect(await refusal(`delete from ledger_entries where account = 'filled:b'`)).to.match(
      /immutable: DELETE refused/,
    );
    expect(
      await refusal(
        `insert into ledger_entries (id, transaction_id, account, currency, amount, cause_object, cause_id, transition, created_at)
         values (gen_random_uuid(), md5('tx1')::uuid, 'filled:c', 'USDT', 1, 'payout', gen_random_uuid(), 'TEST (A → B)', now())`,
      ),
    ).to.match(/does not balance/);
    expect(await refusal(`delete from ${auditHistory}`)).to.match(/audit trail is immutable: DELETE refused/);
    expect(await refusal('update audit set outcome = $$x$$')).to.match(
      /audit trail is immutable: UPDATE refused/,
    );
  });
});
