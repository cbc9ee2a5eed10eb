import { rowsWith, type Sql, statement, WITHOUT_JIT } from '#src/db/sql.ts';
import { CASES_MACHINE, type ComplianceModel, type ComplianceState } from '#src/docs/compliance.ts';
import { ACCOUNT_KINDS, type AccountKindName } from '#src/ledger/chart.ts';

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

/** A statement prepared once per process from the model's text; the model never changes while it runs. */
function preparedOnce(name: string) {
  let prepared: { text: string; statement: ReturnType<typeof statement> } | undefined;
  return (text: string) => {
    if (prepared && prepared.text !== text) throw new Error('the machines changed while the service ran');
    prepared ??= { text, statement: statement(name, text) };
    return prepared.statement;
  };
}

const stateCountsStatement = preparedOnce('compliance_state_counts');

/** Counts per machine and state path (`PENDING_PAYMENT`, `PENDING_PAYMENT.held`). */
export async function stateCounts(
  sql: Sql,
  model: ComplianceModel,
): Promise<Map<string, Map<string, number>>> {
  const rows = await rowsWith<{ machine: string; path: string | null; count: number }>(
    sql,
    WITHOUT_JIT,
    stateCountsStatement(countsStatementText(model)),
  );
  const counts = new Map<string, Map<string, number>>();
  for (const row of rows) {
    if (row.path === null) continue;
    const machine = counts.get(row.machine) ?? new Map<string, number>();
    machine.set(row.path, (machine.get(row.path) ?? 0) + row.count);
    counts.set(row.machine, machine);
  }
  return counts;
}

/** The model with every counted state's `count` filled in (0 where no object is in it), and its cases'. */
export function withCounts(
  model: ComplianceModel,
  counts: Map<string, Map<string, number>>,
  cases: Map<string, Map<string, number>> = new Map(),
): ComplianceModel {
  return {
    ...model,
    machines: model.machines.map((machine) => {
      if (!COUNTED_TABLES[machine.name]) return machine;
      const own = counts.get(machine.name) ?? new Map<string, number>();
      const inCases = machine.name === CASES_MACHINE ? cases : new Map<string, Map<string, number>>();
      return {
        ...machine,
        states: machine.states.map((s) => ({
          ...s,
          count: own.get(s.path) ?? 0,
          cases: s.cases.map((c) => ({ ...c, count: inCases.get(s.path)?.get(c.code) ?? 0 })),
        })),
      };
    }),
  };
}

// ---------------------------------------------------------------------------------------------
// Money cases: where a state name alone cannot say where a payout's money is

/** A LIKE pattern matching every account of a kind: `tenants:%:payouts:%`. */
const likePattern = (kind: AccountKindName): string =>
  ACCOUNT_KINDS[kind].pattern.replace(/[\\%_]/g, (c) => `\\${c}`).replace(/\{\w+\}/g, '%');

/**
 * The statement counting the payouts of each state that has money cases, by case: `(path, code,
 * count)`. Each payout's entries are read through the payout index (`ledger_entries_payout_idx`),
 * summed per account kind and currency, and the first case whose test holds names it; a payout
 * no case fits counts under a null code. It never reads the entries of payouts in other states.
 * With `onePayout`, the same for the payout `$1` alone (the console's payout page): one row, or
 * none when its state has no cases.
 */
export function casesStatementText(
  model: ComplianceModel,
  { onePayout = false }: { onePayout?: boolean } = {},
): string | null {
  const machine = model.machines.find((m) => m.name === CASES_MACHINE);
  const states = machine?.states.filter((s) => s.cases.length > 0) ?? [];
  if (states.length === 0) return null;
  const kinds = [
    ...new Set(states.flatMap((s) => s.cases.flatMap((c) => c.test.accounts))),
  ] as AccountKindName[];
  const kindOf = `case ${kinds.map((k) => `when e.account like ${quoted(likePattern(k))} then ${quoted(k)}`).join(' ')} end`;
  const inKinds = (accounts: string[]) => `b.kind in (${accounts.map(quoted).join(', ')})`;
  const pathCases = states.map((s) => {
    const whens = s.cases.map((c) => {
      const test =
        c.test.test === 'holds'
          ? `coalesce(bool_or(${inKinds(c.test.accounts)} and b.balance > 0), false)`
          : `coalesce(sum(b.entries) filter (where ${inKinds(c.test.accounts)}), 0) = 0`;
      return `when ${test} then ${quoted(c.code)}`;
    });
    return `when p.status = ${quoted(s.path)} then case ${whens.join(' ')} end`;
  });
  const { table, column } = COUNTED_TABLES[CASES_MACHINE]!;
  return `select p."${column}" as path, c.code, count(*)::int as count
  from "${table}" p
  cross join lateral (
    select case ${pathCases.join(' ')} end as code
      from (select ${kindOf} as kind, e.currency, sum(e.amount) as balance, count(*) as entries
              from ledger_entries e where e.payout_id = p.id group by 1, 2) b
  ) c
 where p."${column}" in (${states.map((s) => quoted(s.path)).join(', ')})${onePayout ? ' and p.id = $1' : ''}
 group by 1, 2`;
}

const allCases = preparedOnce('compliance_money_case_counts');
const oneCase = preparedOnce('compliance_money_case_of_payout');

/** Payouts per state and money case (`FAILED` → `RETURNED_TO_MERCHANT` → 3), read from the ledger. */
export async function caseCounts(
  sql: Sql,
  model: ComplianceModel,
): Promise<Map<string, Map<string, number>>> {
  const text = casesStatementText(model);
  const counts = new Map<string, Map<string, number>>();
  if (text === null) return counts;
  const rows = await rowsWith<{ path: string; code: string | null; count: number }>(
    sql,
    WITHOUT_JIT,
    allCases(text),
  );
  for (const row of rows) {
    if (row.code === null) continue;
    const state = counts.get(row.path) ?? new Map<string, number>();
    state.set(row.code, row.count);
    counts.set(row.path, state);
  }
  return counts;
}

const onePayoutTexts = new WeakMap<ComplianceModel, string | null>();

/**
 * Which of its state's money cases one payout is in, told by the ledger exactly as the Machines
 * page counts it: null when its state has no cases (read without a statement) or, out of
 * balance, when none fits.
 */
export async function caseOfPayout(
  sql: Sql,
  model: ComplianceModel,
  payout: { id: string; status: string },
): Promise<ComplianceState['cases'][number] | null> {
  const state = model.machines
    .find((m) => m.name === CASES_MACHINE)
    ?.states.find((s) => s.path === payout.status);
  if (!state || state.cases.length === 0) return null;
  if (!onePayoutTexts.has(model)) onePayoutTexts.set(model, casesStatementText(model, { onePayout: true }));
  const text = onePayoutTexts.get(model)!;
  const [row] = await sql.rows<{ code: string | null }>(oneCase(text), [payout.id]);
  return state.cases.find((c) => c.code === row?.code) ?? null;
}
