import { type Viz, instance as vizInstance } from '@viz-js/viz';
import { type DirectedGraphNode, toDirectedGraph } from '@xstate/graph';
import type { AnyStateMachine, AnyStateNode } from 'xstate';

/**
 * Reads a machine's definition (through @xstate/graph) into a plain model of its states and
 * transitions, and renders that model as Mermaid, DOT and a transition table. Everything shown
 * comes from the machine object itself, so a diagram cannot disagree with the code.
 *
 * The machines' custom actions follow one convention (see `machines/payout.machine.ts`):
 * `timeline` carries a `reasonCode`, `emit` a webhook `event`, `schedule` a `task`. Any other
 * action is listed by name. Order is the machine's own declaration order throughout, which keeps
 * the output stable from one run to the next.
 */

export type StateKind = 'atomic' | 'compound' | 'parallel' | 'final' | 'history';

/** One state; `path` is dotted from the top level (`PENDING_PAYMENT.awaiting`), '' for the machine itself. */
export interface StateModel {
  path: string;
  key: string;
  kind: StateKind;
  /** Path of the child entered first, for compound states. */
  initial: string | null;
  children: StateModel[];
  /** The state's `description` and `meta`, as the machine declares them (see `machines/texts.ts`). */
  description: string | null;
  meta: Record<string, unknown> | null;
}

/** Where a row of the table comes from: an event handler, the machine's creation, or a state's entry or exit. */
export type TransitionKind = 'event' | 'created' | 'entry' | 'exit';

export interface TransitionModel {
  kind: TransitionKind;
  /** Path of the state that declares the transition ('' when the machine is created). */
  source: string;
  /** The event as a reader says it: `SETTLEMENT_CONFIRMED`, `after 30 s`, `(always)`. */
  event: string;
  guard: string | null;
  /** The guard as a tree (null without one; the `otherwise` row has none either). */
  guardExpr: GuardExpr | null;
  target: string;
  /** No target: the state stays as it is (context and actions only). */
  stays: boolean;
  reasonCodes: string[];
  webhooks: string[];
  tasks: string[];
  otherActions: string[];
  /** The transition's `description` and `meta`, as the machine declares them (event rows only). */
  description: string | null;
  meta: Record<string, unknown> | null;
}

/** A guard: a named one of `setup()`, or `and`, `or`, `not` of guards; `other` for what is neither. */
export type GuardExpr =
  | { kind: 'named'; name: string }
  | { kind: 'and' | 'or'; parts: GuardExpr[] }
  | { kind: 'not'; part: GuardExpr }
  | { kind: 'other'; text: string };

export interface MachineModel {
  id: string;
  root: StateModel;
  /** Every state but the machine itself, depth first. */
  states: StateModel[];
  transitions: TransitionModel[];
  /** Every distinct event the machine handles, in order of first appearance. */
  events: string[];
  guards: string[];
  /** The machine's own `description`: its one-line summary. */
  description: string | null;
}

interface ActionSummary {
  reasonCodes: string[];
  webhooks: string[];
  tasks: string[];
  otherActions: string[];
}

const CONVENTION: Record<string, keyof ActionSummary> = {
  timeline: 'reasonCodes',
  emit: 'webhooks',
  schedule: 'tasks',
};
const CONVENTION_PARAM: Record<string, string> = { timeline: 'reasonCode', emit: 'event', schedule: 'task' };

const MARK = '\u0000';

/** The guard cell of an unguarded transition listed after guarded ones for the same event. */
export const OTHERWISE = 'otherwise';

type ParamsFn = (args: unknown) => unknown;

interface Probe {
  /** The params as the function returns them when every field it reads is a marker naming that field. */
  marked: Record<string, unknown>;
  /** Which params came out the same when every field it reads is missing instead. */
  fixed: Set<string>;
  read: string[];
}

