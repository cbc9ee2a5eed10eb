import { z } from 'zod';
import type { Actor, GuardText, LedgerAccountKind, Link, MoneyCase, MoneyPlace } from '#machines/texts.ts';
import { WEBHOOK_MAX_ATTEMPTS } from '#machines/webhook-delivery.machine.ts';
import { EXCEPTION_QUEUES, OVERDUE_ALERTING, overdueVariable, QUEUE_INFO } from '#src/compliance/queues.ts';
import { type Config, configSchema } from '#src/config.ts';
import { Corridors, NETWORKS, type Network } from '#src/corridors/corridors.ts';
import { MAX_GENERATION_ATTEMPTS } from '#src/instructions/service.ts';
import { ACCOUNT_KINDS, MOVEMENT_LABELS } from '#src/ledger/chart.ts';
import { WEBHOOK_LEASE_MARGIN_MS } from '#src/webhooks/job.ts';
import {
  describeMachine,
  findState,
  formatDelay,
  type GuardExpr,
  guardCode,
  isComposite,
  type MachineModel,
  machineTitle,
  OTHERWISE,
  type StateModel,
  type TransitionModel,
} from './machines.ts';
import type { MachineDoc } from './registry.ts';

/**
 * The compliance view of the machines: every state with its meaning, where the money is and
 * whether it is final; every transition with what happens, its condition in plain words (with the
 * thresholds in force), who can cause it, and the other machines it moves. Built from the machine
 * objects and the texts beside them (`machines/texts.ts`), so it cannot drift from the code.
 *
 * The same model feeds the generated pages (`docs/machines/`), the public page `/docs/machines`
 * and the operators' console (`admin.machines`, which adds live counts). A machine whose texts are
 * incomplete yields `problems`, and generation refuses to run with any.
 *
 * Texts are plain sentences in which `backticks` mark a name from the code or the configuration.
 */

// ---------------------------------------------------------------------------------------------
// Vocabulary

export const MONEY_PLACES = [
  'NOT_YET_RECEIVED',
  'ON_THE_CHAIN',
  'WITH_US',
  'WITH_PROCESSOR',
  'ON_ITS_WAY_BACK',
  'WITH_BENEFICIARY',
  'BACK_WITH_MERCHANT',
  'HELD_FOR_PERSON',
] as const satisfies readonly MoneyPlace[];

export const ACTORS = [
  'SYSTEM',
  'PROCESSOR',
  'BANK_OR_CHAIN',
  'OPERATOR',
  'OPERATOR_FOUR_EYES',
  'MERCHANT',
] as const satisfies readonly Actor[];

interface Term {
  label: string;
  text: string;
  /** The colour pages use for it (state fills for money, arrows for actors). */
  color: string;
}

export const MONEY_TERMS: Record<MoneyPlace, Term> = {
  NOT_YET_RECEIVED: {
    label: 'not yet received',
    text: 'The merchant has not paid it yet, or not all of it.',
    color: '#eef1f5',
  },
  ON_THE_CHAIN: {
    label: 'on the chain, not yet ours',
    text: 'A transfer to one of our addresses is on its chain but not yet confirmed enough times: it is not in our books and nobody may count on it yet.',
    color: '#e4f4f1',
  },
  WITH_US: {
    label: 'with us',
    text: 'It arrived and sits in our accounts, between two steps (the ledger shows it in the merchant’s account for the payout, or in the merchant’s money not yet tied to a payout).',
    color: '#dcebff',
  },
  WITH_PROCESSOR: {
    label: 'with the processor',
    text: 'Handed to the payout processor, which accepted it and is paying the beneficiary.',
    color: '#ebe1ff',
  },
  ON_ITS_WAY_BACK: {
    label: 'on its way back to the merchant',
    text: 'A refund sent to the merchant over the bank or a chain, not yet confirmed; the refund fee is already kept.',
    color: '#ffe2bd',
  },
  WITH_BENEFICIARY: {
    label: 'with the beneficiary',
    text: 'Paid out: the beneficiary has it.',
    color: '#dcf3e2',
  },
  BACK_WITH_MERCHANT: {
    label: 'back with the merchant',
    text: 'Returned to the merchant: to the refund destination it registered (less the refund fee), or sent back outside the service by an operator, with evidence.',
    color: '#fff0c7',
  },
  HELD_FOR_PERSON: {
    label: 'held for a person',
    text: 'Nothing moves it until a person acts: the merchant, or operators (four eyes where money moves).',
    color: '#ffdcd5',
  },
};

