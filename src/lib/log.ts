import { type Logger, pino } from 'pino';
import { within } from './within.ts';

export type { Logger };

/**
 * Paths pino blanks out wherever they appear in a log line: credentials, secrets and full
 * account numbers never reach a log.
 */
export const REDACT_PATHS = [
  'api_key',
  'apiKey',
  'secret',
  'webhook_secret',
  'signing_secret',
  'admin_token',
  'account_number',
  'accountNumber',
  'destination_account_unique',
  'address',
  'to_address',
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'headers["x-api-key"]',
  'headers.authorization',
  '*.api_key',
  '*.apiKey',
  '*.secret',
  '*.webhook_secret',
  '*.account_number',
  '*.accountNumber',
  '*.destination_account_unique',
  '*.address',
  '*.to_address',
  '*.headers["x-api-key"]',
  '*.headers.authorization',
];

/** What a redacted value is replaced with. */
const CENSOR = '[redacted]';

/** The fields of a flat log line: plain values only, never an object (which could nest a secret). */
export type FlatFields = Record<string, string | number | boolean | null | undefined>;

type FlatLog = (fields: FlatFields, message: string) => void;

/** A logger for lines of flat fields (the access line, a status change), at pino's levels. */
export interface FlatLogger {
  debug: FlatLog;
  info: FlatLog;
  warn: FlatLog;
}

/**
 * `log` for lines whose fields are all plain values: redacted by the top-level paths only (a
 * field named like a secret, `api_key`, is still blanked). The wildcard paths (`*.secret`) can
 * match only inside an object, which a flat line cannot hold, yet pino runs each of them over
 * every field of every line: on an access line that is four fifths of the line's cost.
 */
export function flatLogger(log: Logger): FlatLogger {
  return log.child(
    {},
    { redact: { paths: REDACT_PATHS.filter((p) => !p.startsWith('*.')), censor: CENSOR } },
  );
}

/** A log destination that holds lines until the end of the event loop's turn ({@link turnDestination}). */
export interface TurnDestination extends pino.DestinationStream {
  /** Writes the lines still held, in place. */
  flushSync(): void;
}

/** The turn destinations of this process or thread, flushed when it exits. */
const heldLines = new Set<TurnDestination>();

/**
 * Standard output for log lines, written in place (synchronously) once per turn of the event
 * loop: the lines logged during a turn (every request a turn's I/O completed) are joined and
 * written by one system call, queued with `setImmediate` behind that turn's callbacks, and at
 * exit whatever is left. pino's own stdout stream hands each write to libuv's thread pool and
 * wakes the event loop when it is done (about 30 µs of CPU per request under load, one access
 * line each); a write in place per line costs a system call per line. A process killed outright
 * (SIGKILL, the kernel's OOM killer) loses the lines of the turn it was in; a stdout that stops
 * taking lines (a stalled pipe) stalls the process instead of growing its memory.
 */
export function turnDestination(fd = 1): TurnDestination {
  const out = pino.destination({ dest: fd, sync: true });
  let held = '';
  let queued = false;
  const flushSync = () => {
    queued = false;
    if (held === '') return;
    const text = held;
    held = '';
    out.write(text);
  };
  const destination: TurnDestination = {
    write(line: string) {
      held += line;
      if (!queued) {
        queued = true;
        setImmediate(flushSync);
      }
    },
    flushSync,
    // pino's logger.flush(callback) asks its stream for this.
    flush(done?: (err?: Error) => void) {
      flushSync();
      done?.();
    },
  } as TurnDestination;
  // One exit listener for every destination of the process or thread, added with the first.
  if (heldLines.size === 0)
    process.on('exit', () => {
      for (const d of heldLines) d.flushSync();
    });
  heldLines.add(destination);
  return destination;
}

let timeMs = Number.NaN;
let timeField = '';

/** pino's `isoTime`, made once per millisecond: the lines of one millisecond share it. */
function isoTime(): string {
  const now = Date.now();
  if (now !== timeMs) {
    timeMs = now;
    timeField = `,"time":"${new Date(now).toISOString()}"`;
  }
  return timeField;
}

/**
 * A logger writing JSON lines to `destination`, by default to stdout through a
 * {@link turnDestination}.
 */
export function createLogger(options: {
  level: string;
  name?: string;
  destination?: pino.DestinationStream;
}): Logger {
  return pino(
    {
      level: options.level,
      name: options.name ?? 'payout-service',
      redact: { paths: REDACT_PATHS, censor: CENSOR },
      base: undefined,
      timestamp: isoTime,
    },
    options.destination ?? turnDestination(),
  );
}

/**
 * Resolves once the line just logged, and every line before it, has been written (`ms` at most).
 * An asynchronous destination (a test's, or pino's own stdout stream) has one write in flight at
 * a time, and its flush() answers at once without waiting for that write; at exit, pino then
 * writes what is left beside it, so that a process's last lines could land out of order, the last
 * one first. The service's stdout ({@link turnDestination}) writes what it holds at once, and a
 * synchronous one has nothing waiting. Call it right
 * after a line that was logged: that line's write, or the one it queued behind, is in flight.
 */
export async function written(log: Logger, ms = 2000): Promise<void> {
  const stream = (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] as
    | (NodeJS.EventEmitter & { sync?: boolean; _len?: number })
    | undefined;
  if (stream && heldLines.has(stream as unknown as TurnDestination)) {
    (stream as unknown as TurnDestination).flushSync();
    return;
  }
  // A stream of another kind (a test's), a synchronous one, or nothing waiting: nothing to wait for.
  if (!stream || typeof stream.once !== 'function' || stream.sync !== false || !stream._len) return;
  await within(
    new Promise<void>((resolve) => {
      stream.once('drain', resolve);
      stream.once('error', () => resolve());
    }),
    ms,
  );
}
