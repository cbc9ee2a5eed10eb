import type { AnyRouter } from '@trpc/server';
import { expect } from 'chai';
import type { ProcedureMeta } from '#src/http/trpc.ts';
import { appRouter } from '#src/router.ts';

type ProcedureDef = { type: string; meta?: ProcedureMeta };

/**
 * The console's reads of one object, which read the primary: an operator opening a payout, an
 * approval or a break sees it as it is now. Every other `admin.*` query is a list or a count and is
 * marked `lagTolerant`, so that it reads from the replica (docs/scaling.md, "A streaming replica").
 */
const ONE_OBJECT = new Set([
  'admin.me',
  'admin.payouts.get',
  'admin.approvals.get',
  'admin.recon.break',
  'admin.ledger.account',
  'admin.ledger.payout',
]);

describe("the console's reads and the replica", () => {
  const queries = Object.entries((appRouter as AnyRouter)._def.procedures)
    .map(([name, procedure]) => [name, (procedure as { _def: ProcedureDef })._def] as const)
    .filter(([name, def]) => name.startsWith('admin.') && def.type === 'query');

  it('marks every admin list and count lag-tolerant, and reads one object from the primary', () => {
    expect(queries.length).to.be.greaterThan(ONE_OBJECT.size);
    for (const [name, def] of queries) {
      expect(Boolean(def.meta?.lagTolerant), name).to.equal(!ONE_OBJECT.has(name));
    }
  });

  it('names only reads that exist among the reads of one object', () => {
    const names = new Set(queries.map(([name]) => name));
    for (const name of ONE_OBJECT) expect(names.has(name), name).to.equal(true);
  });
});