/** What the states of a machine that holds no money say about money. */
export const NO_MONEY: Omit<Term, 'color'> = {
  label: 'not applicable',
  text: 'The machine decides about something that is not money (a price, a message): where the money is shows on the payout and refund it concerns.',
};

export const ACTOR_TERMS: Record<Actor, Term> = {
  SYSTEM: {
    label: 'the system',
    text: 'The service itself: its background jobs, its deadlines and its checks.',
    color: '#4f5b70',
  },
  PROCESSOR: {
    label: 'the processor',
    text: 'The payout processor that pays beneficiaries, by calling us back or when we ask it.',
    color: '#7a3fd0',
  },
  BANK_OR_CHAIN: {
    label: 'the bank or chain',
    text: 'Money arriving or leaving on the NGN bank or on the TRON and BSC chains.',
    color: '#08808a',
  },
  OPERATOR: {
    label: 'an operator',
    text: 'A person in operations, acting alone on something that moves no money.',
    color: '#c25400',
  },
  OPERATOR_FOUR_EYES: {
    label: 'an operator, with four eyes',
    text: 'A person in operations proposes and a second, different one approves before anything moves (“four eyes”: two people see every move of money).',
    color: '#b3006b',
  },
  MERCHANT: {
    label: 'the merchant',
    text: 'The merchant, through the API, or its server answering a webhook.',
    color: '#1f5fbf',
  },
};

/** The fees the service keeps, by kind: what the pages name wherever money is kept as one. */
export const FEE_KINDS = ['platform', 'network', 'refund'] as const;
export type FeeKind = (typeof FEE_KINDS)[number];

/** Each fee in words, with its ledger account and how its amount is set (`{NAME}`: the value in force). */
export const FEE_TERMS: Record<FeeKind, { label: string; account: string; text: string }> = {
  platform: {
    label: MOVEMENT_LABELS.platform_fee,
    account: ACCOUNT_KINDS.platformFee.pattern,
    text: 'The service’s price for a payout, kept when it succeeds: a percentage of the converted amount plus a fixed amount, set per corridor and settlement currency (`pricing` in the corridors file), locked with the rate.',
  },
  network: {
    label: MOVEMENT_LABELS.network_fee,
    account: ACCOUNT_KINDS.networkFee.pattern,
    text: 'What sending the payout costs on its rail, kept when it succeeds: {NETWORK_FEE} (`network_fee` in the corridors file), locked with the rate.',
  },
  refund: {
    label: MOVEMENT_LABELS.refund_fee,
    account: ACCOUNT_KINDS.refundFee.pattern,
    text: 'What sending a refund back costs on its rail, kept when the refund is sent and given back if it fails: {REFUND_FEE} (`refund_fee` in the corridors file), never more than the payout received.',
  },
};

// ---------------------------------------------------------------------------------------------
// The model (also the output of `admin.machines`)

const moneyPlace = z.enum(MONEY_PLACES);
const actor = z.enum(ACTORS);
const term = z.object({ label: z.string(), text: z.string(), color: z.string() });

/** A threshold a text names, with the value in force. */
export const thresholdOut = z.object({
  name: z.string(),
  value: z.union([z.number(), z.boolean(), z.string()]),
  /** The value as the texts show it: `30 min`, `3`. */
  display: z.string(),
  /**
   * `configuration`: an environment variable (README); `code`: a constant of the code;
   * `corridors`: the corridors file (`src/corridors/corridors.json`).
   */
  source: z.enum(['configuration', 'code', 'corridors']),
});
export type Threshold = z.infer<typeof thresholdOut>;

export const stateOut = z.object({
  /** Dotted from the top: `PENDING_PAYMENT.held`. */
  path: z.string(),
  key: z.string(),
  /** Path of the state it is inside, null at the top. */
  parent: z.string().nullable(),
  /** Paths of its inner states (empty for a plain state). */
  children: z.array(z.string()),
  /** Entered first when its parent (or the machine) is entered. */
  initial: z.boolean(),
  /** Nothing changes it any more. */
  final: z.boolean(),
  description: z.string(),
  /** Where the money is; null in a machine that holds none, and on a state with inner states (they say). */
  money: moneyPlace.nullable(),
  /** Live count of objects in this state (`admin.machines`); null where not counted. */
  count: z.number().int().nullable(),
  /**
   * Where the state name alone cannot say where the money is: the cases the ledger tells apart,
   * in the order they are tried (empty elsewhere). `count`: objects in this state in that case now.
   */
  cases: z.array(
    z.object({
      code: z.string(),
      label: z.string(),
      money: moneyPlace,
      description: z.string(),
      /** How the ledger tells it, in words, with the accounts it reads. */
      ledger: z.string(),
      /** The same as data: money above zero in (`holds`), or never an entry in (`empty`), accounts of these kinds. */
      test: z.object({ test: z.enum(['holds', 'empty']), accounts: z.array(z.string()) }),
      count: z.number().int().nullable(),
    }),
  ),
  /**
   * The exception queues its objects wait in for a person (`src/compliance/queues.ts`): how long
   * they may wait, who is alerted and when, and what the service does on its own after that.
   */
  waiting: z.array(
    z.object({
      queue: z.string(),
      title: z.string(),
      /** The overdue age in force, in words with its setting (`OVERDUE_<QUEUE>_HOURS` = 24). */
      overdue_after: z.string(),
      alerted: z.string(),
      afterwards: z.string(),
    }),
  ),
});
export type ComplianceState = z.infer<typeof stateOut>;

