import { expect } from 'chai';
import { CompiledQuery, Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { ReleasingDriver } from '#src/db/driver.ts';
import { isDatabaseUnavailable } from '#src/db/unavailable.ts';
import { harness } from '../harness.ts';
import { needsPostgresServer } from '../skip.ts';

/**
 * The driver the ORM's transactions run on (src/db/driver.ts), on a pool of one connection of its
 * own, whose backend the test ends while the connection is checked out. Past the pooler when there
 * is one: a client of PgBouncer in transaction mode has no backend of its own between transactions.
 */
describe('a pool connection lost under a transaction', () => {
  let pool: pg.Pool;
  let checkedOut: pg.PoolClient | undefined;
  let db: Kysely<unknown>;
  let driver: ReleasingDriver;

  beforeEach(async function () {
    needsPostgresServer(this, "a backend of the pool's to terminate");
    pool = new pg.Pool({ connectionString: harness().directUrl ?? harness().databaseUrl, max: 1 });
    // A checked-out client's lost connection is reported on the client, which throws with no listener.
    pool.on('connect', (client) => client.on('error', () => {}));
    pool.on('acquire', (client) => {
      checkedOut = client;
    });
    const dialect = new PostgresDialect({ pool });
    driver = new ReleasingDriver(dialect.createDriver());
    dialect.createDriver = () => driver;
    db = new Kysely({ dialect });
  });

  afterEach(async () => {
    // pool.end() waits for every checked-out client: a test that failed on a leak hands it back here.
    if (pool && pool.totalCount > pool.idleCount) checkedOut?.release(new Error('left checked out'));
    await db?.destroy();
    if (pool && !pool.ended) await pool.end();
  });

  /** Ends the backend of the connection last checked out, and waits until the client has seen it. */
  async function loseConnection(): Promise<void> {
    const client = checkedOut!;
    const [{ pid }] = (await client.query<{ pid: number }>('select pg_backend_pid() as pid')).rows as [
      { pid: number },
    ];
    const ended = new Promise((resolve) => client.once('end', resolve));
    const admin = new pg.Client({ connectionString: harness().directUrl ?? harness().databaseUrl });
    await admin.connect();
    try {
      await admin.query('select pg_terminate_backend($1)', [pid]);
    } finally {
      await admin.end();
    }
    await ended;
  }

  const inUse = () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount });

  it('rolls back (PostgreSQL did when the backend ended) and goes back to the pool, which drops it', async () => {
    const trx = await db.startTransaction().execute();
    await loseConnection();
    const failed = await trx.executeQuery(CompiledQuery.raw('select 1')).then(
      () => null,
      (err: unknown) => err,
    );
    expect(isDatabaseUnavailable(failed), String(failed)).to.equal(true);
    await trx.rollback().execute();
    expect(trx.isRolledBack).to.equal(true);
    expect(inUse()).to.deep.equal({ total: 0, idle: 0, waiting: 0 });
    // The pool of one is free again: a new connection takes the lost one's place.
    const { rows } = await db.executeQuery<{ one: number }>(CompiledQuery.raw('select 1 as one'));
    expect(rows).to.deep.equal([{ one: 1 }]);
  });

  it('refuses BEGIN and gives the connection back, once', async () => {
    await driver.init();
    const connection = await driver.acquireConnection();
    await loseConnection();
    const failed = await driver.beginTransaction(connection, {}).then(
      () => null,
      (err: unknown) => err,
    );
    expect(isDatabaseUnavailable(failed), String(failed)).to.equal(true);
    expect(inUse()).to.deep.equal({ total: 0, idle: 0, waiting: 0 });
    // A later release by whoever held it (Kysely's own, when BEGIN ran outside a controlled transaction) does nothing.
    await driver.releaseConnection(connection);
    expect(inUse()).to.deep.equal({ total: 0, idle: 0, waiting: 0 });
  });
});
