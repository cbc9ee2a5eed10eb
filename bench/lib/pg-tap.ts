import net from 'node:net';

/**
 * A TCP proxy in front of PostgreSQL that reads the client's side of the wire protocol and
 * records every round trip: a simple Query, or an extended-protocol exchange ended by Sync (with
 * the SQL of its Parse and the parameters of its Bind). Used only to count round trips and list
 * statements per request; timed runs connect to PostgreSQL directly.
 */

export interface RoundTrip {
  /** Which client connection sent it (connections of one pool are told apart). */
  connection: number;
  sql: string;
  params: (string | null)[];
}

export interface PgTap {
  /** The database URL to give clients instead of the real one. */
  url: string;
  trips: RoundTrip[];
  /** Clears what was recorded. */
  reset(): void;
  close(): Promise<void>;
}

const SSL_REQUEST = 80877103;
const GSSENC_REQUEST = 80877104;

export async function startPgTap(targetUrl: string): Promise<PgTap> {
  const target = new URL(targetUrl);
  const trips: RoundTrip[] = [];
  const sockets = new Set<net.Socket>();
  let connections = 0;

  const server = net.createServer((client) => {
    const id = ++connections;
    const upstream = net.connect(Number(target.port || 5432), target.hostname);
    sockets.add(client);
    sockets.add(upstream);
    client.on('close', () => {
      sockets.delete(client);
      upstream.destroy();
    });
    upstream.on('close', () => {
      sockets.delete(upstream);
      client.destroy();
    });
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    upstream.pipe(client);

    let buffer = Buffer.alloc(0);
    let started = false;
    // Named statements are parsed once per connection and then only bound: remember their SQL.
    const prepared = new Map<string, string>();
    let pendingSql = '';
    let pendingParams: (string | null)[] = [];
    client.on('data', (chunk: Buffer) => {
      upstream.write(chunk);
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        if (!started) {
          if (buffer.length < 8) return;
          const length = buffer.readInt32BE(0);
          if (buffer.length < length) return;
          const code = buffer.readInt32BE(4);
          buffer = buffer.subarray(length);
          if (code !== SSL_REQUEST && code !== GSSENC_REQUEST) started = true;
          continue;
        }
        if (buffer.length < 5) return;
        const type = String.fromCharCode(buffer[0]!);
        const length = buffer.readInt32BE(1);
        if (buffer.length < length + 1) return;
        const body = buffer.subarray(5, length + 1);
        buffer = buffer.subarray(length + 1);
        if (type === 'Q') {
          trips.push({ connection: id, sql: cString(body, 0).value, params: [] });
        } else if (type === 'P') {
          const name = cString(body, 0);
          pendingSql = cString(body, name.next).value;
          if (name.value) prepared.set(name.value, pendingSql);
        } else if (type === 'B') {
          const portal = cString(body, 0);
          const statementName = cString(body, portal.next).value;
          if (statementName) pendingSql = prepared.get(statementName) ?? pendingSql;
          pendingParams = bindParams(body);
        } else if (type === 'S') {
          trips.push({ connection: id, sql: pendingSql || '(prepared statement)', params: pendingParams });
          pendingSql = '';
          pendingParams = [];
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(targetUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return {
    url: url.toString(),
    trips,
    reset() {
      trips.length = 0;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function cString(buffer: Buffer, start: number): { value: string; next: number } {
  const end = buffer.indexOf(0, start);
  return { value: buffer.toString('utf8', start, end), next: end + 1 };
}

/** The parameters of a Bind message, as text (the driver sends text unless given a Buffer). */
function bindParams(body: Buffer): (string | null)[] {
  let at = cString(body, cString(body, 0).next).next;
  const formats = body.readInt16BE(at);
  at += 2 + formats * 2;
  const count = body.readInt16BE(at);
  at += 2;
  const params: (string | null)[] = [];
  for (let i = 0; i < count; i++) {
    const length = body.readInt32BE(at);
    at += 4;
    if (length < 0) params.push(null);
    else {
      params.push(body.toString('utf8', at, at + length));
      at += length;
    }
  }
  return params;
}

/** Round trips grouped by statement shape (literals collapsed), most frequent first. */
export function statementSummary(trips: readonly RoundTrip[]): { sql: string; count: number }[] {
  const counts = new Map<string, number>();
  for (const trip of trips) {
    // The ORM inlines values into the SQL: collapse literals so that one statement is one shape.
    const shape = trip.sql
      .replace(/'(?:[^']|'')*'/g, '?')
      .replace(/\b\d+(?:\.\d+)?\b/g, '?')
      .replace(/\(\?(?:, \?)+\)/g, '(?, …)')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 200);
    counts.set(shape, (counts.get(shape) ?? 0) + 1);
  }
  return [...counts].map(([sql, count]) => ({ sql, count })).sort((a, b) => b.count - a.count);
}