/** What a state's `waiting` says, in one paragraph (empty when nothing waits there for a person). */
export function waitingText(state: Pick<ComplianceState, 'waiting'>): string {
  return state.waiting
    .map(
      (w) =>
        `What waits here for a person is in the exception queue “${w.title}” (${w.queue}) and is overdue after ${w.overdue_after}. ${w.alerted} ${w.afterwards}`,
    )
    .join(' ');
}

/** One machine moving another: `event` null means it creates one of that machine's objects. */
export const linkOut = z.object({
  /** `declared` beside the machine; `webhook`: every transition that sends webhooks creates deliveries. */
  kind: z.enum(['declared', 'webhook']),
  machine: z.string(),
  event: z.string().nullable(),
  /** The numbers of that machine's transitions it takes (the creation is number 1). */
  transitions: z.array(z.number().int()),
  note: z.string().nullable(),
  text: z.string(),
});

export const causeOut = z.object({
  machine: z.string(),
  transition: z.number().int(),
  text: z.string(),
});

export const transitionOut = z.object({
  /** 1 is how an object begins; the others follow the machine's declaration order. */
  number: z.number().int(),
  /** Path of the state it leaves; null for the creation. */
  from: z.string().nullable(),
  /** True when `from` has inner states: it applies in any of them. */
  from_any: z.boolean(),
  to: z.string(),
  /** The state stays as it is (what changes is recorded, such as a new total). */
  stays: z.boolean(),
  /** The event's name in the code; null for the creation. */
  event: z.string().nullable(),
  guard: z.object({ code: z.string(), text: z.string() }).nullable(),
  description: z.string(),
  by: z.array(actor),
  effects: z.object({
    /** Reason codes of the payout timeline row it writes. */
    timeline: z.array(z.string()),
    /** Webhook events it sends the merchant. */
    webhooks: z.array(z.string()),
    /** Background work it makes due. */
    tasks: z.array(z.string()),
  }),
  causes: z.array(linkOut),
  caused_by: z.array(causeOut),
  /**
   * The `id`s of the arrows that draw it in the machine's SVG (`/docs/machines/<name>.svg`), each
   * with the state it leaves: a transition of a state with inner states that stays inside it is
   * drawn from each inner state.
   */
  diagram_edges: z.array(z.object({ from: z.string().nullable(), id: z.string() })),
});
export type ComplianceTransition = z.infer<typeof transitionOut>;

export const machineOut = z.object({
  /** File stem in `machines/` (`payout`). */
  name: z.string(),
  title: z.string(),
  summary: z.string(),
  source: z.string(),
  holds_money: z.boolean(),
  states: z.array(stateOut),
  transitions: z.array(transitionOut),
  guards: z.array(z.object({ name: z.string(), holds: z.string(), fails: z.string() })),
  /** Every threshold its texts name, with the value in force. */
  thresholds: z.array(thresholdOut),
  /** The diagram, and the `id` prefix of its states (`<name>/<path>`) and arrows in the SVG. */
  diagram: z.object({ svg: z.string() }),
});
export type ComplianceMachine = z.infer<typeof machineOut>;

export const complianceModelOut = z.object({
  money_places: z.array(term.extend({ code: moneyPlace })),
  actors: z.array(term.extend({ code: actor })),
  /** The fees the service keeps, by kind, with their ledger account and how the amount is set. */
  fees: z.array(
    z.object({ kind: z.enum(FEE_KINDS), label: z.string(), account: z.string(), text: z.string() }),
  ),
  machines: z.array(machineOut),
  /** Every link between machines, from the transition that causes it. */
  links: z.array(
    z.object({
      from: z.object({ machine: z.string(), transition: z.number().int() }),
      to: linkOut,
    }),
  ),
});
export type ComplianceModel = z.infer<typeof complianceModelOut>;

