import {
  ACTOR_TERMS,
  type Arrow,
  arrowsOf,
  type ComplianceMachine,
  type ComplianceModel,
  MONEY_PLACES as MONEY_PLACES_IN_ORDER,
  MONEY_TERMS,
  stateNodeId,
} from './compliance.ts';
import { dotString, POINT } from './machines.ts';

/**
 * The pictures of the compliance view, in Graphviz DOT: one per machine, laid out top to bottom so
 * that the widest fits a 1,400 px page, and one of how the machines move each other. Boxes are
 * coloured by where the money is and arrows by who causes them (the legend is the page's); an
 * arrow's label is the number of its transitions in the table beside it and the event in words.
 * Every box and arrow has an `id` (`payout/PENDING_PAYMENT.held`, `payout/t4`) that the console
 * uses to highlight the path one object took.
 */

const html = (text: string): string =>
  text.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);

const words = (event: string): string => event.toLowerCase().replaceAll('_', ' ');

const NEUTRAL_FILL = '#f4f6f9';

/** The name of the overview picture beside the machines' own (`docs/machines/overview.svg`). */
export const OVERVIEW = 'overview';

/** The box a path is drawn at: a state with inner states is drawn at the one entered first. */
function anchor(machine: ComplianceMachine, path: string): string {
  let state = machine.states.find((s) => s.path === path);
  while (state && state.children.length > 0) {
    const first = machine.states.find((s) => s.parent === state!.path && s.initial) ?? null;
    state = first ?? machine.states.find((s) => s.path === state!.children[0]);
  }
  return state?.path ?? path;
}

const inside = (path: string, frame: string): boolean => path === frame || path.startsWith(`${frame}.`);

/** An event's words on two lines when they are long, so that labels stay narrow and apart. */
function eventLines(text: string): string {
  return text.length > 14 ? text.replace(' ', '\n') : text;
}

/**
 * An arrow's label. Each line carries a no-break space at either end: the layout measures text
 * with Helvetica's widths, and a browser that draws it in a wider face (DejaVu Sans, say) would
 * otherwise make neighbouring labels touch.
 */
function arrowLabel(arrow: Arrow): string {
  return arrow.transitions
    .map((t) => `${t.number}  ${t.event === null ? 'created' : eventLines(words(t.event))}`)
    .join('\n')
    .split('\n')
    .map((line) => `\u00a0${line}\u00a0`)
    .join('\n');
}

