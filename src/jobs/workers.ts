import { fileURLToPath } from 'node:url';
import Bree from 'bree';
import type { Config } from '#src/config.ts';
import type { JobKicker, Secrets } from '#src/deps.ts';
import type { Logger } from '#src/lib/log.ts';
import { JOBS } from './registry.ts';
import type { WorkerData } from './worker.ts';

export interface RunningWorkers extends JobKicker {
  stop(): Promise<void>;
}

const WORKER_FILE = fileURLToPath(new URL('./worker.ts', import.meta.url));

/**
 * Starts every background job in its own Bree worker thread. Threads are long-lived loops (a
 * fresh thread per pass would pay ORM start-up every second); a thread that dies is restarted.
 */
export async function startWorkers(options: {
  config: Config;
  databaseUrl: string;
  providersUrl: string;
  callbackBaseUrl: string;
  secrets: Secrets;
  log: Logger;
  jobs?: readonly string[];
}): Promise<RunningWorkers> {
  const { log } = options;
  const names = options.jobs ?? JOBS.map((j) => j.name);
  let stopping = false;
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
    errorHandler: (error, data) => {
      log.error({ err: error, job: data.name }, 'worker failed');
    },
  });
  bree.on('worker deleted', (name: string) => {
    if (stopping) return;
    log.warn({ job: name }, 'worker exited; restarting');
    setTimeout(() => {
      if (!stopping) void bree.run(name);
    }, 1000).unref();
  });
  await bree.start();
  return {
    kick(job: string) {
      bree.workers.get(job)?.postMessage('kick');
    },
    async stop() {
      stopping = true;
      await bree.stop();
    },
  };
}