// ---------------------------------------------------------------------------------------------
// Thresholds

/** Constants of the code that texts may name, beside the configuration's variables. */
const CODE_CONSTANTS: Record<string, number> = {
  MAX_GENERATION_ATTEMPTS,
  WEBHOOK_MAX_ATTEMPTS,
  WEBHOOK_LEASE_MARGIN_MS,
};

const PLACEHOLDER = /\{([A-Z][A-Z0-9_]*)\}/g;

/** The fees of the corridors file that texts may name, as one line each over every rail. */
function corridorValues(corridors: Corridors): Record<string, string> {
  const fees = (
    fee: (currency: 'USDT' | 'NGN', network: Network | null) => { toFixed(dp: number): string },
  ) =>
    [
      `${fee('NGN', null).toFixed(2)} NGN on the bank`,
      ...NETWORKS.map((n) => `${fee('USDT', n).toFixed(2)} USDT on ${n}`),
    ].join(', ');
  return {
    NETWORK_FEE: fees((c, n) => corridors.networkFee(c, n)),
    REFUND_FEE: fees((c, n) => corridors.refundFee(c, n)),
  };
}

function thresholdOf(name: string, config: Config, corridors: Corridors): Threshold | null {
  let value: unknown;
  let source: Threshold['source'];
  const fromCorridors = corridorValues(corridors);
  if (name in fromCorridors) {
    return { name, value: fromCorridors[name]!, display: fromCorridors[name]!, source: 'corridors' };
  }
  if (name in configSchema.shape) {
    value = config[name as keyof Config];
    source = 'configuration';
  } else if (name in CODE_CONSTANTS) {
    value = CODE_CONSTANTS[name];
    source = 'code';
  } else {
    return null;
  }
  if (typeof value !== 'number' && typeof value !== 'boolean' && typeof value !== 'string') return null;
  const display =
    typeof value === 'number' && name.endsWith('_MS') ? formatDelay(String(value)) : String(value);
  return { name, value, display, source };
}

/** Resolves `{NAME}` placeholders of one machine's texts, remembering which thresholds it used. */
interface Resolver {
  text(text: string, what: string): string;
  used: Map<string, Threshold>;
}

function resolver(config: Config, corridors: Corridors, problems: string[], machine: string): Resolver {
  const used = new Map<string, Threshold>();
  return {
    used,
    text: (text, what) =>
      text.replace(PLACEHOLDER, (whole, name: string) => {
        const threshold = thresholdOf(name, config, corridors);
        if (!threshold) {
          problems.push(
            `${machine}: ${what} names ${whole}, which is neither a configuration variable nor a known constant`,
          );
          return whole;
        }
        used.set(name, threshold);
        return threshold.source === 'corridors' ? threshold.display : `\`${name}\` = ${threshold.display}`;
      }),
  };
}

// ---------------------------------------------------------------------------------------------
// Building it

/** Transitions of one machine, numbered: 1 is the creation, then the event rows in order. */
interface Numbered {
  number: number;
  row: TransitionModel | null;
}

const words = (event: string): string => event.toLowerCase().replaceAll('_', ' ');

function isActor(value: unknown): value is Actor {
  return typeof value === 'string' && (ACTORS as readonly string[]).includes(value);
}

function isMoneyPlace(value: unknown): value is MoneyPlace {
  return typeof value === 'string' && (MONEY_PLACES as readonly string[]).includes(value);
}

/** The guard in plain words, as it reads after "if" (`negated`: its opposite). */
function guardWords(
  expr: GuardExpr,
  guards: Record<string, GuardText>,
  missing: (name: string) => void,
  negated = false,
): string {
  switch (expr.kind) {
    case 'named': {
      const text = guards[expr.name];
      if (!text) {
        missing(expr.name);
        return expr.name;
      }
      return negated ? text.fails : text.holds;
    }
    case 'other':
      return negated ? `not ${expr.text}` : expr.text;
    case 'not':
      return guardWords(expr.part, guards, missing, !negated);
    case 'and':
    case 'or': {
      // De Morgan: the opposite of "a and b" is "not a, or not b".
      const joiner = (expr.kind === 'and') !== negated ? ', and ' : ', or ';
      return expr.parts.map((part) => guardWords(part, guards, missing, negated)).join(joiner);
    }
  }
}

interface Draft {
  doc: MachineDoc;
  model: MachineModel;
  machine: ComplianceMachine;
  /** Declared links per transition number, resolved once every machine is known. */
  declared: Map<number, Link[]>;
}

