/**
 * The nodes of a PostgreSQL plan as `EXPLAIN (FORMAT JSON)` gives them, for the tests and the
 * benchmark that check how a statement reads its tables.
 */
export interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  'Scan Direction'?: string;
  'Parent Relationship'?: string;
  'Rows Removed by Filter'?: number;
  'Actual Rows'?: number;
  'Actual Loops'?: number;
  Plans?: PlanNode[];
}

/**
 * The plan's nodes, depth first; a subplan's own (a payout's timeline, sorted for its one row) only
 * with `subplans`.
 */
export function planNodes(plan: PlanNode, options = { subplans: true }): PlanNode[] {
  const children = (plan.Plans ?? []).filter(
    (n) => options.subplans || n['Parent Relationship'] !== 'SubPlan',
  );
  return [plan, ...children.flatMap((n) => planNodes(n, options))];
}
