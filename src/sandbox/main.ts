import { loadConfig } from '#src/config.ts';
import { Corridors } from '#src/corridors/corridors.ts';
import { systemClock } from '#src/lib/clock.ts';
import { createLogger } from '#src/lib/log.ts';
import { loadSecrets } from '#src/secrets.ts';
import { startSandbox } from './server.ts';

// Standalone sandbox (`npm run sandbox`): the simulated providers without the service.
const config = loadConfig();
const log = createLogger({ level: config.LOG_LEVEL, name: 'sandbox' });
const sandbox = await startSandbox({
  corridors: Corridors.load(),
  clock: systemClock,
  log,
  port: config.SANDBOX_PORT,
  host: config.HOST,
  blockIntervalMs: config.SANDBOX_BLOCK_INTERVAL_MS,
  callbackDelayMs: config.SANDBOX_CALLBACK_DELAY_MS,
  // The service's own secret (PROVIDER_CALLBACK_SECRET, else the one kept in DATA_DIR), so that a
  // service run separately against this sandbox accepts its callbacks without configuration.
  callbackSecret: loadSecrets(config).callbackSecret,
});
log.info({ url: sandbox.url }, 'sandbox listening');

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'sandbox stopping');
    sandbox.close().then(
      () => process.exit(0),
      (err: unknown) => {
        log.error({ err }, 'sandbox did not close cleanly');
        process.exit(1);
      },
    );
  });
}
