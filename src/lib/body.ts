import type { IncomingMessage } from 'node:http';

/**
 * Reads a request body into one buffer, or null as soon as it grows past `limit` bytes (the
 * request is then destroyed: nothing more is read from a client that ignores the limit).
 */
export async function readBounded(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limit) {
      req.destroy();
      return null;
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}