/**
 * Params written as a function of the event are not guessed. The function runs twice against
 * stand-ins: once where every field it reads is a marker naming the field, once where every such
 * field is missing; `event.type` is the transition's own event both times, as it is at run time.
 * A param that is exactly a marker is taken from that field (`(from event.failureCode)`); a
 * literal that comes out the same both times is fixed by the code; anything else is "computed".
 */
function probeParams(fn: ParamsFn, eventType: string | undefined): Probe {
  const read: string[] = [];
  const run = (marked: boolean): Record<string, unknown> => {
    const standIn = (name: string) =>
      new Proxy(
        {},
        {
          get(_target, prop) {
            if (typeof prop !== 'string') return undefined;
            if (name === 'event' && prop === 'type' && eventType !== undefined) return eventType;
            read.push(`${name}.${prop}`);
            return marked ? `${MARK}${name}.${prop}${MARK}` : undefined;
          },
        },
      );
    try {
      const value = fn({ context: standIn('context'), event: standIn('event') });
      return value && typeof value === 'object' ? (value as Record<string, unknown>) : {};
    } catch {
      return {};
    }
  };
  const marked = run(true);
  const blank = run(false);
  const fixed = new Set(
    Object.keys(marked).filter((k) => {
      const v = marked[k];
      const literal =
        typeof v === 'number' || typeof v === 'boolean' || (typeof v === 'string' && !v.includes(MARK));
      return literal && blank[k] === v;
    }),
  );
  return { marked, fixed, read: [...new Set(read)] };
}

function paramText(params: unknown, key: string, eventType: string | undefined): string | null {
  if (typeof params === 'function') {
    const probe = probeParams(params as ParamsFn, eventType);
    const v = probe.marked[key];
    const whole = typeof v === 'string' ? new RegExp(`^${MARK}([^${MARK}]+)${MARK}$`).exec(v) : null;
    if (whole) return `(from ${whole[1]})`;
    if (probe.fixed.has(key)) return String(v);
    return probe.read.length > 0 ? `(computed from ${probe.read.join(', ')})` : '(computed)';
  }
  const v = (params as Record<string, unknown> | undefined)?.[key];
  return v === undefined || v === null ? null : String(v);
}

/**
 * The fixed parameters of any other action, as `(status=FAILED)`: what the code fixes is shown,
 * what it computes from the event or the context is left out.
 */
function literalParams(action: unknown, eventType: string | undefined): string {
  if (!action || typeof action !== 'object' || !('params' in action)) return '';
  const params = action.params;
  let literals: [string, unknown][];
  if (typeof params === 'function') {
    const probe = probeParams(params as ParamsFn, eventType);
    literals = [...probe.fixed].map((k) => [k, probe.marked[k]]);
  } else if (params && typeof params === 'object') {
    literals = Object.entries(params).filter(([, v]) => ['string', 'number', 'boolean'].includes(typeof v));
  } else {
    literals = [];
  }
  return literals.length > 0 ? `(${literals.map(([k, v]) => `${k}=${String(v)}`).join(', ')})` : '';
}

function actionName(action: unknown): string {
  if (typeof action === 'string') return action;
  if (typeof action === 'function') {
    // Built-in action creators (assign, raise, ...) carry their type on the function.
    const type = (action as { type?: unknown }).type;
    if (typeof type === 'string') return type.replace(/^xstate\./, '');
    return '(inline action)';
  }
  if (action && typeof action === 'object' && 'type' in action) return String(action.type);
  return '(action)';
}

function summarizeActions(actions: readonly unknown[], eventType?: string): ActionSummary {
  const out: ActionSummary = { reasonCodes: [], webhooks: [], tasks: [], otherActions: [] };
  for (const action of actions) {
    const name = actionName(action);
    const bucket = CONVENTION[name];
    const paramKey = CONVENTION_PARAM[name];
    if (bucket && paramKey && action && typeof action === 'object') {
      const text = paramText((action as { params?: unknown }).params, paramKey, eventType);
      if (text) {
        out[bucket].push(text);
        continue;
      }
    }
    out.otherActions.push(name + literalParams(action, eventType));
  }
  return out;
}

