/**
 * `npm run docs` writes the generated documents; `npm run docs:check` (and the docs test) only
 * compares them with what the code generates now and names every stale file.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '#src/config.ts';
import { CONSOLE_BUNDLE, consoleBundle } from '#src/console/build.ts';
import { openApiDocument } from '#src/http/openapi.ts';
import { appRouter } from '#src/router.ts';
import { clientSource } from './client.ts';
import {
  actorsText,
  buildComplianceModel,
  type ComplianceMachine,
  type ComplianceModel,
  type ComplianceState,
  fromText,
  linkGroups,
  linkLines,
  MONEY_TERMS,
  moneyText,
  NO_MONEY,
  toText,
  waitingText,
} from './compliance.ts';
import { complianceDot, OVERVIEW, overviewDot } from './diagrams.ts';
import { internalApiMarkdown } from './internal-api.ts';
import { ledgerDot, ledgerMarkdown } from './ledger.ts';
import {
  describeMachine,
  dotToSvg,
  type MachineModel,
  machineTitle,
  readingGuide,
  stateOutline,
  tableColumns,
  toMermaid,
} from './machines.ts';
import { MACHINE_DOCS, type MachineDoc } from './registry.ts';

/** The repository root, where `docs/` and `machines/` live. */
export const REPO_ROOT = path.resolve(fileURLToPath(import.meta.url), '../../..');

/** The base URL written into the committed OpenAPI document: the service's default address. */
export const DOCS_BASE_URL = 'http://127.0.0.1:3000';

const MACHINES_DIR = 'docs/machines';

const generatedBy = (source: string) =>
  `<!-- Generated from ${source} by \`npm run docs\`. Do not edit: change the code and run it again. -->`;

const cell = (text: string): string => (text === '' ? '' : `\`${text.replaceAll('|', '\\|')}\``);

/** A table cell of plain text: pipes escaped, lines joined with <br>. */
const prose = (...lines: string[]): string => lines.map((l) => l.replaceAll('|', '\\|')).join('<br>');

const WEBHOOKS_NOTE =
  'Besides these, every transition that tells the merchant something (the webhooks of its row) creates one webhook delivery per event.';

const DEFAULTS_NOTE =
  'Thresholds are shown with their default values; a running service shows its own configuration at `/docs/machines`.';

