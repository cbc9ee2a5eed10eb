import { randomBytes } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type pg from 'pg';
import { afterCommit, tellNow } from './after-commit.ts';

/**
 * Plain SQL for the hot paths (create and read payouts, the workers' batches), on the ORM's own
 * connection pool. The ORM formats every query client-side with its values inlined, which costs
 * CPU per statement and rules out prepared statements; here each statement is prepared once per
 * connection and sent with bound parameters. Entities, migrations and the cold paths stay with
 * the ORM; the two meet in one transaction through {@link emSql} when a hot statement must
 * commit with ORM work.
 *
 * Write statements with `$n` parameters and without `?` (the ORM reads `?` as a placeholder when
 * a statement runs through {@link emSql}).
 *
 * Behind a transaction pooler (PgBouncer in `pool_mode=transaction`) a connection's server session
 * changes between transactions, so a statement prepared under a name on one may be missing on the
 * next. {@link openSql} detects the pooler and then sends every statement unnamed (parsed and
 * planned at each execution, within one round trip); docs/scaling.md has what that costs.
 */

/** A statement of the hot paths: SQL text with `$n` parameters, prepared under `name`. */
export interface Statement {
  readonly name: string;
  readonly text: string;
  /** Planned at every execution for the values it runs with, instead of prepared once (see {@link statement}). */
  readonly replan?: boolean;
}

const names = new Set<string>();

/**
 * Declares a statement once, at module load; names are unique across the service.
 *
 * A prepared statement settles, after five executions, on a generic plan made for the table
 * sizes of that moment, and keeps it until the next ANALYZE of a table it reads. A workers' batch
 * read whose plan looks rows up per item of its list through a subquery (a payout's instruction
 * and timeline) must not keep a plan made while a table was nearly empty: a service that starts
 * quietly and then meets a backlog would scan the whole growing table once per item, until
 * autovacuum's next ANALYZE. `replan` sends such a statement unprepared, so PostgreSQL
 * plans it for the list and the tables as they are, at a fraction of a millisecond per batch.
 */
export function statement(name: string, text: string, options: { replan?: boolean } = {}): Statement {
  if (names.has(name)) throw new Error(`two statements are named ${name}`);
  if (text.includes('?')) throw new Error(`statement ${name} contains '?', which the ORM would bind`);
  names.add(name);
  return { name, text, replan: options.replan ?? false };
}

/** Runs statements; a transaction's `Sql` runs them in that transaction. */
export interface Sql {
  rows<R>(statement: Statement, values?: readonly unknown[]): Promise<R[]>;
  /**
   * Runs `work` in one transaction: committed when it resolves, rolled back when it throws.
   * `settings` are set for that transaction alone (`set local`) before its first statement is
   * planned, in the round trip that begins it; within a transaction already open, from then on.
   */
  transaction<T>(work: (tx: Sql) => Promise<T>, settings?: TransactionSettings): Promise<T>;
  /**
   * Calls `callback` once what this `Sql` wrote has committed: after its transaction commits,
   * never when it rolls back; at once outside a transaction (each statement commits on its own).
   */
  afterCommit(callback: () => void): void;
  /**
   * Where this `Sql`'s connections come from (the ORM's configuration, shared by every
   * EntityManager forked from one ORM): what per-database registries, such as the transition
   * observer's, are keyed by.
   */
  readonly origin: object;
}

/**
 * Planner settings for one transaction (see {@link Sql.transaction}): names and values as
 * `set local` takes them, constants of the code (checked, never a caller's input).
 */
export type TransactionSettings = Readonly<Record<string, string>>;

/**
 * For the statements that count many queues or states at once (the console's and the metrics'
 * counts, the overdue notices): their estimated cost passes PostgreSQL's `jit_above_cost` though
 * they run in milliseconds, and compiling them took longer than running them, on every call.
 */
export const WITHOUT_JIT: TransactionSettings = { jit: 'off' };

/** One statement's rows, in a transaction of its own with `settings` (see {@link Sql.transaction}). */
export function rowsWith<R>(
  sql: Sql,
  settings: TransactionSettings,
  run: Statement,
  values?: readonly unknown[],
): Promise<R[]> {
  return sql.transaction((tx) => tx.rows<R>(run, values), settings);
}

const SETTING = /^[a-z_]+$/;

/** `set local` statements for `settings`, one per setting. */
export function setLocal(settings: TransactionSettings | undefined): string[] {
  return Object.entries(settings ?? {}).map(([name, value]) => {
    if (!SETTING.test(name) || !SETTING.test(value)) throw new Error(`not a setting: ${name} = ${value}`);
    return `set local ${name} = ${value}`;
  });
}

