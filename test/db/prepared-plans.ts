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
