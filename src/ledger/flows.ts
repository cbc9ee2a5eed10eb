import { type Decimal, toDecimal } from '#src/lib/money.ts';
import type { AccountKindName, CauseObject, MovementType } from './chart.ts';
import { type LedgerTransaction, type Posting, transitionName } from './ledger.ts';

/**
 * How a machine's transition moves money, as data: a flow is a list of legs, each moving one
 * amount in one currency from one account to another (so every flow balances by construction).
 * A machine names the flow in its `post` action; the domain that applies the transition knows the
 * amounts and the accounts (`facts`) and turns the flow into a ledger transaction written in the
 * same database transaction. The same flows draw the ledger's picture (`docs/ledger-chart.svg`).
 */

/** One movement of money inside a flow. */
export interface Leg {
  /** The account the money leaves; of several kinds, the one the facts name (a deposit address or a virtual account). */
  from: AccountKindName | readonly AccountKindName[];
  to: AccountKindName | readonly AccountKindName[];
  /** The key of the amount in the facts (`received`, `converted`...). */
  amount: string;
  /** The key of the currency in the facts (`settlement`, `destination`). */
  currency: string;
  /**
   * How the merchant's statement shows the leg, seen from the payout's money: the entry on the
   * `on` side is the movement (its sign is the payout's gain or loss). Legs between two of the
   * payout's own places (its account and its money in transit) are not shown.
   */
  movement?: { type: MovementType; on: 'from' | 'to' };
}

export interface Flow {
  /** The object whose transition causes the flow. */
  cause: CauseObject;
  /** The name the machine's `post` action gives (`ATTRIBUTED`), unique per cause. */
  name: string;
  /** What happens to the money, in plain words. */
  description: string;
  legs: readonly Leg[];
}

/** What a domain knows when it applies a flow. */
export interface FlowFacts {
  accounts: Partial<Record<AccountKindName, string>>;
  amounts: Record<string, Decimal>;
  currencies: Record<string, string>;
}

/** The entries of a flow (legs whose amount is zero move nothing and are left out). */
export function postingsOf(flow: Flow, facts: FlowFacts): Posting[] {
  const postings: Posting[] = [];
  for (const leg of flow.legs) {
    const amount = facts.amounts[leg.amount];
    const currency = facts.currencies[leg.currency];
    if (amount === undefined || currency === undefined) {
      throw new Error(`flow ${flow.cause}.${flow.name}: no ${leg.amount} or ${leg.currency} given`);
    }
    if (amount.isZero()) continue;
    if (amount.isNegative()) throw new Error(`flow ${flow.cause}.${flow.name}: ${leg.amount} is negative`);
    const from = accountOf(flow, leg.from, facts);
    const to = accountOf(flow, leg.to, facts);
    const movement = (side: 'from' | 'to') => (leg.movement?.on === side ? leg.movement.type : null);
    postings.push({
      account: from,
      currency,
      amount: toDecimal(amount).negated(),
      movement: movement('from'),
    });
    postings.push({ account: to, currency, amount: toDecimal(amount), movement: movement('to') });
  }
  return postings;
}

/** The kinds a leg's end may be. */
export function kindsOf(end: Leg['from']): readonly AccountKindName[] {
  return typeof end === 'string' ? [end] : end;
}

function accountOf(flow: Flow, end: Leg['from'], facts: FlowFacts): string {
  for (const kind of kindsOf(end)) {
    const account = facts.accounts[kind];
    if (account) return account;
  }
  throw new Error(`flow ${flow.cause}.${flow.name}: no account for ${kindsOf(end).join(' or ')}`);
}

/** The flow named `name` among `flows`, or an error naming the machine's action that has none. */
export function flowNamed(flows: readonly Flow[], cause: CauseObject, name: string): Flow {
  const flow = flows.find((f) => f.cause === cause && f.name === name);
  if (!flow) throw new Error(`no ${cause} flow is named ${name}`);
  return flow;
}

/** A ledger transaction of one flow, caused by one transition of one object. */
export function flowTransaction(
  flow: Flow,
  facts: FlowFacts,
  args: Omit<LedgerTransaction, 'entries' | 'cause'> & { causeId: string; transition: string },
): LedgerTransaction {
  const { causeId, transition, ...rest } = args;
  return {
    ...rest,
    cause: { object: flow.cause, id: causeId, transition },
    entries: postingsOf(flow, facts),
  };
}

/** An action as a machine's transition hands it back (`{ type: 'post', params: { flow } }` among others). */
interface ActionData {
  type: string;
  params: unknown;
}

/** The names of the flows a transition's `post` actions ask for, in order. */
export function postedFlowNames(actions: readonly ActionData[]): string[] {
  return actions
    .filter((a) => a.type === 'post')
    .map((a) => String((a.params as { flow?: unknown } | null)?.flow));
}

/**
 * The ledger transactions of one transition: one per flow its `post` actions name, built from the
 * facts (asked for only when there is a flow). Empty when the transition moves no money.
 */
export function transitionLedger(args: {
  flows: readonly Flow[];
  cause: CauseObject;
  causeId: string;
  actions: readonly ActionData[];
  /** The event and the states, as the transition names them in every entry. */
  event: string;
  from: string;
  to: string;
  facts: () => FlowFacts;
  tenantId: string | null;
  payoutId: string | null;
  at: Date;
  approvalId?: string | null;
}): LedgerTransaction[] {
  const names = postedFlowNames(args.actions);
  if (names.length === 0) return [];
  const facts = args.facts();
  const transition = transitionName(args.event, args.from, args.to);
  return names.map((name) =>
    flowTransaction(flowNamed(args.flows, args.cause, name), facts, {
      tenantId: args.tenantId,
      payoutId: args.payoutId,
      causeId: args.causeId,
      transition,
      at: args.at,
      approvalId: args.approvalId ?? null,
    }),
  );
}
