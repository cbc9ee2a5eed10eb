import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

export interface EmbeddedPostgres {
  /** A postgres:// URL that any client, including worker threads, can connect to. */
  url: string;
  stop(): Promise<void>;
}

/**
 * PostgreSQL embedded in the process (PGlite), served over the wire protocol on a loopback
 * port so that the ordinary driver, the migrator and worker threads all reach it like a server.
 * `dataDir` undefined keeps everything in memory (tests).
 */
export async function startEmbeddedPostgres(options: {
  dataDir?: string;
  maxConnections?: number;
}): Promise<EmbeddedPostgres> {
  let dataDir: string | undefined;
  if (options.dataDir) {
    dataDir = path.resolve(options.dataDir);
    await mkdir(path.dirname(dataDir), { recursive: true });
  }
  const db = await PGlite.create(dataDir ? { dataDir } : {});
  const server = new PGLiteSocketServer({
    db,
    host: '127.0.0.1',
    port: 0,
    maxConnections: options.maxConnections ?? 32,
  });
  await server.start();
  const conn = server.getServerConn();
  return {
    url: `postgres://postgres@${conn}/postgres`,
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
