import type { Server } from 'node:http';
import { within } from '#src/lib/within.ts';
import { overdueHours } from './compliance/queues.ts';
import { createDeps, type DepsOptions } from './create-deps.ts';
import { migrateVia } from './db/orm.ts';
import type { Deps } from './deps.ts';
import { createApp } from './http/app.ts';
import { startMetricsServer } from './http/observability.ts';
import { registerServiceMetrics } from './observability/metrics.ts';
import { appRouter } from './router.ts';

export interface RunningService {
  deps: Deps;
  url: string;
  port: number;
  /** The port of the metrics server when METRICS_PORT is set. */
  metricsPort?: number;
  close(): Promise<void>;
}

/**
 * How long closing the database pool may wait for its connections: node-postgres' end() waits
 * for every connection checked out. A transaction whose connection is lost gives it back
 * (`src/db/driver.ts`); the bound stays so that stopping never waits forever on one that
 * something else keeps.
 */
const POOL_CLOSE_TIMEOUT_MS = 5_000;

/**
 * The composition root of the HTTP service: dependencies, migrations, then the server.
 * Everything is injected, so tests start the real thing with their own clock.
 */
export async function startService(options: DepsOptions): Promise<RunningService> {
  const { config, log } = options;
  const deps = await createDeps(options);
  const orm = deps.orm;
  try {
    const applied = await migrateVia(orm, config.DATABASE_DIRECT_URL);
    if (applied.length > 0) log.info({ migrations: applied }, 'migrations applied');
  } catch (err) {
    await orm.close();
    throw err;
  }
  registerServiceMetrics(deps.metrics, {
    sql: deps.sql,
    clock: deps.clock,
    overdueHours: overdueHours(config),
  });
  const app = createApp(deps, appRouter);
  const server: Server = await new Promise((resolve, reject) => {
    const s = app.listen(config.PORT, config.HOST, () => resolve(s));
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  deps.callbackBaseUrl ||= `http://${config.HOST}:${port}`;
  const metricsServer =
    config.METRICS_PORT === undefined ? null : await startMetricsServer(deps, config.METRICS_PORT);
  return {
    deps,
    port,
    url: `http://${config.HOST}:${port}`,
    metricsPort: metricsServer?.port,
    async close() {
      await metricsServer?.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      });
      await within(deps.reads.close(), POOL_CLOSE_TIMEOUT_MS);
      if ((await within(orm.close(), POOL_CLOSE_TIMEOUT_MS)).late) {
        log.warn(
          { timeout_ms: POOL_CLOSE_TIMEOUT_MS },
          'the database pool did not close in time: a connection is still checked out; stopping anyway',
        );
      }
    },
  };
}
