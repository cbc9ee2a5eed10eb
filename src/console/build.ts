import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The console's bundle: `src/console/app/main.tsx` and everything it imports (React, TanStack
 * Query, the tRPC client, @xstate/store), bundled and minified by esbuild into one script.
 *
 * The bundle is committed (`src/console/dist/console.js`) and the service serves that file: a
 * production install without devDependencies (esbuild is one) serves the console all the same.
 * `npm run docs` rebuilds it with the other generated files and `npm run docs:check` (CI, and the
 * docs test) fails when the committed bundle is not what the sources build today. esbuild's output
 * is the same for the same sources and the same esbuild version (pinned in package-lock.json).
 */

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** Where the committed bundle lives, relative to the repository root. */
export const CONSOLE_BUNDLE = 'src/console/dist/console.js';

export async function consoleBundle(): Promise<string> {
  // Imported here, not at the top: the service itself never needs esbuild.
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: [path.join(HERE, 'app/main.tsx')],
    bundle: true,
    write: false,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: ['chrome120', 'firefox120', 'safari17'],
    jsx: 'automatic',
    define: { 'process.env.NODE_ENV': '"production"' },
    legalComments: 'eof',
    charset: 'utf8',
    logLevel: 'silent',
    absWorkingDir: path.resolve(HERE, '../..'),
  });
  const [file] = result.outputFiles;
  if (!file) throw new Error('esbuild produced no console bundle');
  return file.text;
}