function guardExpr(guard: unknown): GuardExpr | null {
  if (guard === undefined || guard === null) return null;
  if (typeof guard === 'string') return { kind: 'named', name: guard };
  if (typeof guard === 'function') {
    const g = guard as { name: string; guards?: unknown[]; stateValue?: unknown };
    if (Array.isArray(g.guards)) {
      const parts = g.guards.map((inner) => guardExpr(inner) ?? { kind: 'other' as const, text: '(guard)' });
      if (g.name === 'not') return { kind: 'not', part: parts[0]! };
      return { kind: g.name === 'or' ? 'or' : 'and', parts };
    }
    if (g.name === 'stateIn') return { kind: 'other', text: `in ${JSON.stringify(g.stateValue)}` };
    return { kind: 'other', text: '(inline guard)' };
  }
  if (typeof guard === 'object' && 'type' in guard) {
    const params = (guard as { params?: unknown }).params;
    const name = String(guard.type);
    if (params === undefined) return { kind: 'named', name };
    return {
      kind: 'other',
      text: typeof params === 'function' ? `${name}(computed)` : `${name}(${JSON.stringify(params)})`,
    };
  }
  return { kind: 'other', text: '(guard)' };
}

/** A guard as code reads it: `isRetryable and hasAttemptsLeft`, `not hasAttemptsLeft`. */
export function guardCode(expr: GuardExpr): string {
  switch (expr.kind) {
    case 'named':
      return expr.name;
    case 'other':
      return expr.text;
    case 'not':
      return `not ${guardCode(expr.part)}`;
    case 'and':
    case 'or':
      return expr.parts
        .map((part) => {
          const text = guardCode(part);
          return / (and|or) /.test(text) ? `(${text})` : text;
        })
        .join(` ${expr.kind} `);
  }
}

