import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A database created for one run of the suite, on the server of the URL it was given. */
export interface ScratchDatabase {
  name: string;
  url: string;
  /** Drops it, ending its sessions; once, however often it is called. */
  drop(): Promise<void>;
}

/** PostgreSQL truncates longer identifiers (NAMEDATALEN - 1 bytes). */
const MAX_NAME_BYTES = 63;

/**
 * Creates `<database>_test_<random>` on the server `given` points at, so that a run never writes
 * the given database and always starts on an empty one. Resolves to why not (and creates nothing)
 * when the role may not create databases; any other error rejects.
 */
export async function createScratchDatabase(given: string): Promise<ScratchDatabase | { refused: string }> {
  const givenName = decodeURIComponent(new URL(given).pathname.slice(1));
  const suffix = `_test_${randomBytes(4).toString('hex')}`;
  let base = givenName || 'payout';
  while (Buffer.byteLength(base + suffix) > MAX_NAME_BYTES) base = base.slice(0, -1);
  const name = base + suffix;
  const server = await maintenanceUrl(given);
  try {
    await onServer(server, (c) => c.query(`create database ${c.escapeIdentifier(name)}`));
  } catch (e) {
    if ((e as { code?: string }).code === '42501') return { refused: (e as Error).message };
    throw e;
  }
  const url = new URL(given);
  url.pathname = `/${encodeURIComponent(name)}`;
  let dropped: Promise<void> | undefined;
  const drop = () => {
    dropped ??= onServer(server, async (c) => {
      await c.query(`drop database if exists ${c.escapeIdentifier(name)} with (force)`);
    });
    return dropped;
  };
  return { name, url: url.toString(), drop };
}

/** The given database to connect to for `create database`, or `postgres` when it does not exist yet. */
async function maintenanceUrl(given: string): Promise<string> {
  try {
    await onServer(given, async () => {});
    return given;
  } catch (e) {
    if ((e as { code?: string }).code !== '3D000') throw e;
    const url = new URL(given);
    url.pathname = '/postgres';
    return url.toString();
  }
}

async function onServer<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}