function stateOf(
  doc: MachineDoc,
  model: MachineModel,
  state: StateModel,
  resolve: Resolver,
  problems: string[],
): ComplianceState {
  const where = `${doc.name}: state ${state.path}`;
  const parent = state.path.includes('.') ? state.path.slice(0, state.path.lastIndexOf('.')) : null;
  const owner = parent === null ? model.root : findState(model, parent);
  if (!state.description) problems.push(`${where} has no description (what it means, in plain words)`);
  const money = state.meta?.['money'];
  if (money !== undefined && !isMoneyPlace(money))
    problems.push(`${where}: money ${String(money)} is not a place`);
  const atomic = !isComposite(state);
  const cases = casesOf(doc.name, state.path, where, state.meta?.['cases'], resolve, problems);
  if (doc.texts.holdsMoney && atomic && money === undefined && cases.length === 0) {
    problems.push(`${where} does not say where the money is (meta.money, or meta.cases)`);
  }
  if (!doc.texts.holdsMoney && money !== undefined) {
    problems.push(`${where} says where the money is, but the machine holds none (holdsMoney: false)`);
  }
  if (!atomic && money !== undefined) {
    problems.push(`${where} has inner states: they say where the money is, not it`);
  }
  return {
    path: state.path,
    key: state.key,
    parent,
    children: state.children.map((c) => c.path),
    initial: owner?.initial === state.path,
    final: state.kind === 'final',
    description: resolve.text(state.description ?? '', `state ${state.path}`),
    money: isMoneyPlace(money) ? money : null,
    count: null,
    cases,
    waiting: waitingOf(doc.name, state.path, resolve, problems, money),
  };
}

/** An account kind of the chart as the pages write it: `tenants:<tenant>:payouts:<payout>`. */
const accountText = (kind: LedgerAccountKind): string =>
  `\`${(ACCOUNT_KINDS[kind as keyof typeof ACCOUNT_KINDS]?.pattern ?? kind).replace(/\{(\w+)\}/g, '<$1>')}\``;

/** How the ledger tells a case, in words. */
export function ledgerTestText(ledger: MoneyCase['ledger']): string {
  const accounts = ledger.accounts.map(accountText).join(' or ');
  return ledger.test === 'holds'
    ? `the ledger shows the payout’s money above zero in ${accounts}`
    : `the ledger has no entry of the payout’s money in ${accounts}, ever`;
}

/** The machine whose objects' ledger entries the cases read (by their `payout_id`). */
export const CASES_MACHINE = 'payout';

function casesOf(
  machine: string,
  path: string,
  where: string,
  declared: unknown,
  resolve: Resolver,
  problems: string[],
): ComplianceState['cases'] {
  if (declared === undefined) return [];
  const cases = Array.isArray(declared) ? (declared as MoneyCase[]) : [];
  if (machine !== CASES_MACHINE || path.includes('.')) {
    problems.push(
      `${where} has money cases, which only top-level payout states may have (they read the payout's ledger)`,
    );
  }
  const codes = new Set<string>();
  return cases.map((c) => {
    if (codes.has(c.code)) problems.push(`${where}: money case ${c.code} is declared twice`);
    codes.add(c.code);
    if (!isMoneyPlace(c.money))
      problems.push(`${where}: money case ${c.code}: ${String(c.money)} is not a place`);
    for (const kind of c.ledger.accounts) {
      if (!(kind in ACCOUNT_KINDS))
        problems.push(`${where}: money case ${c.code} reads ${kind}, no account kind`);
    }
    if (!c.description || !c.label)
      problems.push(`${where}: money case ${c.code} has no label or description`);
    return {
      code: c.code,
      label: c.label,
      money: c.money,
      description: resolve.text(c.description, `money case ${c.code}`),
      ledger: ledgerTestText(c.ledger),
      test: { test: c.ledger.test, accounts: [...c.ledger.accounts] },
      count: null,
    };
  });
}

/** The queues objects in `machine/path` wait in; a state that holds money for a person needs one. */
function waitingOf(
  machine: string,
  path: string,
  resolve: Resolver,
  problems: string[],
  money: unknown,
): ComplianceState['waiting'] {
  const queues = EXCEPTION_QUEUES.filter((q) => QUEUE_INFO[q].states.includes(`${machine}/${path}`));
  if (money === 'HELD_FOR_PERSON' && queues.length === 0) {
    problems.push(
      `${machine}: state ${path} holds money for a person, but no exception queue (src/compliance/queues.ts) names it: say how long it may wait`,
    );
  }
  return queues.map((q) => ({
    queue: q,
    title: QUEUE_INFO[q].title,
    overdue_after: resolve.text(`{${overdueVariable(q)}} hours`, `overdue age of ${q}`),
    alerted: OVERDUE_ALERTING,
    afterwards: resolve.text(QUEUE_INFO[q].overdue.afterwards, `what follows in ${q}`),
  }));
}