function table(head: string[], rows: string[][]): string[] {
  return [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---|').join('')}`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
}

/** A state whose money the ledger tells apart: its cases, in the order they are tried. */
function casesMarkdown(machine: ComplianceMachine, state: ComplianceState): string[] {
  if (state.cases.length === 0) return [];
  return [
    `### Where the money of a ${machine.title.toLowerCase()} in \`${state.path}\` is`,
    '',
    'The state name alone does not say: the ledger does. The first case whose test holds is where the money is; the console’s Machines page counts each case apart.',
    '',
    ...table(
      ['Case', 'Where the money is', 'What it means', 'How the ledger tells it'],
      state.cases.map((c) => [
        cell(c.code),
        MONEY_TERMS[c.money].label,
        prose(c.description),
        prose(c.ledger),
      ]),
    ),
    '',
  ];
}

const THRESHOLD_SOURCES = {
  configuration: 'configuration (README)',
  code: 'the code',
  corridors: 'the corridors file (`src/corridors/corridors.json`)',
} as const;

/** The fees the service keeps, named by kind, for the pages that say where money is. */
function feesMarkdown(model: ComplianceModel): string[] {
  return [
    '## Fees kept by the service',
    '',
    'Wherever a page says money was kept as a fee, it is one of these, each in its own ledger account.',
    '',
    ...table(
      ['Fee', 'Ledger account', 'What it is and how much'],
      model.fees.map((f) => [f.label, cell(f.account), prose(f.text)]),
    ),
    '',
  ];
}

/** The colours of the pictures, in words (the pictures carry the same legend). */
function legendMarkdown(model: ComplianceModel): string[] {
  return [
    '## Reading the picture',
    '',
    'Each picture carries its legend in its bottom corner. Boxes are coloured by where the money is; arrows by who causes them:',
    '',
    ...table(
      ['Arrow colour', 'Who acts', 'Meaning'],
      model.actors.map((a) => [`${ARROW_COLOURS[a.code]} (\`${a.color}\`)`, a.label, prose(a.text)]),
    ),
    '',
    'A double border marks a final state. An arrow’s number is the row of the transitions table.',
    '',
  ];
}

/** The arrows' colours in words, for readers of the Markdown pages. */
const ARROW_COLOURS: Record<ComplianceModel['actors'][number]['code'], string> = {
  SYSTEM: 'slate grey',
  PROCESSOR: 'purple',
  BANK_OR_CHAIN: 'teal',
  OPERATOR: 'orange',
  OPERATOR_FOUR_EYES: 'magenta',
  MERCHANT: 'blue',
};

/** The compliance part of a machine's page: states, transitions, conditions, thresholds. */
function complianceMarkdown(machine: ComplianceMachine): string[] {
  const out = [
    '## States',
    '',
    ...table(
      ['State', 'What it means', 'Where the money is', 'Final'],
      machine.states.map((s) => [
        cell(s.path),
        prose([s.description, waitingText(s)].filter(Boolean).join(' ')),
        moneyText(machine, s),
        s.final ? 'final' : '',
      ]),
    ),
    '',
    ...machine.states.flatMap((s) => casesMarkdown(machine, s)),
    '## Transitions',
    '',
    'Who can cause each one, what happens, and under which condition; the numbers are those of the picture.',
    '',
    ...table(
      [
        '#',
        'From',
        'Event',
        'To',
        'What happens',
        'Who can cause it',
        'Condition',
        'Links to other machines',
      ],
      machine.transitions.map((t) => [
        String(t.number),
        cell(fromText(t)),
        cell(t.event ?? ''),
        cell(toText(t)),
        prose(t.description),
        actorsText(t.by),
        t.guard ? prose(t.guard.text) : '',
        prose(...linkLines(t)),
      ]),
    ),
    '',
  ];
  if (machine.guards.length > 0) {
    out.push(
      '## Conditions',
      '',
      ...table(
        ['Guard in the code', 'Holds when', 'Fails when'],
        machine.guards.map((g) => [cell(g.name), prose(g.holds), prose(g.fails)]),
      ),
      '',
    );
  }
  if (machine.thresholds.length > 0) {
    out.push(
      '## Thresholds',
      '',
      DEFAULTS_NOTE,
      '',
      ...table(
        ['Name', 'Value', 'Set by'],
        machine.thresholds.map((t) => [cell(t.name), t.display, THRESHOLD_SOURCES[t.source]]),
      ),
      '',
    );
  }
  return out;
}

function machineMarkdown(
  doc: MachineDoc,
  model: MachineModel,
  machine: ComplianceMachine,
  compliance: ComplianceModel,
): string {
  const source = `machines/${doc.name}.machine.ts`;
  const columns = tableColumns(model);
  const out = [
    generatedBy(source),
    '',
    `# ${machine.title} machine`,
    '',
    machine.summary,
    '',
    `- Source: [\`${source}\`](../../${source}) (machine id \`${model.id}\`)`,
    `- Where the money is: ${machine.holds_money ? 'in every state below' : `${NO_MONEY.label}. ${NO_MONEY.text}`}`,
    `- Picture: [\`${doc.name}.svg\`](${doc.name}.svg); all machines and how they move each other: [index](README.md); a running service shows them at \`/docs/machines\``,
    '',
    `![${machine.title} machine](${doc.name}.svg)`,
    '',
    ...legendMarkdown(compliance),
    ...complianceMarkdown(machine),
    ...(machine.holds_money ? feesMarkdown(compliance) : []),
    '## For engineers',
    '',
    'The same machine as the code reads it: events, guards by name, and what each transition records.',
    '',
    ...readingGuide(model).map((line) => `- ${line}`),
    '',
    '```mermaid',
    toMermaid(model).trimEnd(),
    '```',
    '',
    `| ${columns.map((c) => c.title).join(' | ')} |`,
    `|${columns.map(() => '---|').join('')}`,
    ...model.transitions.map((t) => `| ${columns.map((c) => cell(c.cell(t))).join(' | ')} |`),
    '',
  ];
  return out.join('\n');
}

function indexMarkdown(model: ComplianceModel, models: { doc: MachineDoc; model: MachineModel }[]): string {
  return [
    generatedBy('`machines/` (the list in `src/docs/registry.ts`)'),
    '',
    '# State machines',
    '',
    'Every status the service stores is owned by one of these machines: the service applies events to',
    'them and nothing else writes a status. These pages are generated from the very machine objects the',
    'service runs and the plain-language texts kept beside them (`npm run docs`), and CI fails when they',
    'are stale or a text is missing, so a page cannot disagree with the code. A running service shows the',
    'same pages at `/docs/machines`, and operators see them with live counts in the console.',
    '',
    ...table(
      ['Machine', 'What it decides', 'States', 'Picture'],
      models.map(({ doc, model: m }) => {
        const machine = model.machines.find((x) => x.name === doc.name)!;
        return [
          `[${machine.title}](${doc.name}.md)`,
          prose(machine.summary),
          stateOutline(m.root.children),
          `[${doc.name}.svg](${doc.name}.svg)`,
        ];
      }),
    ),
    '',
    '## How the machines move each other',
    '',
    `![How the machines move each other](${OVERVIEW}.svg)`,
    '',
    ...table(
      ['When', 'Transitions', 'What follows'],
      linkGroups(model).map((g) => [
        prose(`${g.when[0]!.toUpperCase()}${g.when.slice(1)}`),
        `[${machineTitle(g.machine)}](${g.machine}.md) ${g.transitions.join(', ')}`,
        prose(g.then),
      ]),
    ),
    '',
    WEBHOOKS_NOTE,
    '',
    '## Where the money is',
    '',
    ...table(
      ['In the tables', 'Meaning'],
      Object.values(MONEY_TERMS).map((t) => [t.label, prose(t.text)]),
    ),
    '',
    '## Who acts',
    '',
    ...table(
      ['In the tables', 'Arrow colour', 'Meaning'],
      model.actors.map((a) => [a.label, `${ARROW_COLOURS[a.code]} (\`${a.color}\`)`, prose(a.text)]),
    ),
    '',
    ...feesMarkdown(model),
  ].join('\n');
}

/**
 * The compliance model the committed pages show: the default configuration (not this process's
 * environment), so that the pages are the same wherever `npm run docs` runs. Texts that are
 * missing stop generation.
 */
export function committedModel(docs: readonly MachineDoc[] = MACHINE_DOCS): ComplianceModel {
  const { model, problems } = buildComplianceModel(docs, loadConfig({}));
  if (problems.length > 0) throw new IncompleteTexts(problems);
  return model;
}

/** A machine's texts are missing or wrong: no page is generated until they are complete. */
export class IncompleteTexts extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(
      `The machines' plain-language texts are incomplete (machines/texts.ts says where they go):\n${problems
        .map((p) => `  ${p}`)
        .join('\n')}`,
    );
    this.problems = problems;
  }
}

