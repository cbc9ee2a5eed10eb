/**
 * `npm run client:pack`: builds the two packages other programs install, as npm tarballs in
 * `dist/packages/` (printed, one path a line):
 *
 * - `@payout-service/client`, the merchant client of `src/client/`: one ES module bundled by
 *   esbuild (Node's built-ins only) and its `.d.ts` files;
 * - `@payout-service/router`, the type `AppRouter` of the tRPC router for internal tools: one
 *   `.d.ts` that stands alone, needing only `@trpc/server` (which `@trpc/client` brings).
 */
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { build } from 'esbuild';

const run = promisify(execFile);
const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const PACKAGES_DIR = path.join(REPO_ROOT, 'dist/packages');
const WORK_DIR = path.join(REPO_ROOT, 'node_modules/.cache/payout-pack');

/** The `.d.ts` files tsc emits for `entry` (a path under src/), under `outDir`, without type-checking again. */
async function declarations(entry: string, outDir: string): Promise<void> {
  const config = path.join(WORK_DIR, `tsconfig.${path.basename(entry, '.ts')}.json`);
  await writeFile(
    config,
    JSON.stringify({
      extends: path.relative(WORK_DIR, path.join(REPO_ROOT, 'tsconfig.json')),
      compilerOptions: {
        noEmit: false,
        declaration: true,
        emitDeclarationOnly: true,
        noCheck: true,
        rootDir: REPO_ROOT,
        outDir,
        types: ['node'],
      },
      include: [],
      files: [path.join(REPO_ROOT, entry)],
    }),
  );
  await run(path.join(REPO_ROOT, 'node_modules/.bin/tsc'), ['-p', config], { cwd: REPO_ROOT });
}

async function serviceVersion(): Promise<string> {
  return (JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string })
    .version;
}

/** `npm pack` of a folder into `outDir`; the tarball's path. */
async function pack(dir: string, outDir: string): Promise<string> {
  const { stdout } = await run('npm', ['pack', dir, '--pack-destination', outDir, '--json'], {
    cwd: REPO_ROOT,
  });
  const [packed] = JSON.parse(stdout) as { filename: string }[];
  return path.join(outDir, packed!.filename);
}

const manifest = (fields: Record<string, unknown>) =>
  `${JSON.stringify({ license: 'UNLICENSED', type: 'module', engines: { node: '>=20' }, ...fields }, null, 2)}\n`;

/** Relative `.ts` specifiers of emitted declarations as `.js`, which a default tsconfig resolves. */
const jsSpecifiers = (text: string) => text.replace(/(from\s+'\.{1,2}\/[^']+)\.ts'/g, "$1.js'");

/** Builds and packs `@payout-service/client` into `outDir`; the tarball's path. */
export async function packClient(version: string, outDir: string): Promise<string> {
  await mkdir(WORK_DIR, { recursive: true });
  const dir = path.join(WORK_DIR, 'client');
  await rm(dir, { recursive: true, force: true });
  const emitted = path.join(WORK_DIR, 'client-dts');
  await rm(emitted, { recursive: true, force: true });
  await declarations('src/client/index.ts', emitted);
  await mkdir(dir, { recursive: true });
  const files = await readdir(path.join(emitted, 'src/client'));
  const outside = [...(await readdir(emitted)), ...(await readdir(path.join(emitted, 'src')))].filter(
    (f) => f !== 'src' && f !== 'client',
  );
  if (outside.length > 0)
    throw new Error(`src/client imports from outside its folder (${outside.join(', ')}); it must not`);
  for (const file of files)
    await writeFile(
      path.join(dir, file),
      jsSpecifiers(await readFile(path.join(emitted, 'src/client', file), 'utf8')),
    );
  const result = await build({
    entryPoints: [path.join(REPO_ROOT, 'src/client/index.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: path.join(dir, 'index.js'),
    metafile: true,
    logLevel: 'silent',
  });
  const imports = Object.values(result.metafile.outputs).flatMap((o) => o.imports.map((i) => i.path));
  const foreign = imports.filter((i) => !i.startsWith('node:'));
  if (foreign.length > 0) throw new Error(`the client imports ${foreign.join(', ')}: only node: built-ins`);
  await writeFile(
    path.join(dir, 'package.json'),
    manifest({
      name: '@payout-service/client',
      version,
      description:
        'The merchant client of the payout service: typed calls, pagination, errors, verifyWebhook.',
      exports: { '.': { types: './index.d.ts', default: './index.js' } },
      main: './index.js',
      types: './index.d.ts',
    }),
  );
  return pack(dir, outDir);
}

/**
 * Types of the router that its declaration names from the service's own modules, as the client
 * sees them. The build refuses one not listed here, rather than ship a type that cannot resolve.
 */
const ROUTER_TYPES: Record<string, string> = {
  // Server-side only: what a procedure runs with and its REST/OpenAPI description.
  RequestContext: 'object',
  ProcedureMeta: 'object',
  ErrorDetail: '{ field: string; issue: string }',
  // Amounts leave the service as JSON numbers with exactly the stored digits (JSON.rawJSON).
  RawJSON: 'number',
};

/** Builds and packs `@payout-service/router` into `outDir`; the tarball's path. */
export async function packRouter(version: string, outDir: string): Promise<string> {
  await mkdir(WORK_DIR, { recursive: true });
  const dir = path.join(WORK_DIR, 'router');
  await rm(dir, { recursive: true, force: true });
  const emitted = path.join(WORK_DIR, 'router-dts');
  await rm(emitted, { recursive: true, force: true });
  await declarations('src/router.ts', emitted);
  let text = await readFile(path.join(emitted, 'src/router.d.ts'), 'utf8');
  const used = new Set<string>();
  text = text.replace(/import\("\.{1,2}\/[^"]+"\)\.(\w+)/g, (_, name: string) => {
    if (!(name in ROUTER_TYPES)) throw new Error(`the router's type names ${name}: add it to ROUTER_TYPES`);
    used.add(name);
    return name;
  });
  const local = [...used].map((name) => `type ${name} = ${ROUTER_TYPES[name]};`).join('\n');
  if (/import\s.*from\s+'\./.test(text))
    throw new Error('the router declaration imports a module of the service');
  await mkdir(dir, { recursive: true });
  await writeFile(
    path.join(dir, 'index.d.ts'),
    `// The type of the payout service's tRPC router (generated by \`npm run client:pack\`).\n${local}\n${text}`,
  );
  await writeFile(path.join(dir, 'index.js'), 'export {};\n');
  await writeFile(
    path.join(dir, 'package.json'),
    manifest({
      name: '@payout-service/router',
      version,
      description: "The type AppRouter of the payout service's tRPC router, for @trpc/client.",
      exports: { '.': { types: './index.d.ts', default: './index.js' } },
      types: './index.d.ts',
      peerDependencies: { '@trpc/server': '11.x' },
    }),
  );
  return pack(dir, outDir);
}

if (import.meta.main) {
  await mkdir(PACKAGES_DIR, { recursive: true });
  const version = await serviceVersion();
  const tarballs = await Promise.all([packClient(version, PACKAGES_DIR), packRouter(version, PACKAGES_DIR)]);
  process.stdout.write(`${tarballs.map((t) => path.relative(process.cwd(), t)).join('\n')}\n`);
}
