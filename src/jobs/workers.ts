import { fileURLToPath } from 'node:url';
import Bree from 'bree';
import type { Config } from '#src/config.ts';
import type { JobKicker, Secrets } from '#src/deps.ts';
import type { Logger } from '#src/lib/log.ts';
import { within } from '#src/lib/within.ts';
import { isMetricsAnswer, type MetricsSnapshot } from '#src/observability/metrics.ts';
import { JOBS } from './registry.ts';
import type { WorkerData } from './worker.ts';

export interface RunningWorkers extends JobKicker {
  /** The jobs whose thread is running now: built its dependencies, and has not exited since. */
  running(): string[];
  /** Each running thread's metrics; a thread that does not answer within a second is left out. */
  metrics(): Promise<MetricsSnapshot[]>;
  stop(): Promise<void>;
}

/** How long a scrape waits for a job thread's metrics. */
const METRICS_TIMEOUT_MS = 1000;

/** How long start-up waits for the job threads to be running before it carries on without them. */
export const WORKERS_READY_TIMEOUT_MS = 60_000;

const WORKER_FILE = fileURLToPath(new URL('./worker.ts', import.meta.url));

/**
 * Starts every background job in its own Bree worker thread. Threads are long-lived loops (a
 * fresh thread per pass would pay ORM start-up every second); a thread that dies is restarted.
 *
 * Resolves once every thread says it is running (its modules loaded, its pool and providers
 * built: about a second), so that what starts the service knows its jobs are working when it
 * says so. A thread that cannot start (the database unreachable, say) does not hold start-up
 * back beyond `readyTimeoutMs`: it is logged, and Bree keeps restarting it.
 */
export async function startWorkers(options: {
  config: Config;
  databaseUrl: string;
  providersUrl: string;
  callbackBaseUrl: string;
  secrets: Secrets;
  log: Logger;
  jobs?: readonly string[];
  readyTimeoutMs?: number;
}): Promise<RunningWorkers> {
  const { log } = options;
  const names = options.jobs ?? JOBS.map((j) => j.name);
  let stopping = false;
  const running = new Set<string>();
  let nextRequest = 0;
  const answers = new Map<number, (metrics: MetricsSnapshot) => void>();
  let allRunning: () => void = () => undefined;
  const started = new Promise<void>((resolve) => {
    allRunning = resolve;
  });
  const bree: Bree = new Bree({
    root: false,
    doRootCheck: false,
    logger: {
      info: () => undefined,
      warn: (...a: unknown[]) => log.warn({ bree: a }),
      error: (...a: unknown[]) => log.error({ bree: a }),
    },
    defaultExtension: 'ts',
    acceptedExtensions: ['.ts', '.js'],
    jobs: names.map((name) => {
      const workerData: WorkerData = {
        jobName: name,
        config: options.config,
        databaseUrl: options.databaseUrl,
        providersUrl: options.providersUrl,
        callbackBaseUrl: options.callbackBaseUrl,
        secrets: {
          encryptionKey: options.secrets.encryptionKey.toString('base64'),
          adminToken: options.secrets.adminToken,
          callbackSecret: options.secrets.callbackSecret,
        },
      };
      return { name, path: WORKER_FILE, timeout: 0, worker: { workerData } };
    }),
    workerMessageHandler: ({ name, message }: { name: string; message: unknown }) => {
      if (isMetricsAnswer(message)) {
        answers.get(message.id)?.(message.metrics);
        return;
      }
      if (message !== 'ready') return;
      running.add(name);
      if (running.size === names.length) allRunning();
    },
    errorHandler: (error, data) => {
      log.error({ err: error, job: data.name }, 'worker failed');
    },
  });
  bree.on('worker deleted', (name: string) => {
    running.delete(name);
    if (stopping) return;
    log.warn({ job: name }, 'worker exited; restarting');
    setTimeout(() => {
      if (!stopping) void bree.run(name);
    }, 1000).unref();
  });
  await bree.start();
  if (names.length === 0) allRunning();
  if ((await within(started, options.readyTimeoutMs ?? WORKERS_READY_TIMEOUT_MS)).late) {
    log.warn(
      { jobs: names.filter((name) => !running.has(name)) },
      'background jobs not running yet; carrying on without them',
    );
  }
  return {
    kick(job: string) {
      bree.workers.get(job)?.postMessage('kick');
    },
    running: () => names.filter((name) => running.has(name)),
    async metrics() {
      const asked = names.filter((name) => running.has(name));
      const snapshots = await Promise.all(
        asked.map(
          (name) =>
            new Promise<MetricsSnapshot | null>((resolve) => {
              const id = ++nextRequest;
              const timer = setTimeout(() => {
                answers.delete(id);
                resolve(null);
              }, METRICS_TIMEOUT_MS);
              answers.set(id, (metrics) => {
                clearTimeout(timer);
                answers.delete(id);
                resolve(metrics);
              });
              bree.workers.get(name)?.postMessage({ type: 'metrics?', id });
            }),
        ),
      );
      return snapshots.filter((s) => s !== null);
    },
    async stop() {
      stopping = true;
      await bree.stop();
    },
  };
}
