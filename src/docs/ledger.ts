import { OUTFLOW_FLOWS } from '#src/dispatch/money.ts';
import {
  ACCOUNT_KINDS,
  type AccountGroup,
  type AccountKindName,
  MOVEMENT_TEXTS,
  MOVEMENT_TYPES,
} from '#src/ledger/chart.ts';
import { type Flow, kindsOf } from '#src/ledger/flows.ts';
import { PAYOUT_FLOWS } from '#src/payouts/money.ts';
import { RECON_FLOWS } from '#src/reconciliation/money.ts';
import { REFUND_FLOWS } from '#src/refunds/money.ts';
import { INFLOW_FLOWS } from '#src/settlement/money.ts';
import { dotString } from './machines.ts';

/**
 * The chart of accounts and the flows between them, as the code declares them
 * (`src/ledger/chart.ts` and each domain's `money.ts`): a table for `docs/ledger-chart.md` and a
 * picture (`docs/ledger-chart.svg`) with one box per kind of account and one arrow per leg of a
 * flow, labelled with the object and the flow that moves it.
 */

/** Every flow of every machine that moves money. */
export const LEDGER_FLOWS: readonly Flow[] = [
  ...INFLOW_FLOWS,
  ...PAYOUT_FLOWS,
  ...OUTFLOW_FLOWS,
  ...REFUND_FLOWS,
  ...RECON_FLOWS,
];

const GROUPS: Record<AccountGroup, { title: string; fill: string }> = {
  rail: { title: 'Rails: where money enters', fill: '#e8f1fb' },
  tenant: { title: "Merchants' money with us", fill: '#eaf6ea' },
  transit: { title: 'On its way', fill: '#fff4dc' },
  service: { title: "The service's", fill: '#f1ecf8' },
  world: { title: 'Outside the service: where money leaves', fill: '#f4f6f9' },
};

const kinds = Object.keys(ACCOUNT_KINDS) as AccountKindName[];

/** The picture: accounts grouped by where the money is, arrows for the legs of every flow. */
export function ledgerDot(flows: readonly Flow[] = LEDGER_FLOWS): string {
  const lines = [
    'digraph "ledger" {',
    '  graph [rankdir=LR, fontname="Helvetica", fontsize=12, nodesep=0.3, ranksep=0.9, pad=0.25, bgcolor="white", id="ledger/diagram"];',
    '  node [shape=box, style="rounded,filled", color="#3d5a80", fontname="Helvetica", fontsize=11, margin="0.14,0.06"];',
    '  edge [fontname="Helvetica", fontsize=9, color="#555555", fontcolor="#333333", arrowsize=0.7];',
  ];
  for (const [group, { title, fill }] of Object.entries(GROUPS)) {
    lines.push(`  subgraph ${dotString(`cluster_${group}`)} {`);
    lines.push(
      `    label=${dotString(title)}; style="rounded,dashed"; color="#8a9bb5"; fontname="Helvetica-Bold";`,
    );
    for (const kind of kinds.filter((k) => ACCOUNT_KINDS[k].group === group)) {
      lines.push(
        `    ${dotString(kind)} [label=${dotString(ACCOUNT_KINDS[kind].pattern)}, fillcolor="${fill}", id=${dotString(`ledger/${kind}`)}];`,
      );
    }
    lines.push('  }');
  }
  const arrows = new Map<string, { from: string; to: string; labels: string[] }>();
  for (const flow of flows) {
    for (const leg of flow.legs) {
      for (const from of kindsOf(leg.from)) {
        for (const to of kindsOf(leg.to)) {
          const key = `${from}>${to}`;
          const arrow = arrows.get(key) ?? { from, to, labels: [] };
          const label = `${flow.cause} ${flow.name.toLowerCase().replaceAll('_', ' ')}`;
          if (!arrow.labels.includes(label)) arrow.labels.push(label);
          arrows.set(key, arrow);
        }
      }
    }
  }
  for (const arrow of arrows.values()) {
    lines.push(
      `  ${dotString(arrow.from)} -> ${dotString(arrow.to)} [label=${dotString(arrow.labels.join('\n'))}];`,
    );
  }
  lines.push('}');
  return `${lines.join('\n')}\n`;
}

const pipe = (text: string) => text.replaceAll('|', '\\|');

/** The chart, the flows and the movement types as Markdown. */
export function ledgerMarkdown(flows: readonly Flow[] = LEDGER_FLOWS): string {
  const out = [
    "<!-- Generated from src/ledger/chart.ts and the domains' money.ts by `npm run docs`. Do not edit: change the code and run it again. -->",
    '',
    '# The chart of accounts',
    '',
    'Every account the ledger posts to, and every flow of money between them, as the code declares them. How to read them: [ledger.md](ledger.md).',
    '',
    '![Accounts and the flows between them](ledger-chart.svg)',
    '',
    '## Accounts',
    '',
    '| Account | Part of the books | Where the money is | Whose it is, and what happens next | Balances line |',
    '|---|---|---|---|---|',
  ];
  for (const kind of kinds) {
    const k: { pattern: string; group: AccountGroup; where: string; whose: string; summary?: string } =
      ACCOUNT_KINDS[kind];
    out.push(
      `| \`${k.pattern}\` | ${GROUPS[k.group].title} | ${pipe(k.where)} | ${pipe(k.whose)} | ${k.summary ? `\`${k.summary}\`` : 'its own'} |`,
    );
  }
  out.push(
    '',
    '## Flows',
    '',
    'Each flow is one ledger transaction, written in the database transaction of the machine transition that names it in a `post` action. Its legs move one amount each; a leg with a zero amount is left out.',
    '',
    '| Cause | Flow | What happens | Legs (from → to: amount in currency; merchant movement) |',
    '|---|---|---|---|',
  );
  for (const flow of flows) {
    const legs = flow.legs.map((leg) => {
      const movement = leg.movement ? `; \`${leg.movement.type}\` on the ${leg.movement.on} side` : '';
      return `${kindsOf(leg.from).join(' or ')} → ${kindsOf(leg.to).join(' or ')}: ${leg.amount} in ${leg.currency}${movement}`;
    });
    out.push(`| ${flow.cause} | \`${flow.name}\` | ${pipe(flow.description)} | ${pipe(legs.join('<br>'))} |`);
  }
  out.push(
    '',
    '## Movement types',
    '',
    "What a merchant's statement (`GET /v1/payouts/{payout_id}/money-movements`) calls each movement, seen from the payout's money.",
    '',
    '| Type | Meaning |',
    '|---|---|',
    ...MOVEMENT_TYPES.map((t) => `| \`${t}\` | ${pipe(MOVEMENT_TEXTS[t])} |`),
    '',
  );
  return out.join('\n');
}
