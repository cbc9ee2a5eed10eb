import { PostgreSqlConnection, PostgreSqlDriver } from '@mikro-orm/postgresql';
import type {
  AbortableOperationOptions,
  DatabaseConnection,
  Driver,
  PostgresDialect,
  QueryCompiler,
  TransactionSettings,
} from 'kysely';
import type { PoolConfig } from 'pg';
import { isDatabaseUnavailable } from './unavailable.ts';

/**
 * The ORM's driver: MikroORM's PostgreSQL driver, whose transactions give their pool connection
 * back when that connection is lost under them.
 *
 * MikroORM 7.2.1 runs every transaction (`em.transactional`, a flush's own, the migrator's) on a
 * Kysely 0.29.6 `ControlledTransaction`, which hands its connection back to the pool only once
 * its BEGIN, COMMIT or ROLLBACK has succeeded (kysely-org/kysely#1990, open). When PostgreSQL ends
 * the backend under an open transaction (a restart, a failover, `pg_terminate_backend`), the
 * ROLLBACK that MikroORM sends after the failed statement fails too; MikroORM logs that and
 * rethrows the statement's error, and the node-postgres client stays checked out for good: one
 * slot of the pool less for each such request, and `pool.end()` never resolves.
 * {@link ReleasingDriver} makes those statements end the transaction's hold on the connection.
 */
export class ServicePostgreSqlDriver extends PostgreSqlDriver {
  // Replaces the connection PostgreSqlDriver's constructor made, before anything connects it
  // (read replicas, of which the service has none, would keep MikroORM's own).
  protected override readonly connection = new ReleasingConnection(this.config);
}

class ReleasingConnection extends PostgreSqlConnection {
  override createKyselyDialect(overrides: PoolConfig): PostgresDialect {
    const dialect = super.createKyselyDialect(overrides);
    const createDriver = dialect.createDriver.bind(dialect);
    dialect.createDriver = () => new ReleasingDriver(createDriver());
    return dialect;
  }
}

/**
 * Kysely's PostgreSQL driver, but a connection lost under a transaction goes back to the pool
 * (which drops a client whose connection has ended rather than hand it out again):
 * - ROLLBACK on a lost connection succeeds: PostgreSQL rolled the transaction back when its
 *   backend ended, and Kysely then releases the connection as after any rollback. A failed
 *   COMMIT is still an error; MikroORM rolls back after it, and that releases the connection.
 * - BEGIN on a lost connection fails and releases it (Kysely does not when BEGIN fails).
 */
export class ReleasingDriver implements Driver {
  readonly #driver: Driver;
  /** Released here after a failed BEGIN: Kysely's own release of it, should one come, does nothing. */
  readonly #released = new WeakSet<DatabaseConnection>();

  constructor(driver: Driver) {
    this.#driver = driver;
  }

  init(options?: AbortableOperationOptions): Promise<void> {
    return this.#driver.init(options);
  }

  async acquireConnection(options?: AbortableOperationOptions): Promise<DatabaseConnection> {
    const connection = await this.#driver.acquireConnection(options);
    this.#released.delete(connection);
    return connection;
  }

  async beginTransaction(connection: DatabaseConnection, settings: TransactionSettings): Promise<void> {
    try {
      await this.#driver.beginTransaction(connection, settings);
    } catch (err) {
      if (isDatabaseUnavailable(err)) {
        await this.releaseConnection(connection);
        this.#released.add(connection);
      }
      throw err;
    }
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.#driver.commitTransaction(connection);
  }

  async rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    try {
      await this.#driver.rollbackTransaction(connection);
    } catch (err) {
      if (!isDatabaseUnavailable(err)) throw err;
    }
  }

  savepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    return this.#driver.savepoint!(connection, name, compile);
  }

  rollbackToSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    return this.#driver.rollbackToSavepoint!(connection, name, compile);
  }

  releaseSavepoint(connection: DatabaseConnection, name: string, compile: QueryCompiler['compileQuery']) {
    return this.#driver.releaseSavepoint!(connection, name, compile);
  }

  async releaseConnection(
    connection: DatabaseConnection,
    options?: AbortableOperationOptions,
  ): Promise<void> {
    if (this.#released.has(connection)) return;
    await this.#driver.releaseConnection(connection, options);
  }

  destroy(options?: AbortableOperationOptions): Promise<void> {
    return this.#driver.destroy(options);
  }
}