/**
 * The machine files in `machines/` that `src/docs/registry.ts` does not list: a machine the pages
 * would silently leave out. Generation refuses to run while there is one, so that a new machine
 * gets its pages, and with them every text they need.
 */
export async function unregisteredMachines(root = REPO_ROOT): Promise<string[]> {
  const registered = new Set(MACHINE_DOCS.map((d) => `${d.name}.machine.ts`));
  const files = await readdir(path.join(root, 'machines'));
  return files
    .filter((f) => f.endsWith('.machine.ts') && !registered.has(f))
    .sort()
    .map((f) => `machines/${f} is not in src/docs/registry.ts (add it there, with its texts)`);
}

/** Every generated document, keyed by its path relative to the repository root, in a stable order. */
export async function generateDocs(): Promise<Map<string, string>> {
  const unregistered = await unregisteredMachines();
  if (unregistered.length > 0) throw new IncompleteTexts(unregistered);
  const files = new Map<string, string>();
  const openapi = openApiDocument(appRouter, { baseUrl: DOCS_BASE_URL });
  files.set('docs/openapi.json', `${JSON.stringify(openapi, null, 2)}\n`);
  files.set('src/client/api.ts', clientSource(openapi));
  files.set(CONSOLE_BUNDLE, await consoleBundle());
  files.set('docs/internal-api.md', internalApiMarkdown(appRouter));
  files.set('docs/ledger-chart.md', ledgerMarkdown());
  files.set('docs/ledger-chart.svg', await dotToSvg(ledgerDot()));
  const compliance = committedModel();
  const models = MACHINE_DOCS.map((doc) => ({ doc, model: describeMachine(doc.machine) }));
  files.set(`${MACHINES_DIR}/README.md`, indexMarkdown(compliance, models));
  files.set(`${MACHINES_DIR}/${OVERVIEW}.svg`, await dotToSvg(overviewDot(compliance)));
  for (const { doc, model } of models) {
    const machine = compliance.machines.find((m) => m.name === doc.name)!;
    files.set(`${MACHINES_DIR}/${doc.name}.md`, machineMarkdown(doc, model, machine, compliance));
    files.set(`${MACHINES_DIR}/${doc.name}.svg`, await dotToSvg(complianceDot(machine)));
  }
  return files;
}

