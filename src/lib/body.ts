import type { IncomingMessage } from 'node:http';

/** How much more of an oversized body is read and thrown away, so that the client gets its 413. */
const DISCARD_LIMIT = 16 * 1024 * 1024;

/**
 * Reads a request body into one buffer, or null as soon as it grows past `limit` bytes. The rest
 * of an oversized body is then read and discarded, not kept: a client still sending it (a chunked
 * upload with no Content-Length) receives the refusal instead of a connection reset. A client that
 * sends more than DISCARD_LIMIT beyond the limit has its connection closed.
 */
export function readBounded(req: IncomingMessage, limit: number): Promise<Buffer | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      req.off('data', onData).off('end', onEnd).off('error', onError);
      chunks.length = 0;
      let discarded = 0;
      req.on('data', (more: Buffer) => {
        discarded += more.length;
        if (discarded > DISCARD_LIMIT) req.destroy();
      });
      req.on('error', () => {});
      resolve(null);
    };
    const onEnd = () => resolve(Buffer.concat(chunks));
    const onError = (err: Error) => reject(err);
    req.on('data', onData).on('end', onEnd).on('error', onError);
  });
}
