/**
 * Entry point of a Bree worker thread: builds its own dependencies (ORM pool, providers), then
 * runs one job in a loop — a pass, then a wait of the job's interval or until the main thread
 * wakes it — until Bree asks it to stop. Work is claimed in the database, so any number of
 * threads and processes can run the same job side by side.
 */
import { setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import type { Config } from '#src/config.ts';
import { createDeps } from '#src/create-deps.ts';
import type { Secrets } from '#src/deps.ts';
import { createLogger } from '#src/lib/log.ts';
import { isMetricsRequest } from '#src/observability/metrics.ts';
import { secretsFrom } from '#src/secrets.ts';
import { jobNamed } from './registry.ts';

export interface WorkerData {
  jobName: string;
  config: Config;
  databaseUrl: string;
  providersUrl: string;
  callbackBaseUrl: string;
  secrets: { encryptionKey: string; adminToken: string; callbackSecret: string };
}

/**
 * Background work yields the CPU to requests: on Linux a thread's nice value is its own, so this
 * thread (and only this thread) runs at a lower priority than the thread serving the API, which a
 * merchant waits on. Elsewhere the call would renice the whole process, so it is left alone.
 */
const BACKGROUND_NICE = 10;
if (process.platform === 'linux') setPriority(BACKGROUND_NICE);

// Bree spreads the job's workerData into the thread's workerData (next to its own `job` key).
const data = workerData as WorkerData;
const definition = jobNamed(data.jobName);
// Only this job's modules: a thread never loads the other jobs' code, nor the HTTP app's.
const job = await definition.load();
const log = createLogger({ level: data.config.LOG_LEVEL, name: `job:${definition.name}` });
const secrets: Secrets = secretsFrom({
  encryptionKey: Buffer.from(data.secrets.encryptionKey, 'base64'),
  adminToken: data.secrets.adminToken,
  callbackSecret: data.secrets.callbackSecret,
});
// A small pool per thread: every worker's connections count against the database's budget.
const config: Config = { ...data.config, DATABASE_POOL_SIZE: 2 };
const deps = await createDeps({
  config,
  databaseUrl: data.databaseUrl,
  providersUrl: data.providersUrl,
  callbackBaseUrl: data.callbackBaseUrl,
  secrets,
  log,
});

// Running: the main thread counts the job as started from here on.
parentPort?.postMessage('ready');

let stopping = false;
let wake: (() => void) | undefined;
parentPort?.on('message', (message: unknown) => {
  // The main thread asks for this thread's metrics when /metrics is scraped; that wakes nothing.
  if (isMetricsRequest(message)) {
    void deps.metrics.registry.getMetricsAsJSON().then(
      (metrics) => parentPort?.postMessage({ type: 'metrics', id: message.id, metrics }),
      (err: unknown) => log.warn({ err }, 'could not collect metrics'),
    );
    return;
  }
  if (message === 'cancel') stopping = true;
  wake?.();
});

while (!stopping) {
  try {
    await job.runOnce(deps);
  } catch (err) {
    log.error({ err }, 'job pass failed');
  }
  if (stopping) break;
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, job.intervalMs(config));
    wake = () => {
      clearTimeout(timer);
      resolve();
    };
  });
  wake = undefined;
}
await deps.reads.close();
await deps.orm.close();
// Ends this thread with code 0; answering Bree's 'cancel' with 'cancelled' would make it terminate
// the thread instead, which reads as a crash (exit code 1) in the logs.
process.exit(0);
