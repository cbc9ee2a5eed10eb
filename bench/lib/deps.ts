import { loadConfig } from '#src/config.ts';
import { createDeps } from '#src/create-deps.ts';
import type { Deps } from '#src/deps.ts';
import { createLogger } from '#src/lib/log.ts';
import { secretsFrom } from '#src/secrets.ts';
import { BENCH_CONFIG, type BenchContext } from './context.ts';

/**
 * The service's dependencies in the benchmark's own process, configured as its service
 * instances are: for a scenario that measures one of the service's functions by itself (a pull a
 * job makes) rather than through a request.
 */
export function benchDeps(ctx: BenchContext, providersUrl: string): Promise<Deps> {
  return createDeps({
    config: { ...loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: '.bench-data' }), ...BENCH_CONFIG },
    databaseUrl: ctx.db.url,
    providersUrl,
    secrets: secretsFrom({
      encryptionKey: Buffer.from(ctx.secrets.encryptionKey, 'base64'),
      adminToken: ctx.secrets.adminToken,
      callbackSecret: ctx.secrets.callbackSecret,
    }),
    log: createLogger({ level: 'silent' }),
  });
}

/** Closes what {@link benchDeps} opened. */
export async function closeBenchDeps(deps: Deps): Promise<void> {
  await deps.reads.close();
  await deps.orm.close();
}
