/**
 * `npm run docs` writes the generated documents; `npm run docs:check` (and the docs test) only
 * compares them with what the code generates now and names every stale file.
 */
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { openApiDocument } from '#src/http/openapi.ts';
import { appRouter } from '#src/router.ts';
import {
  describeMachine,
  dotToSvg,
  type MachineModel,
  machineTitle,
  readingGuide,
  stateOutline,
  tableColumns,
  toDot,
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

function machineMarkdown(doc: MachineDoc, model: MachineModel): string {
  const source = `machines/${doc.name}.machine.ts`;
  const columns = tableColumns(model);
  const out = [
    generatedBy(source),
    '',
    `# ${machineTitle(doc.name)} machine`,
    '',
    doc.summary,
    '',
    `- Source: [\`${source}\`](../../${source}) (machine id \`${model.id}\`)`,
    `- Picture: [\`${doc.name}.svg\`](${doc.name}.svg); a running service shows every machine at \`/docs/machines\``,
    '- All machines: [index](README.md)',
    '',
    '## How to read it',
    '',
    ...readingGuide(model).map((line) => `- ${line}`),
    '',
    '## Diagram',
    '',
    '```mermaid',
    toMermaid(model).trimEnd(),
    '```',
    '',
    '## Transitions',
    '',
    `| ${columns.map((c) => c.title).join(' | ')} |`,
    `|${columns.map(() => '---|').join('')}`,
    ...model.transitions.map((t) => `| ${columns.map((c) => cell(c.cell(t))).join(' | ')} |`),
    '',
  ];
  return out.join('\n');
}

function indexMarkdown(models: { doc: MachineDoc; model: MachineModel }[]): string {
  return [
    generatedBy('`machines/` (the list in `src/docs/registry.ts`)'),
    '',
    '# State machines',
    '',
    'Every status the service stores is owned by one of these machines: the service applies events to',
    'them and nothing else writes a status. These pages are generated from the very machine objects the',
    'service runs (`npm run docs`), and CI fails when they are stale, so a diagram cannot disagree with',
    'the code. A running service shows the same diagrams at `/docs/machines` and its API reference at',
    '`/docs`.',
    '',
    '| Machine | What it decides | States | Picture |',
    '|---|---|---|---|',
    ...models.map(
      ({ doc, model }) =>
        `| [${machineTitle(doc.name)}](${doc.name}.md) | ${doc.summary} | ${stateOutline(model.root.children)} | [${doc.name}.svg](${doc.name}.svg) |`,
    ),
    '',
  ].join('\n');
}

/** Every generated document, keyed by its path relative to the repository root, in a stable order. */
export async function generateDocs(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  const openapi = openApiDocument(appRouter, { baseUrl: DOCS_BASE_URL });
  files.set('docs/openapi.json', `${JSON.stringify(openapi, null, 2)}\n`);
  const models = MACHINE_DOCS.map((doc) => ({ doc, model: describeMachine(doc.machine) }));
  files.set(`${MACHINES_DIR}/README.md`, indexMarkdown(models));
  for (const { doc, model } of models) {
    files.set(`${MACHINES_DIR}/${doc.name}.md`, machineMarkdown(doc, model));
    files.set(`${MACHINES_DIR}/${doc.name}.svg`, await dotToSvg(toDot(model)));
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

if (import.meta.main) {
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
