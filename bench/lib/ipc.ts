/**
 * The small protocol between the benchmark and its child processes: options in an environment
 * variable, `ready` (with a URL) and `stop` over the IPC channel. A child also stops when the
 * channel closes, so that an interrupted benchmark leaves no process behind.
 */

export const OPTIONS_VARIABLE = 'BENCH_CHILD_OPTIONS';

export interface ReadyMessage {
  type: 'ready';
  url: string;
}

export function readChildOptions<T>(): T {
  const raw = process.env[OPTIONS_VARIABLE];
  if (!raw) throw new Error(`${OPTIONS_VARIABLE} is not set: this file is started by the benchmark`);
  return JSON.parse(raw) as T;
}

export function sendToParent(message: ReadyMessage): void {
  if (!process.send) throw new Error('started without an IPC channel');
  process.send(message);
}

/** Runs `stop` once, on the parent's `stop` message or when the parent goes away, then exits. */
export function onStop(stop: () => Promise<void>): void {
  let stopping = false;
  const run = async () => {
    if (stopping) return;
    stopping = true;
    // Bounded: a stuck close must not keep the benchmark waiting.
    const timer = setTimeout(() => process.exit(1), 15_000);
    timer.unref();
    try {
      await stop();
    } finally {
      process.exit(0);
    }
  };
  process.on('message', (message) => {
    if (message === 'stop') void run();
  });
  process.on('disconnect', () => void run());
  process.on('SIGINT', () => void run());
  process.on('SIGTERM', () => void run());
}