function draftMachine(doc: MachineDoc, config: Config, corridors: Corridors, problems: string[]): Draft {
  const model = describeMachine(doc.machine);
  const resolve = resolver(config, corridors, problems, doc.name);
  if (!model.description) problems.push(`${doc.name}: the machine has no description (its one-line summary)`);

  const numbered: Numbered[] = [{ number: 1, row: null }];
  for (const row of model.transitions) {
    if (row.kind === 'event') numbered.push({ number: numbered.length + 1, row });
  }
  const created = model.transitions.find((t) => t.kind === 'created');
  const declared = new Map<number, Link[]>();
  const usedGuards = new Set<string>();

  const transitions = numbered.map(({ number, row }): ComplianceTransition => {
    const where = row
      ? `${doc.name}: transition ${number} (${row.source} ${row.event})`
      : `${doc.name}: creation`;
    const meta = row ? (row.meta ?? {}) : doc.texts.created;
    const description = row ? row.description : doc.texts.created.description;
    if (!description) problems.push(`${where} has no description (what happens, in plain words)`);
    const by = Array.isArray(meta['by']) ? (meta['by'] as unknown[]) : [];
    if (by.length === 0) problems.push(`${where} does not say who can cause it (meta.by)`);
    for (const who of by) if (!isActor(who)) problems.push(`${where}: ${String(who)} is not an actor`);
    const causes = Array.isArray(meta['causes']) ? (meta['causes'] as Link[]) : [];
    if (causes.length > 0) declared.set(number, causes);

    let guard: ComplianceTransition['guard'] = null;
    const missing = (name: string) => problems.push(`${where}: guard ${name} has no text`);
    if (row?.guardExpr) {
      const walk = (e: GuardExpr): void => {
        if (e.kind === 'named') usedGuards.add(e.name);
        else if (e.kind === 'not') walk(e.part);
        else if (e.kind !== 'other') e.parts.forEach(walk);
      };
      walk(row.guardExpr);
      guard = {
        code: row.guard ?? guardCode(row.guardExpr),
        text: resolve.text(
          guardWords(row.guardExpr, doc.texts.guards, missing),
          `guard of transition ${number}`,
        ),
      };
    } else if (row?.guard === OTHERWISE) {
      // The fallback row: none of the guarded rows before it for the same state and event held.
      const before = model.transitions
        .slice(0, model.transitions.indexOf(row))
        .filter((t) => t.kind === 'event' && t.source === row.source && t.event === row.event && t.guardExpr);
      const text = before
        .map((t) => guardWords(t.guardExpr!, doc.texts.guards, missing, true))
        .join('; and ');
      guard = { code: OTHERWISE, text: resolve.text(`otherwise: ${text}`, `guard of transition ${number}`) };
    }

    const source = row ? findState(model, row.source) : undefined;
    const effects = row ?? created;
    return {
      number,
      from: row ? row.source : null,
      from_any: isComposite(source),
      to: row ? row.target : (model.root.initial ?? ''),
      stays: row?.stays ?? false,
      event: row ? row.event : null,
      guard,
      description: resolve.text(description ?? '', `transition ${number}`),
      by: by.filter(isActor),
      effects: {
        timeline: effects?.reasonCodes ?? [],
        webhooks: effects?.webhooks ?? [],
        tasks: effects?.tasks ?? [],
      },
      causes: [],
      caused_by: [],
      diagram_edges: [],
    };
  });

  for (const name of Object.keys(doc.texts.guards)) {
    if (!usedGuards.has(name))
      problems.push(`${doc.name}: guard ${name} has a text but no transition uses it`);
  }
  const guards = [...usedGuards].map((name) => {
    const text = doc.texts.guards[name];
    return {
      name,
      holds: resolve.text(text?.holds ?? '', `guard ${name}`),
      fails: resolve.text(text?.fails ?? '', `guard ${name}`),
    };
  });
  const states = model.states.map((s) => stateOf(doc, model, s, resolve, problems));
  return {
    doc,
    model,
    declared,
    machine: {
      name: doc.name,
      title: machineTitle(doc.name),
      summary: resolve.text(model.description ?? '', 'summary'),
      source: `machines/${doc.name}.machine.ts`,
      holds_money: doc.texts.holdsMoney,
      states,
      transitions,
      guards,
      thresholds: [...resolve.used.values()].sort((a, b) => a.name.localeCompare(b.name)),
      diagram: { svg: `/docs/machines/${doc.name}.svg` },
    },
  };
}

