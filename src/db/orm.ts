import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Migrator } from '@mikro-orm/migrations';
import { defineConfig, MikroORM, type Options } from '@mikro-orm/postgresql';
import type { Clock } from '#src/lib/clock.ts';
import type { Logger } from '#src/lib/log.ts';
import { afterCommitSubscriber } from './after-commit.ts';
import { bindClock } from './columns.ts';
import { ServicePostgreSqlDriver } from './driver.ts';
import { entities } from './entities.ts';

export const MIGRATIONS_DIR = path.resolve(fileURLToPath(import.meta.url), '../../../migrations');

/** The name a hot-standby replica's connections carry (`application_name` in `pg_stat_activity`). */
export const REPLICA_APPLICATION_NAME = 'payout-service-replica-reads';

export function ormConfig(options: {
  url: string;
  poolSize: number;
  log?: Logger;
  replica?: boolean;
}): Options {
  return defineConfig({
    driver: ServicePostgreSqlDriver,
    clientUrl: options.url,
    // A replica that does not answer is left for the primary after 2 s, not waited for.
    ...(options.replica
      ? { driverOptions: { application_name: REPLICA_APPLICATION_NAME, connectionTimeoutMillis: 2_000 } }
      : {}),
    entities,
    subscribers: [afterCommitSubscriber],
    extensions: [Migrator],
    // pg_partman's own schema, where the server has it, and the partition maintenance function
    // are the migrations' (src/db/partitions.ts), not the entities'.
    schemaGenerator: { ignoreSchema: ['partman'], ignoreRoutines: true },
    pool: { min: 0, max: options.poolSize },
    // Requests fork their own EntityManager; touching the global one is a bug.
    allowGlobalContext: false,
    debug: false,
    logger: (message) => options.log?.debug({ orm: message }),
    migrations: {
      path: MIGRATIONS_DIR,
      glob: '!(*.d).ts',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      emit: 'ts',
      fileName: (timestamp, name) => `Migration${timestamp}${name ? `_${name}` : ''}`,
    },
  });
}

/** Connects, and binds the service clock to the ORM's timestamps. */
export async function openOrm(options: {
  url: string;
  poolSize: number;
  clock: Clock;
  log?: Logger;
  /** A hot-standby replica's pool (src/db/replica.ts). */
  replica?: boolean;
}): Promise<MikroORM> {
  const orm = await MikroORM.init(ormConfig(options));
  bindClock(orm, options.clock);
  return orm;
}

/** Applies pending migrations (never schema sync); returns the names applied. */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const applied = await orm.migrator.up();
  return applied.map((m) => m.name);
}

/**
 * Applies pending migrations over `directUrl` when one is given (DATABASE_DIRECT_URL: a
 * connection of its own past the transaction pooler, closed afterwards), else over `orm`.
 */
export async function migrateVia(orm: MikroORM, directUrl: string | undefined): Promise<string[]> {
  if (!directUrl) return migrate(orm);
  const direct = await MikroORM.init(ormConfig({ url: directUrl, poolSize: 1 }));
  try {
    return await migrate(direct);
  } finally {
    await direct.close();
  }
}