/** How {@link poolSql} sends statements. */
export interface PoolSqlOptions {
  /** See {@link Sql.origin}; the pool itself by default. */
  origin?: object;
  /** Prepared under a name per connection (the default), or unnamed: behind a transaction pooler. */
  named?: boolean;
}

// A statement is prepared on each connection that runs it, under a name unique to that connection
// in every process and thread: the embedded database serves all connections, the worker threads'
// and other instances' included, from one session, where plain names would collide.
const connectionIds = new WeakMap<pg.ClientBase, string>();
const instance = randomBytes(4).toString('hex');
let nextConnection = 0;

function run<R>(
  client: pg.ClientBase,
  s: Statement,
  values: readonly unknown[],
  named: boolean,
): Promise<R[]> {
  let name: string | undefined;
  if (named && !s.replan) {
    let id = connectionIds.get(client);
    if (id === undefined) {
      id = `${instance}_${++nextConnection}`;
      connectionIds.set(client, id);
    }
    name = `${s.name}_${id}`;
  }
  return client
    .query({ name, text: s.text, values: values as unknown[] })
    .then((result) => result.rows as R[]);
}

/**
 * One transaction's statements on its connection. A nested `transaction` runs in the same
 * transaction (no savepoint), so what it buffers for after the commit stays with the outer one.
 */
function clientSql(client: pg.ClientBase, named: boolean, origin: object, committed: (() => void)[]): Sql {
  const tx: Sql = {
    rows: (s, values = []) => run(client, s, values, named),
    transaction: async (work, settings) => {
      const set = setLocal(settings);
      if (set.length > 0) await client.query(set.join('; '));
      return work(tx);
    },
    afterCommit: (callback) => committed.push(callback),
    origin,
  };
  return tx;
}

/** Statements on a pool: each on a free connection, a transaction on one connection of its own. */
export function poolSql(pool: pg.Pool, options: PoolSqlOptions = {}): Sql {
  const named = options.named ?? true;
  const origin = options.origin ?? pool;
  return {
    origin,
    afterCommit: tellNow,
    async rows<R>(s: Statement, values: readonly unknown[] = []): Promise<R[]> {
      const client = await pool.connect();
      try {
        return await run<R>(client, s, values, named);
      } finally {
        client.release();
      }
    },
    async transaction<T>(work: (tx: Sql) => Promise<T>, settings?: TransactionSettings): Promise<T> {
      const client = await pool.connect();
      const committed: (() => void)[] = [];
      let broken: Error | undefined;
      let result: T;
      try {
        // One simple-protocol message: the settings cost no round trip of their own.
        await client.query(['begin', ...setLocal(settings)].join('; '));
        result = await work(clientSql(client, named, origin, committed));
        await client.query('commit');
      } catch (err) {
        try {
          await client.query('rollback');
        } catch (rollbackError) {
          // The connection is unusable: drop it from the pool rather than hand it out again.
          broken = rollbackError as Error;
        }
        throw err;
      } finally {
        client.release(broken);
      }
      for (const callback of committed) tellNow(callback);
      return result;
    },
  };
}

/** PostgreSQL's type oid of `text`, the element type a binary `text[]` names. */
const TEXT_OID = 25;

/**
 * A `text[]` parameter of long strings, sent in PostgreSQL's binary array format: each string's
 * UTF-8 bytes behind its length, nothing escaped by the driver, nothing unescaped or parsed by
 * PostgreSQL. For outbox payloads (2-3 KB of JSON each), where an array literal cost the driver
 * about 30 µs per payload to escape, and a JSON array cost PostgreSQL about as much to parse.
 * The statement must cast the parameter to `text[]`. Through {@link emSql} it is an array literal.
 */
export class TextArray {
  readonly items: readonly string[];

  constructor(items: readonly string[]) {
    this.items = items;
  }

  /** The binary form (`pg` sends a Buffer parameter in binary format). */
  toPostgres(): Buffer {
    let size = 20;
    for (const item of this.items) size += 4 + Buffer.byteLength(item);
    const out = Buffer.allocUnsafe(size);
    out.writeInt32BE(1, 0); // dimensions
    out.writeInt32BE(0, 4); // no nulls
    out.writeUInt32BE(TEXT_OID, 8);
    out.writeInt32BE(this.items.length, 12);
    out.writeInt32BE(1, 16); // lower bound
    let at = 20;
    for (const item of this.items) {
      const length = out.write(item, at + 4, 'utf8');
      out.writeInt32BE(length, at);
      at += 4 + length;
    }
    return out;
  }
}

const questionMarkText = new WeakMap<Statement, { text: string; order: number[] }>();

/**
 * Statements through an EntityManager, inside its transaction when it is in one: how a hot
 * statement commits together with ORM work. Values are serialised as `pg` would bind them (arrays
 * as array literals, objects as JSON) and inlined by the ORM.
 */
