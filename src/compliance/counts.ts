import { type Sql, statement } from '#src/db/sql.ts';
import type { ComplianceModel } from '#src/docs/compliance.ts';

/**
 * Live counts of the objects in each state of every machine, for `admin.machines`.
 *
 * Each machine's objects are rows of one table whose status column names the top-level state; a
 * state with inner states (a payout's `PENDING_PAYMENT`, an inflow's `HELD`) keeps the inner one in
 * the persisted snapshot (`snapshot->'value'->>status`). One statement counts everything: a
 * `GROUP BY` of each status column, read from an index that starts with it (payouts excepted: their
 * status has no index of its own, so their counts read the table), and the inner states of the few
 * rows in a state that has them.
 */

/** Where a machine's objects live: the table and the column its machine writes the state to. */
export interface CountedTable {
  table: string;
  column: string;
}

/**
 * Every machine whose objects are rows, by the machine's name (its file stem in `machines/`). Only
 * the machines registered for the pages (`src/docs/registry.ts`) are counted.
 */
export const COUNTED_TABLES: Readonly<Record<string, CountedTable>> = {
  payout: { table: 'payouts', column: 'status' },
  'payment-instruction': { table: 'payment_instructions', column: 'status' },
  inflow: { table: 'inflows', column: 'state' },
  quote: { table: 'quotes', column: 'status' },
  outflow: { table: 'outflows', column: 'status' },
  refund: { table: 'refunds', column: 'status' },
  'webhook-delivery': { table: 'webhook_deliveries', column: 'status' },
  approval: { table: 'approvals', column: 'status' },
  'recon-break': { table: 'recon_breaks', column: 'status' },
};

/** The top-level states of each machine that have inner states, read from the model. */
function compositeStates(model: ComplianceModel): Map<string, string[]> {
  const composites = new Map<string, string[]>();
  for (const machine of model.machines) {
    composites.set(
      machine.name,
      machine.states.filter((s) => s.parent === null && s.children.length > 0).map((s) => s.path),
    );
  }
  return composites;
}

const quoted = (value: string): string => `'${value.replaceAll("'", "''")}'`;

/**
 * The statement for `model`'s machines: `(machine, path, count)` rows, one per state that has
 * objects. Names come from the code (the table list and the machines), never from a request.
 */
export function countsStatementText(model: ComplianceModel): string {
  const parts: string[] = [];
  for (const [machine, composites] of compositeStates(model)) {
    const counted = COUNTED_TABLES[machine];
    if (!counted) continue;
    const { table, column } = counted;
    parts.push(
      `(select ${quoted(machine)} as machine, "${column}" as path, count(*)::int as count from "${table}" group by "${column}")`,
    );
    if (composites.length > 0) {
      parts.push(
        `(select ${quoted(machine)}, "${column}" || '.' || ("snapshot"->'value'->>"${column}"), count(*)::int from "${table}"` +
          ` where "${column}" in (${composites.map(quoted).join(', ')}) group by 2)`,
      );
    }
  }
  return parts.join('\nunion all\n');
}

let prepared: { text: string; statement: ReturnType<typeof statement> } | undefined;

/** Counts per machine and state path (`PENDING_PAYMENT`, `PENDING_PAYMENT.held`). */
export async function stateCounts(
  sql: Sql,
  model: ComplianceModel,
): Promise<Map<string, Map<string, number>>> {
  const text = countsStatementText(model);
  if (prepared && prepared.text !== text) throw new Error('the machines changed while the service ran');
  prepared ??= { text, statement: statement('compliance_state_counts', text) };
  const rows = await sql.rows<{ machine: string; path: string | null; count: number }>(prepared.statement);
  const counts = new Map<string, Map<string, number>>();
  for (const row of rows) {
    if (row.path === null) continue;
    const machine = counts.get(row.machine) ?? new Map<string, number>();
    machine.set(row.path, (machine.get(row.path) ?? 0) + row.count);
    counts.set(row.machine, machine);
  }
  return counts;
}

/** The model with every counted state's `count` filled in (0 where no object is in it). */
export function withCounts(
  model: ComplianceModel,
  counts: Map<string, Map<string, number>>,
): ComplianceModel {
  return {
    ...model,
    machines: model.machines.map((machine) => {
      if (!COUNTED_TABLES[machine.name]) return machine;
      const own = counts.get(machine.name) ?? new Map<string, number>();
      return {
        ...machine,
        states: machine.states.map((s) => ({ ...s, count: own.get(s.path) ?? 0 })),
      };
    }),
  };
}
