import { expect } from 'chai';
import { statement } from '#src/db/sql.ts';
import { harness } from '../harness.ts';

const prepared = statement('test_statements_prepared', `select $1::int + 1 as n /* prepared */`);
const replanned = statement('test_statements_replanned', `select $1::int + 2 as n /* replanned */`, {
  replan: true,
});

describe('hot-path statements', () => {
  it('prepares a statement once per connection, and sends a replanned one unprepared each time', async function () {
    // PGlite's socket server lists no prepared statements in pg_prepared_statements.
    if (harness().embedded) this.skip();
    const { sql } = harness().service.deps;
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
    expect(seen.texts).to.include(prepared.text);
    expect(seen.texts.filter((t) => t.includes('/* replanned */'))).to.deep.equal([]);
  });
});
