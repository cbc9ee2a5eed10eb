/**
 * `npm run docs:examples`: runs the examples scenario (`examples.ts`) against a real service and
 * sandbox on a fresh database (the embedded one, or one of its own on DATABASE_URL's server),
 * writes what it recorded to `src/docs/examples.json`, and regenerates the documents. Run it after adding or changing an
 * operation, an error code or a webhook event; the examples test says when it is needed.
 */
import { writeFile } from 'node:fs/promises';
import { writeDocs } from '#src/docs/generate.ts';
import { startHarness, stopHarness } from '../harness.ts';
import { servedDocument } from './document.ts';
import { EXAMPLES_FILE, recordExamples } from './examples.ts';

await startHarness();
try {
  const recording = await recordExamples(await servedDocument());
  await writeFile(EXAMPLES_FILE, `${JSON.stringify(recording, null, 2)}\n`);
  process.stdout.write(
    `recorded ${Object.values(recording.operations).flat().length} operation examples, ` +
      `${Object.keys(recording.errors).length} errors and ${Object.keys(recording.webhooks).length} webhook events\n`,
  );
  const { written } = await writeDocs();
  for (const file of written) process.stdout.write(`wrote ${file}\n`);
} finally {
  await stopHarness();
}