/** The machine every `emit` creates objects of: one delivery per event and URL. */
export const WEBHOOK_MACHINE = 'webhook-delivery';

const article = (noun: string): string => (/^[aeiou]/i.test(noun) ? `an ${noun}` : `a ${noun}`);

function linkText(target: Draft, event: string | null): string {
  const title = target.machine.title.toLowerCase();
  return event === null ? `creates ${article(title)}` : `moves the ${title}: ${words(event)}`;
}

/** Resolves declared and derived links once every machine is drafted, in both directions. */
function link(drafts: Draft[], problems: string[]): ComplianceModel['links'] {
  const byName = new Map(drafts.map((d) => [d.doc.name, d]));
  const links: ComplianceModel['links'] = [];
  for (const from of drafts) {
    for (const t of from.machine.transitions) {
      const declared = (from.declared.get(t.number) ?? []).map((l) => ({
        kind: 'declared' as const,
        machine: l.machine,
        event: 'creates' in l ? null : l.event,
        note: l.note ?? null,
      }));
      const derived =
        t.effects.webhooks.length > 0 && byName.has(WEBHOOK_MACHINE)
          ? [
              {
                kind: 'webhook' as const,
                machine: WEBHOOK_MACHINE,
                event: null,
                note: `for ${t.effects.webhooks.join(', ')}`,
              },
            ]
          : [];
      for (const l of [...declared, ...derived]) {
        const where = `${from.doc.name}: transition ${t.number}`;
        const target = byName.get(l.machine);
        if (!target) {
          problems.push(`${where} names machine ${l.machine}, which is not registered`);
          continue;
        }
        const reached = target.machine.transitions.filter((x) => x.event === l.event).map((x) => x.number);
        if (reached.length === 0) {
          problems.push(
            `${where} names event ${l.event} of ${l.machine}, which that machine does not handle`,
          );
          continue;
        }
        const out = { ...l, transitions: reached, text: linkText(target, l.event) };
        t.causes.push(out);
        links.push({ from: { machine: from.doc.name, transition: t.number }, to: out });
        for (const n of reached) {
          const causedBy = target.machine.transitions[n - 1]!.caused_by;
          // Two links of one transition to the same target (two reasons to create a refund) are one cause.
          if (causedBy.some((c) => c.machine === from.doc.name && c.transition === t.number)) continue;
          causedBy.push({
            machine: from.doc.name,
            transition: t.number,
            text: `${from.machine.title.toLowerCase()} ${t.number} (${t.event === null ? 'created' : words(t.event)})`,
          });
        }
      }
    }
  }
  return links;
}

/** The compliance model of `docs` with the thresholds of `config`, and what is missing from the texts. */
export function buildComplianceModel(
  docs: readonly MachineDoc[],
  config: Config,
  corridors: Corridors = Corridors.shipped(),
): { model: ComplianceModel; problems: string[] } {
  const problems: string[] = [];
  const drafts = docs.map((doc) => draftMachine(doc, config, corridors, problems));
  const fees = FEE_KINDS.map((kind) => ({
    kind,
    label: FEE_TERMS[kind].label,
    account: FEE_TERMS[kind].account,
    text: resolver(config, corridors, problems, 'fees').text(FEE_TERMS[kind].text, `${kind} fee`),
  }));
  for (const q of EXCEPTION_QUEUES) {
    for (const named of QUEUE_INFO[q].states) {
      const [machine, path] = named.split('/') as [string, string];
      const draft = drafts.find((d) => d.machine.name === machine);
      if (draft && !draft.machine.states.some((s) => s.path === path)) {
        problems.push(`exception queue ${q} names ${named}, which is no state of the ${machine} machine`);
      }
    }
  }
  const links = link(drafts, problems);
  for (const d of drafts) assignDiagramIds(d.machine);
  return {
    model: {
      money_places: MONEY_PLACES.map((code) => ({ code, ...MONEY_TERMS[code] })),
      actors: ACTORS.map((code) => ({ code, ...ACTOR_TERMS[code] })),
      fees,
      machines: drafts.map((d) => d.machine),
      links,
    },
    problems,
  };
}

// ---------------------------------------------------------------------------------------------
// Diagram arrows

/** The `id` of a state's box (or of the frame around its inner states) in the SVG. */
export const stateNodeId = (machine: string, path: string): string => `${machine}/${path}`;

