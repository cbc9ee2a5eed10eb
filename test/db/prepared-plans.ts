import type { EntityManager } from '@mikro-orm/postgresql';
import { type PlanNode, planNodes } from '#src/db/plan.ts';
import { harness } from '../harness.ts';

/**
 * Every node of the plans of `text` run as a prepared statement with `args` (e.g. `('a', 2)`):
 * the generic plan a prepared statement settles on, then the custom one for these values. Each
 * is planned in a transaction that is rolled back (a savepoint of `within`, when given: rows that
 * transaction wrote and never commits are planned over too).
 */
export async function preparedPlans(text: string, args = '', within?: EntityManager): Promise<PlanNode[][]> {
  const em = within ?? harness().service.deps.orm.em.fork();
  const plans: PlanNode[][] = [];
  for (const mode of ['force_generic_plan', 'force_custom_plan']) {
    const rolledBack = new Error('rolled back');
    await em
      .transactional(async (tx) => {
        await tx.execute(`set local plan_cache_mode = ${mode}`);
        await tx.execute(`prepare planned as ${text}`);
        const rows = (await tx.execute(`explain (format json) execute planned${args}`)) as {
          'QUERY PLAN': { Plan: PlanNode }[];
        }[];
        await tx.execute('deallocate planned');
        plans.push(planNodes(rows[0]!['QUERY PLAN'][0]!.Plan));
        throw rolledBack;
      })
      .catch((err: unknown) => {
        if (err !== rolledBack) throw err;
      });
  }
  return plans;
}

/**
 * How to read a plan over partitioned tables as one over their parents: each partition's name and
 * each of its indexes' names mapped to the parent's, and the partitions to leave out: those that
 * hold a tenth of the pages of their largest sibling or less (empty weeks ahead, other tests'
 * few rows). Reading a few pages whole is what the planner rightly does there; the rule a plan
 * test checks is about the partition holding the history it seeded.
 */
export async function partitionsAsParents(): Promise<{
  parentOf: (name: string) => string;
  small: Set<string>;
}> {
  const rows = await harness()
    .service.deps.orm.em.fork()
    .execute<{ name: string; parent: string; small: boolean }[]>(
      `select c.relname as name, p.relname as parent,
            c.relkind = 'r' and c.relpages * 10 <= max(c.relpages) over (partition by p.oid) as small
       from pg_inherits i join pg_class c on c.oid = i.inhrelid join pg_class p on p.oid = i.inhparent
      where c.relispartition and c.relnamespace = 'public'::regnamespace`,
    );
  const parents = new Map(rows.map((r) => [r.name, r.parent]));
  return {
    parentOf: (name) => parents.get(name) ?? name,
    small: new Set(rows.filter((r) => r.small).map((r) => r.name)),
  };
}