/** A duration in milliseconds as people say it: `30 min`, `10 s`, `500 ms`. */
export function formatDelay(delay: string): string {
  if (!/^\d+$/.test(delay)) return delay;
  const ms = Number(delay);
  if (ms % 3_600_000 === 0 && ms > 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0 && ms > 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0 && ms > 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

function eventText(eventType: string, stateNode: AnyStateNode): string {
  if (eventType === '') return '(always)';
  if (eventType === '*') return '(any event)';
  const afterPrefix = 'xstate.after.';
  const suffix = `.${stateNode.id}`;
  if (eventType.startsWith(afterPrefix) && eventType.endsWith(suffix)) {
    return `after ${formatDelay(eventType.slice(afterPrefix.length, -suffix.length))}`;
  }
  if (eventType.startsWith('xstate.done.state.')) return '(all regions done)';
  const actor = /^xstate\.(done|error)\.actor\.(.+)$/.exec(eventType);
  if (actor) return `${actor[2]} ${actor[1] === 'done' ? 'done' : 'error'}`;
  return eventType;
}

const pathOf = (node: AnyStateNode): string => node.path.join('.');

function stateModel(graph: DirectedGraphNode): StateModel {
  const node = graph.stateNode;
  const initialTarget = node.type === 'compound' ? node.initial?.target?.[0] : undefined;
  return {
    path: pathOf(node),
    key: node.path.length === 0 ? node.id : node.key,
    kind: node.type,
    initial: initialTarget ? pathOf(initialTarget) : null,
    children: graph.children.map(stateModel),
    description: node.description ?? null,
    meta: (node.meta as Record<string, unknown> | undefined) ?? null,
  };
}

/** Builds the model of `machine`: every state, every transition with its guard and its actions. */
export function describeMachine(machine: AnyStateMachine): MachineModel {
  const graph = toDirectedGraph(machine);
  const root = stateModel(graph);
  const transitions: TransitionModel[] = [];

  const lifecycleRow = (
    kind: TransitionKind,
    source: string,
    target: string,
    actions: readonly unknown[],
  ) => {
    if (actions.length === 0) return;
    transitions.push({
      kind,
      source,
      event: kind === 'created' ? '(created)' : kind === 'entry' ? '(on entry)' : '(on exit)',
      guard: null,
      guardExpr: null,
      target,
      stays: kind !== 'created',
      ...summarizeActions(actions),
      description: null,
      meta: null,
    });
  };

  const visit = (g: DirectedGraphNode) => {
    const node = g.stateNode;
    const path = pathOf(node);
    if (node.path.length === 0) {
      lifecycleRow('created', '', root.initial ?? '', node.entry);
    } else {
      lifecycleRow('entry', path, path, node.entry);
      lifecycleRow('exit', path, path, node.exit);
    }
    // toDirectedGraph leaves out eventless (`always`) transitions; they are part of the behaviour.
    const definitions = [
      ...g.edges.map((edge) => ({ transition: edge.transition, target: edge.target })),
      ...(node.always ?? []).flatMap((t) =>
        (t.target ?? [node]).map((target) => ({ transition: t, target })),
      ),
    ];
    for (const { transition, target } of definitions) {
      // An unguarded row after guarded ones for the same event is the fallback: say so.
      const earlier = transitions.some(
        (t) => t.kind === 'event' && t.source === path && t.event === eventText(transition.eventType, node),
      );
      const expr = guardExpr(transition.guard);
      transitions.push({
        kind: 'event',
        source: path,
        event: eventText(transition.eventType, node),
        guard: expr ? guardCode(expr) : earlier ? OTHERWISE : null,
        guardExpr: expr,
        target: pathOf(target),
        stays: !transition.target,
        ...summarizeActions(transition.actions, transition.eventType),
        description: transition.description ?? null,
        meta: (transition.meta as Record<string, unknown> | undefined) ?? null,
      });
    }
    for (const child of g.children) visit(child);
  };
  visit(graph);

  const states: StateModel[] = [];
  const flatten = (s: StateModel) => {
    for (const child of s.children) {
      states.push(child);
      flatten(child);
    }
  };
  flatten(root);
  const events = [...new Set(transitions.filter((t) => t.kind === 'event').map((t) => t.event))];
  const guards = [
    ...new Set(transitions.flatMap((t) => (t.guard && t.guard !== OTHERWISE ? [t.guard] : []))),
  ];
  return {
    id: machine.id,
    root,
    states,
    transitions,
    events,
    guards,
    description: machine.root.description ?? null,
  };
}

// ---------------------------------------------------------------------------------------------
// Shared wording

/** `payment-instruction` → `Payment instruction`. */
export function machineTitle(name: string): string {
  const words = name.replaceAll('-', ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/** `States: A, B (b1, b2)`: each top-level state with its nested ones. */
export function stateOutline(states: StateModel[]): string {
  return states
    .map((s) => (s.children.length > 0 ? `${s.key} (${stateOutline(s.children)})` : s.key))
    .join(', ');
}

/** The lines that explain how to read a diagram and its table (shared with the served page). */
export function readingGuide(model: MachineModel): string[] {
  const finals = model.states.filter((s) => s.kind === 'final').map((s) => s.path);
  const lines = [
    `States: ${stateOutline(model.root.children)}.${finals.length > 0 ? ` Final: ${finals.join(', ')}.` : ''}`,
    `Events handled: ${model.events.join(', ')}.`,
  ];
  if (model.guards.length > 0) lines.push(`Guards: ${model.guards.join(', ')}.`);
  lines.push(
    'Rows of one state and event are tried in order: the first whose guard holds is taken, ' +
      `\`${OTHERWISE}\` when none before it held. An event with no row for the current state ` +
      '(or a state around it), or whose guards all fail, is ignored: nothing changes and nothing is written.',
    '`X (any)` applies in every state inside X, unless a row of the inner state takes the same event first; ' +
      '`(stays)` keeps the state. `timeline` is the reason code ' +
      'of the status-timeline row, `emit` a webhook event written to the outbox, `schedule` a background ' +
      'task made due; `(from event.x)` is taken from that field of the event. Other actions are listed by name.',
  );
  return lines;
}

export function findState(model: MachineModel, path: string): StateModel | undefined {
  return path === '' ? model.root : model.states.find((s) => s.path === path);
}

export const isComposite = (s: StateModel | undefined): boolean => !!s && s.children.length > 0;

/** The "From" cell: a composite source applies in any of its states. */
export function fromText(model: MachineModel, t: TransitionModel): string {
  if (t.kind === 'created') return '(new)';
  return isComposite(findState(model, t.source)) ? `${t.source} (any)` : t.source;
}

/** The "To" cell. */
export function toText(t: TransitionModel): string {
  return t.stays ? `${t.target} (stays)` : t.target;
}

/** What a transition does, one line each: reason codes, webhooks, scheduled work, other actions. */
function effectLines(t: TransitionModel): string[] {
  return [
    ...t.reasonCodes.map((c) => `timeline ${c}`),
    ...t.webhooks.map((w) => `emit ${w}`),
    ...t.tasks.map((task) => `schedule ${task}`),
    ...t.otherActions.map((a) => `(${a})`),
  ];
}

export const within = (path: string, ancestor: string): boolean =>
  path === ancestor || path.startsWith(`${ancestor}.`);

export function atomicStates(state: StateModel): StateModel[] {
  return state.children.length === 0 ? [state] : state.children.flatMap(atomicStates);
}

/** One arrow of a picture: transitions that share both ends, guard and effects share one arrow. */
interface DrawnEdge {
  source: string;
  target: string;
  /** First line of the label: `EVENT_A | EVENT_B [guard]`. */
  headline: string;
  effects: string[];
}

/**
 * The arrows of the event transitions. A composite state's transition to a state inside it cannot
 * be drawn from the composite's border (neither Mermaid nor Graphviz can), so it is drawn from every
 * atomic state inside, which is exactly when it applies. Transitions that differ only by event are
 * merged into one arrow (`PROCESSOR_FAILED | DISPATCH_FAILED`); the table keeps one row each.
 */
function drawnEdges(model: MachineModel): DrawnEdge[] {
  const merged = new Map<
    string,
    { source: string; target: string; events: string[]; guard: string | null; effects: string[] }
  >();
  for (const t of model.transitions) {
    if (t.kind !== 'event') continue;
    const source = findState(model, t.source);
    const sources =
      source && isComposite(source) && within(t.target, t.source)
        ? atomicStates(source).map((s) => s.path)
        : [t.source];
    for (const from of sources) {
      const effects = effectLines(t);
      const key = JSON.stringify([from, t.target, t.guard, effects]);
      const edge = merged.get(key);
      if (edge) edge.events.push(t.event);
      else merged.set(key, { source: from, target: t.target, events: [t.event], guard: t.guard, effects });
    }
  }
  return [...merged.values()].map((e) => ({
    source: e.source,
    target: e.target,
    headline: `${e.events.join(' | ')}${e.guard ? ` [${e.guard}]` : ''}`,
    effects: e.effects,
  }));
}

// ---------------------------------------------------------------------------------------------
// Mermaid

const mermaidId = (path: string): string => path.replace(/[^A-Za-z0-9_]/g, '_');

/** Mermaid ends a label at `;` or `#`, and a colon confuses it: those characters are replaced. */
const mermaidText = (text: string): string => text.replace(/[;#:]/g, (c) => (c === ':' ? ' ' : ','));

export const parentOf = (path: string): string =>
  path.includes('.') ? path.slice(0, path.lastIndexOf('.')) : '';

/** The deepest composite state that holds both ends (the block the edge is written in); '' is the top. */
function commonBlock(model: MachineModel, source: string, target: string): string {
  let block = source;
  while (block !== '' && !(within(target, block) && isComposite(findState(model, block)))) {
    block = parentOf(block);
  }
  return block;
}

/** A Mermaid `stateDiagram-v2` of the model: nested states as composite blocks, effects on the edges. */
export function toMermaid(model: MachineModel): string {
  const lines: string[] = ['stateDiagram-v2'];
  const byBlock = new Map<string, string[]>();
  const add = (block: string, ...more: string[]) =>
    byBlock.set(block, [...(byBlock.get(block) ?? []), ...more]);
  const label = (parts: string[]) => parts.map(mermaidText).join('<br/>');

  const created = model.transitions.find((t) => t.kind === 'created');
  if (created)
    add('', `[*] --> ${mermaidId(created.target)} : ${label([created.event, ...effectLines(created)])}`);
  for (const edge of drawnEdges(model)) {
    add(
      commonBlock(model, edge.source, edge.target),
      `${mermaidId(edge.source)} --> ${mermaidId(edge.target)} : ${label([edge.headline, ...edge.effects])}`,
    );
  }
  for (const t of model.transitions) {
    if (t.kind !== 'entry' && t.kind !== 'exit') continue;
    add(
      parentOf(t.source),
      `note right of ${mermaidId(t.source)}`,
      label([t.event, ...effectLines(t)]),
      'end note',
    );
  }

  const writeBlock = (state: StateModel, indent: string) => {
    // The machine's own initial arrow is the "created" edge when its creation does something.
    if (state.initial && (state.path !== '' || !created))
      lines.push(`${indent}[*] --> ${mermaidId(state.initial)}`);
    for (const child of state.children) {
      const id = mermaidId(child.path);
      const name = child.key === id ? id : `"${child.key}" as ${id}`;
      if (child.children.length > 0) {
        lines.push(`${indent}state ${name} {`);
        writeBlock(child, `${indent}  `);
        lines.push(`${indent}}`);
      } else {
        lines.push(`${indent}${child.key === id ? id : `state ${name}`}`);
      }
    }
    for (const line of byBlock.get(state.path) ?? []) lines.push(`${indent}${line}`);
    for (const child of state.children) {
      if (child.kind === 'final') lines.push(`${indent}${mermaidId(child.path)} --> [*]`);
    }
  };
  writeBlock(model.root, '  ');
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------
// DOT (Graphviz)

export const dotString = (text: string): string => `"${text.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

/** The first atomic state a composite enters: an edge to or from a cluster is drawn to that node. */
export function anchorOf(model: MachineModel, path: string): string {
  let state = findState(model, path);
  while (state && state.children.length > 0) {
    state = findState(model, state.initial ?? state.children[0]!.path);
  }
  return state?.path ?? path;
}

export const POINT = 'shape=point, style=filled, fillcolor="#222222", color="#222222", label=""';

/** A Graphviz DOT digraph of the model: composite states as clusters, effects on the edge labels. */
export function toDot(model: MachineModel): string {
  const lines: string[] = [
    `digraph ${dotString(model.id)} {`,
    '  graph [rankdir=LR, compound=true, fontname="Helvetica", fontsize=13, nodesep=0.5, ranksep=0.6, pad=0.3, bgcolor="white"];',
    '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#3d5a80", fontname="Helvetica", fontsize=12, margin="0.18,0.08"];',
    '  edge [fontname="Helvetica", fontsize=9, color="#555555", arrowsize=0.7];',
  ];
  const writeState = (state: StateModel, indent: string) => {
    for (const child of state.children) {
      if (child.children.length > 0) {
        lines.push(`${indent}subgraph ${dotString(`cluster_${child.path}`)} {`);
        lines.push(
          `${indent}  label=${dotString(child.key)}; style="rounded,dashed"; color="#3d5a80"; fontname="Helvetica-Bold"; fontsize=12;`,
        );
        writeState(child, `${indent}  `);
        lines.push(`${indent}}`);
      } else {
        const final = child.kind === 'final' ? ', peripheries=2, fillcolor="#f3f3f3"' : '';
        lines.push(`${indent}${dotString(child.path)} [label=${dotString(child.key)}${final}];`);
      }
    }
    if (state.initial && state.path !== '') {
      const start = `${state.path}.__initial`;
      lines.push(`${indent}${dotString(start)} [${POINT}, width=0.1];`);
      lines.push(`${indent}${dotString(start)} -> ${dotString(anchorOf(model, state.initial))};`);
    }
  };
  writeState(model.root, '  ');

  const cluster = (path: string) => dotString(`cluster_${path}`);
  if (model.root.initial) {
    const created = model.transitions.find((t) => t.kind === 'created');
    const attrs = [`label=${dotString(created ? [created.event, ...effectLines(created)].join('\n') : '')}`];
    if (isComposite(findState(model, model.root.initial))) attrs.push(`lhead=${cluster(model.root.initial)}`);
    lines.push(`  "__start" [${POINT}, width=0.16];`);
    lines.push(`  "__start" -> ${dotString(anchorOf(model, model.root.initial))} [${attrs.join(', ')}];`);
  }
  for (const edge of drawnEdges(model)) {
    const attrs = [`label=${dotString([edge.headline, ...edge.effects].join('\n'))}`];
    // Clip at a cluster's border only when the other end is outside it (Graphviz cannot otherwise).
    if (isComposite(findState(model, edge.source)) && !within(edge.target, edge.source)) {
      attrs.push(`ltail=${cluster(edge.source)}`);
    }
    if (isComposite(findState(model, edge.target)) && !within(edge.source, edge.target)) {
      attrs.push(`lhead=${cluster(edge.target)}`);
    }
    const tail = dotString(anchorOf(model, edge.source));
    lines.push(`  ${tail} -> ${dotString(anchorOf(model, edge.target))} [${attrs.join(', ')}];`);
  }
  for (const t of model.transitions) {
    if (t.kind !== 'entry' && t.kind !== 'exit') continue;
    const note = dotString(`${t.source}.__${t.kind}`);
    const text = dotString([t.event, ...effectLines(t)].join('\n'));
    lines.push(`  ${note} [shape=note, fillcolor="#fffbe6", color="#b59f3b", fontsize=9, label=${text}];`);
    lines.push(`  ${note} -> ${dotString(anchorOf(model, t.source))} [style=dotted, arrowhead=none];`);
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------

let viz: Promise<Viz> | undefined;

/** Renders DOT to SVG with Graphviz compiled to WebAssembly: no browser, no system Graphviz. */
export async function dotToSvg(dot: string): Promise<string> {
  viz ??= vizInstance();
  const result = (await viz).render(dot, { format: 'svg' });
  if (result.status !== 'success') {
    throw new Error(`Graphviz failed: ${result.errors.map((e) => e.message).join('; ')}`);
  }
  return result.output;
}

// ---------------------------------------------------------------------------------------------
// Table

export interface TableColumn {
  title: string;
  cell: (t: TransitionModel) => string;
}

/**
 * The columns of the transition table. Reason codes, webhooks and scheduled work appear only
 * when the machine asks for any, so a machine that writes none of them has no empty columns.
 */
export function tableColumns(model: MachineModel): TableColumn[] {
  const list = (items: string[]) => items.join(', ');
  const columns: TableColumn[] = [
    { title: 'From', cell: (t) => fromText(model, t) },
    { title: 'Event', cell: (t) => t.event },
    { title: 'Guard', cell: (t) => t.guard ?? '' },
    { title: 'To', cell: toText },
  ];
  const any = (pick: (t: TransitionModel) => string[]) => model.transitions.some((t) => pick(t).length > 0);
  if (any((t) => t.reasonCodes)) columns.push({ title: 'Reason code', cell: (t) => list(t.reasonCodes) });
  if (any((t) => t.webhooks)) columns.push({ title: 'Webhooks', cell: (t) => list(t.webhooks) });
  if (any((t) => t.tasks)) columns.push({ title: 'Scheduled work', cell: (t) => list(t.tasks) });
  if (any((t) => t.otherActions)) columns.push({ title: 'Other actions', cell: (t) => list(t.otherActions) });
  return columns;
}