/** A committed document that disagrees with the code. */
export interface StaleDoc {
  path: string;
  problem: 'missing' | 'differs' | 'no longer generated';
}

async function readOrNull(file: string): Promise<string | null> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** Files in docs/machines/ that generation no longer produces (a machine was renamed or removed). */
async function leftovers(root: string, generated: Map<string, string>): Promise<string[]> {
  const names = await readdir(path.join(root, MACHINES_DIR)).catch(() => [] as string[]);
  return names
    .filter((name) => /\.(md|svg)$/.test(name))
    .map((name) => `${MACHINES_DIR}/${name}`)
    .filter((file) => !generated.has(file))
    .sort();
}

/** Compares the committed documents under `root` with freshly generated ones, in memory. */
export async function staleDocs(root = REPO_ROOT): Promise<StaleDoc[]> {
  const generated = await generateDocs();
  const stale: StaleDoc[] = [];
  for (const [file, content] of generated) {
    const committed = await readOrNull(path.join(root, file));
    if (committed === null) stale.push({ path: file, problem: 'missing' });
    else if (committed !== content) stale.push({ path: file, problem: 'differs' });
  }
  for (const file of await leftovers(root, generated))
    stale.push({ path: file, problem: 'no longer generated' });
  return stale;
}

/** Writes every generated document under `root` and removes the ones no longer generated. */
export async function writeDocs(root = REPO_ROOT): Promise<{ written: string[]; removed: string[] }> {
  const generated = await generateDocs();
  const removed = await leftovers(root, generated);
  for (const file of removed) await rm(path.join(root, file));
  const written: string[] = [];
  for (const [file, content] of generated) {
    const target = path.join(root, file);
    if ((await readOrNull(target)) === content) continue;
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, content);
    written.push(file);
  }
  return { written, removed };
}

async function main(): Promise<void> {
  if (process.argv.includes('--check')) {
    const stale = await staleDocs();
    if (stale.length > 0) {
      process.stderr.write(
        `Generated documents are stale (run \`npm run docs\` and commit the result):\n${stale
          .map((s) => `  ${s.path} (${s.problem})`)
          .join('\n')}\n`,
      );
      process.exit(1);
    }
    process.stdout.write('Generated documents are up to date.\n');
  } else {
    const { written, removed } = await writeDocs();
    for (const file of written) process.stdout.write(`wrote ${file}\n`);
    for (const file of removed) process.stdout.write(`removed ${file}\n`);
    if (written.length + removed.length === 0)
      process.stdout.write('Generated documents were already up to date.\n');
  }
}

if (import.meta.main) {
  await main().catch((err: unknown) => {
    if (!(err instanceof IncompleteTexts)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  });
}
