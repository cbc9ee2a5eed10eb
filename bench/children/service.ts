/**
 * One service instance in a process of its own, as `npm start` runs it but configured by the
 * benchmark: the HTTP service, and the Bree worker threads of the jobs it is given. The load
 * generator lives in the parent, so requests and responses never share this event loop with it.
 * Talks to the parent over IPC: `ready` with the URL, then `stop`.
 */
import { type Config, loadConfig } from '#src/config.ts';
import { type RunningWorkers, startWorkers } from '#src/jobs/workers.ts';
import { createLogger } from '#src/lib/log.ts';
import { secretsFrom } from '#src/secrets.ts';
import { startService } from '#src/service.ts';
import { onStop, readChildOptions, sendToParent } from '../lib/ipc.ts';

export interface ServiceChildOptions {
  databaseUrl: string;
  providersUrl: string;
  /** Background jobs to run in this instance (none: the HTTP service alone). */
  jobs: string[];
  /** Configuration on top of the defaults (numbers and flags as the schema's types). */
  config: Partial<Config>;
  /** Settings as environment values, read as `npm start` reads them (`bench/run.ts --service-config`). */
  env?: Record<string, string>;
  secrets: { encryptionKey: string; adminToken: string; callbackSecret: string };
}

const options = readChildOptions<ServiceChildOptions>();
const config: Config = {
  // The defaults, as `npm start` has them (LOG_LEVEL info among them), but for where it listens.
  ...loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: '.bench-data', ...options.env }),
  ...options.config,
};
const log = createLogger({ level: config.LOG_LEVEL });
const secrets = secretsFrom({
  encryptionKey: Buffer.from(options.secrets.encryptionKey, 'base64'),
  adminToken: options.secrets.adminToken,
  callbackSecret: options.secrets.callbackSecret,
});

const service = await startService({
  config,
  databaseUrl: options.databaseUrl,
  providersUrl: options.providersUrl,
  secrets,
  log,
});
let workers: RunningWorkers | undefined;
if (options.jobs.length > 0) {
  workers = await startWorkers({
    config,
    databaseUrl: options.databaseUrl,
    providersUrl: options.providersUrl,
    callbackBaseUrl: service.deps.callbackBaseUrl,
    secrets,
    log,
    jobs: options.jobs,
  });
  service.deps.jobs = workers;
}

onStop(async () => {
  // Workers first: they share nothing with the HTTP pool, but their pass may still be writing.
  await workers?.stop();
  await service.close();
});
sendToParent({ type: 'ready', url: service.url });