/**
 * One arrow per pair of ends and first actor: transitions that share them share an arrow, one line
 * of its label each. A transition of a state with inner states that stays inside it is drawn from
 * each inner state, as it applies there.
 */
export interface Arrow {
  id: string;
  from: string | null;
  to: string;
  /** Leaves the frame of a state with inner states (drawn from its border). */
  fromFrame: boolean;
  actor: Actor;
  transitions: ComplianceTransition[];
}

export function arrowsOf(machine: ComplianceMachine): Arrow[] {
  const arrows = new Map<string, Arrow>();
  const inner = (path: string): string[] => {
    const state = machine.states.find((s) => s.path === path);
    return !state || state.children.length === 0 ? [path] : state.children.flatMap(inner);
  };
  for (const t of machine.transitions) {
    const insideItself = t.from !== null && t.from_any && (t.to === t.from || t.to.startsWith(`${t.from}.`));
    const sources = t.from !== null && insideItself ? inner(t.from) : [t.from];
    for (const from of sources) {
      const actorOf = t.by[0] ?? 'SYSTEM';
      const key = JSON.stringify([from, t.to, actorOf]);
      const arrow = arrows.get(key);
      if (arrow) arrow.transitions.push(t);
      else
        arrows.set(key, {
          id: '',
          from,
          to: t.to,
          fromFrame: t.from_any && !insideItself,
          actor: actorOf,
          transitions: [t],
        });
    }
  }
  return [...arrows.values()].map((a) => {
    const numbers = a.transitions.map((t) => t.number).join('-');
    const copy = a.from !== null && a.transitions.some((t) => t.from !== a.from);
    return { ...a, id: `${machine.name}/t${numbers}${copy ? `@${a.from}` : ''}` };
  });
}

function assignDiagramIds(machine: ComplianceMachine): void {
  for (const arrow of arrowsOf(machine)) {
    for (const t of arrow.transitions) t.diagram_edges.push({ from: arrow.from, id: arrow.id });
  }
}

// ---------------------------------------------------------------------------------------------
// Shared wording of the pages

/** Who can cause a transition, in words: `the bank or chain, or an operator, with four eyes`. */
export function actorsText(by: readonly Actor[]): string {
  return by.map((who) => ACTOR_TERMS[who].label).join(', or ');
}

/** The money cell of a state. */
export function moneyText(machine: ComplianceMachine, state: ComplianceState): string {
  if (!machine.holds_money) return NO_MONEY.label;
  if (state.cases.length > 0) return 'as the ledger says (cases below)';
  if (state.money) return MONEY_TERMS[state.money].label;
  return 'as its inner states say';
}

/** The state a transition leaves, as the tables show it. */
export function fromText(t: ComplianceTransition): string {
  if (t.from === null) return '(new)';
  return t.from_any ? `${t.from} (any inner state)` : t.from;
}

/** The state it reaches, as the tables show it. */
export function toText(t: ComplianceTransition): string {
  return t.stays ? `${t.to} (stays)` : t.to;
}

/** The lines of a transition's links, both ways: `causes: creates a refund`, `caused by: outflow 2: accepted`. */
export function linkLines(t: ComplianceTransition): string[] {
  return [
    ...t.causes.map((c) => `${c.text}${c.note ? ` (${c.note})` : ''}`),
    ...t.caused_by.map((c) => `follows ${c.text}`),
  ];
}

/** Links between machines grouped for an overview: one row per machine, state reached and effect. */
export interface LinkGroup {
  machine: string;
  /** `a payout moves to FAILED`, `a payout is created`. */
  when: string;
  transitions: number[];
  /** What follows in the other machine: `creates a refund`, with its note. */
  then: string;
}

export function linkGroups(model: ComplianceModel, kind: 'declared' | 'webhook' = 'declared'): LinkGroup[] {
  const groups = new Map<string, LinkGroup>();
  for (const l of model.links) {
    if (l.to.kind !== kind) continue;
    const from = model.machines.find((m) => m.name === l.from.machine)!;
    const t = from.transitions[l.from.transition - 1]!;
    const noun = article(from.title.toLowerCase());
    const when =
      t.from === null
        ? `${noun} is created`
        : t.stays
          ? `${noun} stays \`${t.to}\``
          : `${noun} moves to \`${t.to}\``;
    const then = `${l.to.text}${l.to.note ? ` (${l.to.note})` : ''}`;
    const key = JSON.stringify([from.name, when, then]);
    const group = groups.get(key) ?? { machine: from.name, when, transitions: [], then };
    group.transitions.push(t.number);
    groups.set(key, group);
  }
  return [...groups.values()];
}
