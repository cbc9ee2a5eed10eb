import { expect } from 'chai';
import pg from 'pg';
import { behindPooler, emSql, openSql, statement, TextArray } from '#src/db/sql.ts';
import { harness } from '../harness.ts';
import { needsPostgresServer, skipBecause } from '../skip.ts';

const prepared = statement('test_statements_prepared', `select $1::int + 1 as n /* prepared */`);
const echoTexts = statement(
  'test_statements_text_array',
  `select t.text, t.n from unnest($1::text[]) with ordinality as t(text, n) order by t.n`,
);
const neverNamed = statement('test_statements_never_named', `select $1::int + 3 as n /* never named */`);
const replanned = statement('test_statements_replanned', `select $1::int + 2 as n /* replanned */`, {
  replan: true,
});

describe('hot-path statements', () => {
  it('prepares a statement once per connection (unnamed behind a pooler), and sends a replanned one unprepared each time', async function () {
    needsPostgresServer(this, 'prepared statements listed in pg_prepared_statements');
    const { sql, orm } = harness().service.deps;
    const pooled = await behindPooler(await orm.em.getConnection().getNativeClient());
    const seen = await sql.transaction(async (tx) => {
      const results = [
        ...(await tx.rows<{ n: number }>(prepared, [1])),
        ...(await tx.rows<{ n: number }>(replanned, [1])),
        ...(await tx.rows<{ n: number }>(replanned, [2])),
      ];
      const statements = await tx.rows<{ statement: string }>({
        name: 'test_statements_list',
        text: 'select statement from pg_prepared_statements',
      });
      return { results: results.map((r) => r.n), texts: statements.map((s) => s.statement) };
    });
    expect(seen.results).to.deep.equal([2, 3, 4]);
    expect(seen.texts.includes(prepared.text), 'prepared under a name').to.equal(!pooled);
    expect(seen.texts.filter((t) => t.includes('/* replanned */'))).to.deep.equal([]);
  });

  it('sends every statement unnamed with DATABASE_PREPARED_STATEMENTS=off, whatever the connection', async function () {
    needsPostgresServer(this, 'prepared statements listed in pg_prepared_statements');
    const { orm } = harness().service.deps;
    const off = await openSql(orm, { prepared: 'off' });
    const seen = await off.transaction(async (tx) => {
      const [row] = await tx.rows<{ n: number }>(neverNamed, [1]);
      await tx.rows(neverNamed, [2]);
      const statements = await tx.rows<{ statement: string }>({
        name: 'test_statements_list_off',
        text: 'select statement from pg_prepared_statements',
      });
      return { n: row?.n, texts: statements.map((s) => s.statement) };
    });
    expect(seen.n).to.equal(4);
    expect(seen.texts.filter((t) => t.includes('/* never named */'))).to.deep.equal([]);
  });

  it('knows PgBouncer from PostgreSQL itself', async function () {
    if (!harness().directUrl)
      skipBecause(this, 'no DATABASE_DIRECT_URL, so no pooler in front of DATABASE_URL');
    const { orm } = harness().service.deps;
    expect(await behindPooler(await orm.em.getConnection().getNativeClient()), 'DATABASE_URL').to.equal(true);
    const direct = new pg.Pool({ connectionString: harness().directUrl, max: 1 });
    try {
      expect(await behindPooler(direct), 'DATABASE_DIRECT_URL').to.equal(false);
    } finally {
      await direct.end();
    }
  });

  it('sends a TextArray as text[] that arrives exactly as written, on the pool and through the ORM', async () => {
    const items = [
      '{"event_id":"e1","data":{"name":"O\'Brien \\ \\"Ade\\""}}',
      '',
      'naïve – ₦ 1,000 – 😀',
      '{,}"\\NULL',
      'x'.repeat(5000),
    ];
    const { sql, orm } = harness().service.deps;
    for (const path of [sql, emSql(orm.em.fork())]) {
      const rows = await path.rows<{ text: string }>(echoTexts, [new TextArray(items)]);
      expect(rows.map((r) => r.text)).to.deep.equal(items);
      expect(await path.rows(echoTexts, [new TextArray([])])).to.deep.equal([]);
    }
  });
});