/** The machine as a top-to-bottom state diagram for the compliance view. */
export function complianceDot(machine: ComplianceMachine): string {
  const cluster = (path: string) => dotString(`cluster_${path}`);
  const lines = [
    `digraph ${dotString(machine.name)} {`,
    legendLabel(machine),
    `  graph [rankdir=TB, compound=true, fontname="Helvetica", fontsize=12, nodesep=0.35, ranksep=0.5, pad=0.25, bgcolor="white", id=${dotString(`${machine.name}/diagram`)}];`,
    '  node [shape=box, style="rounded,filled", color="#3d5a80", fontname="Helvetica", fontsize=12, margin="0.16,0.07"];',
    '  edge [fontname="Helvetica", fontsize=10, arrowsize=0.7, penwidth=1.4];',
  ];
  const write = (parent: string | null, indent: string) => {
    for (const state of machine.states.filter((s) => s.parent === parent)) {
      const id = dotString(stateNodeId(machine.name, state.path));
      if (state.children.length > 0) {
        lines.push(`${indent}subgraph ${cluster(state.path)} {`);
        lines.push(
          `${indent}  id=${id}; label=${dotString(state.key)}; labelloc="t"; labeljust="c"; style="rounded,dashed"; color="#3d5a80"; fontname="Helvetica-Bold"; fontsize=12;`,
        );
        write(state.path, `${indent}  `);
        lines.push(`${indent}}`);
        continue;
      }
      const money = state.money ? MONEY_TERMS[state.money].label : machine.holds_money ? '' : null;
      const detail = [
        state.cases.length > 0 ? 'money: as the ledger says' : money,
        state.final ? 'final' : null,
      ]
        .filter((x) => x)
        .join(' · ');
      // A state whose money the ledger tells apart lists its cases, each in its place's colour.
      const cases = state.cases
        .map(
          (c) =>
            `<tr><td bgcolor="${MONEY_TERMS[c.money].color}" align="left"><font point-size="9">${html(c.label)}</font></td></tr>`,
        )
        .join('');
      const label =
        cases === ''
          ? `<<b>${html(state.key)}</b>${detail ? `<br/><font point-size="10" color="#333333">${html(detail)}</font>` : ''}>`
          : `<<table border="0" cellborder="0" cellspacing="1" cellpadding="2"><tr><td><b>${html(state.key)}</b></td></tr><tr><td><font point-size="10" color="#333333">${html(detail)}</font></td></tr>${cases}</table>>`;
      const fill = state.money ? MONEY_TERMS[state.money].color : NEUTRAL_FILL;
      const final = state.final ? ', peripheries=2' : '';
      lines.push(
        `${indent}${dotString(state.path)} [id=${id}, label=${label}, fillcolor="${fill}"${final}];`,
      );
    }
  };
  write(null, '  ');

  for (const arrow of arrowsOf(machine)) {
    const attrs = [
      `id=${dotString(arrow.id)}`,
      `label=${dotString(arrowLabel(arrow))}`,
      `color="${ACTOR_TERMS[arrow.actor].color}"`,
      `fontcolor="${ACTOR_TERMS[arrow.actor].color}"`,
    ];
    let tail: string;
    if (arrow.from === null) {
      lines.push(`  "__start" [${POINT}, width=0.16];`);
      tail = '"__start"';
    } else {
      tail = dotString(anchor(machine, arrow.from));
      if (arrow.fromFrame && !inside(arrow.to, arrow.from)) attrs.push(`ltail=${cluster(arrow.from)}`);
    }
    const target = machine.states.find((s) => s.path === arrow.to);
    if (target && target.children.length > 0 && !(arrow.from && inside(arrow.from, arrow.to))) {
      attrs.push(`lhead=${cluster(arrow.to)}`);
    }
    // An end reached from many states sits at the bottom; its arrows do not pull the others
    // sideways, so the diagram stays as wide as its main path.
    if (target?.final && arrowsInto(machine, arrow.to) > 2) attrs.push('constraint=false');
    lines.push(`  ${tail} -> ${dotString(anchor(machine, arrow.to))} [${attrs.join(', ')}];`);
  }
  const ends = machine.states.filter((s) => s.final).map((s) => dotString(s.path));
  if (ends.length > 0) lines.push(`  { rank=sink; ${ends.join('; ')}; }`);
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

/**
 * The picture's own legend, below everything: the colour of each actor whose arrows it draws and of
 * each place its boxes are filled with, so that the picture reads the same wherever it is shown.
 */
function legendLabel(machine: ComplianceMachine): string {
  const actors = [...new Set(arrowsOf(machine).map((a) => a.actor))];
  const places = [
    ...new Set(
      machine.states.flatMap((s) => [...(s.money ? [s.money] : []), ...s.cases.map((c) => c.money)]),
    ),
  ];
  const rows = [
    '<tr><td colspan="2" align="left"><b>Who acts (arrow colours)</b></td></tr>',
    ...actors.map(
      (a) =>
        `<tr><td width="28" bgcolor="${ACTOR_TERMS[a].color}"></td><td align="left"><font color="${ACTOR_TERMS[a].color}">${html(ACTOR_TERMS[a].label)}</font></td></tr>`,
    ),
  ];
  if (places.length > 0) {
    rows.push('<tr><td colspan="2" align="left"><b>Where the money is (box colours)</b></td></tr>');
    for (const p of MONEY_PLACES_IN_ORDER.filter((x) => places.includes(x))) {
      rows.push(
        `<tr><td width="28" bgcolor="${MONEY_TERMS[p].color}" border="1"></td><td align="left">${html(MONEY_TERMS[p].label)}</td></tr>`,
      );
    }
  }
  rows.push('<tr><td colspan="2" align="left">Double border: a final state.</td></tr>');
  return `  graph [labelloc="b", labeljust="l", label=<<table border="1" color="#c8ced8" cellborder="0" cellspacing="2" cellpadding="3">${rows.join('')}</table>>];`;
}

function arrowsInto(machine: ComplianceMachine, path: string): number {
  return arrowsOf(machine).filter((a) => a.to === path).length;
}

/** How the machines move each other: one box per machine, one arrow per pair, its events listed. */
export function overviewDot(model: ComplianceModel): string {
  const lines = [
    'digraph "machines" {',
    '  graph [rankdir=TB, fontname="Helvetica", fontsize=12, nodesep=0.5, ranksep=0.55, pad=0.25, bgcolor="white", id="machines/diagram"];',
    '  node [shape=box, style="rounded,filled", fillcolor="#eef3fb", color="#3d5a80", fontname="Helvetica", fontsize=12, margin="0.2,0.08"];',
    '  edge [fontname="Helvetica", fontsize=10, color="#555555", fontcolor="#333333", arrowsize=0.7];',
  ];
  for (const m of model.machines) {
    const fill = m.holds_money ? '#eef3fb' : NEUTRAL_FILL;
    const label = `<<b>${html(m.title)}</b><br/><font point-size="10" color="#444444">${m.holds_money ? 'holds money' : 'holds no money'}</font>>`;
    lines.push(
      `  ${dotString(m.name)} [id=${dotString(`machines/${m.name}`)}, label=${label}, fillcolor="${fill}", href=${dotString(`#${m.name}`)}];`,
    );
  }
  const pairs = new Map<string, { from: string; to: string; what: Set<string> }>();
  for (const link of model.links) {
    const key = `${link.from.machine}\u0000${link.to.machine}`;
    const pair = pairs.get(key) ?? { from: link.from.machine, to: link.to.machine, what: new Set<string>() };
    pair.what.add(link.to.event === null ? 'creates' : words(link.to.event));
    pairs.set(key, pair);
  }
  for (const pair of pairs.values()) {
    lines.push(
      `  ${dotString(pair.from)} -> ${dotString(pair.to)} [label=${dotString([...pair.what].join('\n'))}];`,
    );
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}