export function emSql(em: EntityManager): Sql {
  return {
    rows<R>(s: Statement, values: readonly unknown[] = []): Promise<R[]> {
      let converted = questionMarkText.get(s);
      if (!converted) {
        const order: number[] = [];
        const text = s.text.replace(/\$(\d+)/g, (_, n: string) => {
          order.push(Number(n) - 1);
          return '?';
        });
        converted = { text, order };
        questionMarkText.set(s, converted);
      }
      const params = converted.order.map((i) => bindValue(values[i]));
      return em.execute<R[]>(converted.text, params);
    },
    transaction: (work, settings) =>
      em.transactional(async (tx) => {
        for (const set of setLocal(settings)) await tx.execute(set);
        return work(emSql(tx));
      }),
    afterCommit: (callback) => afterCommit(em, callback),
    origin: em.config,
  };
}

/** A value as `pg` would bind it: arrays as array literals, objects as JSON, dates in ISO-8601. */
function bindValue(value: unknown): unknown {
  if (value === null || value === undefined) return null;
  if (value instanceof Date) return value.toISOString();
  if (value instanceof TextArray) return bindValue(value.items);
  if (Array.isArray(value)) {
    const items = value.map((item) =>
      item === null || item === undefined
        ? 'NULL'
        : `"${String(bindValue(item)).replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`,
    );
    return `{${items.join(',')}}`;
  }
  if (typeof value === 'object') return JSON.stringify(value);
  return value;
}

/**
 * The service's `Sql`: prepared statements on the ORM's own pool (they share its connections and
 * their budget), unnamed behind a transaction pooler. The embedded database (PGlite) serves every
 * connection from one session and interleaves their protocol messages one by one outside a
 * transaction, so an extended-protocol exchange (parse, bind, execute) of one connection can run
 * on another's statement or portal there; on it, statements go through the ORM instead, as single
 * simple-protocol messages. `prepared: 'off'` sends them unnamed on any connection (a pooler that
 * does not make up process ids, which {@link behindPooler} cannot see).
 */
export async function openSql(orm: MikroORM, options: { prepared?: 'auto' | 'off' } = {}): Promise<Sql> {
  const [row] = await orm.em.fork().execute<{ version: string }[]>('select version()');
  if (row?.version.includes('PGlite')) return emSql(orm.em.fork());
  const pool: pg.Pool = await orm.em.getConnection().getNativeClient();
  const named = options.prepared !== 'off' && !(await behindPooler(pool));
  return poolSql(pool, { origin: orm.config, named });
}

/**
 * Whether the pool's connections reach PostgreSQL through a pooler: a pooler answers the
 * connection's start-up with a process id of its own (PgBouncer makes one up for each client),
 * which is not that of the server session a statement then runs on. A direct connection's are
 * always the same.
 */
export async function behindPooler(pool: pg.Pool): Promise<boolean> {
  const client = await pool.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
    return (client as pg.ClientBase & { processID?: number }).processID !== rows[0]?.pid;
  } finally {
    client.release();
  }
}

const UTC_TIMESTAMP = /^(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?(?:\+00(?::00)?|Z)$/;

/**
 * Rows as the columns an `unnest($1::a[], $2::b[], …)` statement takes: one array per column,
 * `width` of them, so that a batch of rows is one statement with one parameter per column.
 */
export function columnsOf(rows: readonly (readonly unknown[])[], width: number): unknown[][] {
  const columns = Array.from({ length: width }, (): unknown[] => []);
  for (const row of rows) for (let i = 0; i < width; i++) columns[i]!.push(row[i]);
  return columns;
}

/**
 * ISO-8601 in UTC with milliseconds (as `Date.prototype.toISOString` writes it) of a timestamp as
 * the pool returns it, without building a Date when it is already in UTC (the usual case).
 */
export function isoTimestamp(value: string | Date): string {
  if (typeof value !== 'string') return value.toISOString();
  const match = UTC_TIMESTAMP.exec(value);
  if (!match) return toDate(value).toISOString();
  const millis = (match[3] ?? '').padEnd(3, '0').slice(0, 3);
  return `${match[1]}T${match[2]}.${millis}Z`;
}

/**
 * A timestamp as the pool returns it (the ORM's type parsers keep PostgreSQL's text, such as
 * `2026-11-24 09:00:00.123+00`), as a Date.
 */
export function toDate(value: string | Date): Date {
  if (value instanceof Date) return value;
  // ISO-8601 wants the offset as +HH:MM; PostgreSQL writes a whole-hour offset as +HH.
  const date = new Date(/[+-]\d\d$/.test(value) ? `${value}:00` : value);
  if (Number.isNaN(date.getTime())) throw new Error(`not a timestamp: ${value}`);
  return date;
}
