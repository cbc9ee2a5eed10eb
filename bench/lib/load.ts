import autocannon from 'autocannon';

/**
 * HTTP load with autocannon, bounded twice: by time and by a request count, whichever comes
 * first, so a run always ends by itself. Latencies are taken from every response with sub-
 * millisecond precision (autocannon's own histogram rounds to whole milliseconds, too coarse for
 * a 2 ms request).
 */

export interface LoadRequest {
  method: 'GET' | 'POST' | 'PUT';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface LoadOptions {
  url: string;
  connections: number;
  durationS: number;
  /** Stops after this many responses even if time is left. */
  maxRequests: number;
  /** A fixed offered load in requests per second over all connections (default: as fast as possible). */
  overallRate?: number;
  /** Builds each request; called once per request. */
  next: () => LoadRequest;
  /**
   * Ends the run early once this says so; a response that arrives after it did is not counted (a
   * probe of the API while something else runs measures only while that runs).
   */
  until?: () => boolean;
  /**
   * Receives every 2xx latency (ms) as well, so that several runs can be summed up as one sample
   * ({@link latencyStats}).
   */
  samples?: number[];
}

export interface LoadResult {
  requests: number;
  /** Responses per second over the measured time. */
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Responses other than 2xx, by status. */
  non2xx: Record<string, number>;
  /** Transport errors and time-outs. */
  errors: number;
  seconds: number;
}

export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index]!;
}

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const latencies: number[] = [];
  const non2xx: Record<string, number> = {};
  let errors = 0;
  const started = performance.now();
  let stopped = false;
  let finish: (err: Error | null) => void = () => undefined;
  const done = new Promise<void>((resolve, reject) => {
    finish = (err) => (err ? reject(err) : resolve());
  });
  const instance = autocannon(
    {
      url: options.url,
      connections: options.connections,
      duration: options.durationS,
      timeout: 10,
      ...(options.overallRate ? { overallRate: options.overallRate } : {}),
      requests: [
        {
          setupRequest: (request) => {
            const next = options.next();
            return {
              ...request,
              method: next.method,
              path: next.path,
              headers: { ...(next.body ? { 'content-type': 'application/json' } : {}), ...next.headers },
              body: next.body,
            };
          },
        },
      ],
    },
    (err) => finish(err ?? null),
  );
  instance.on('response', (_client, statusCode, _bytes, responseTime) => {
    if (options.until?.()) {
      if (!stopped) {
        stopped = true;
        instance.stop();
      }
      return;
    }
    if (statusCode >= 200 && statusCode < 300) {
      latencies.push(responseTime);
      options.samples?.push(responseTime);
    } else non2xx[statusCode] = (non2xx[statusCode] ?? 0) + 1;
    if (!stopped && latencies.length + errors >= options.maxRequests) {
      stopped = true;
      instance.stop();
    }
  });
  instance.on('reqError', () => {
    errors++;
  });
  await done;
  const seconds = (performance.now() - started) / 1000;
  return {
    ...latencyStats(latencies),
    rps: Math.round(latencies.length / seconds),
    non2xx,
    errors,
    seconds: hundredths(seconds),
  };
}

const hundredths = (n: number) => Math.round(n * 100) / 100;

/** Count and percentiles of latencies (ms), in any order. */
export function latencyStats(
  latencies: readonly number[],
): Pick<LoadResult, 'requests' | 'p50' | 'p90' | 'p99' | 'max'> {
  const sorted = [...latencies].sort((a, b) => a - b);
  return {
    requests: sorted.length,
    p50: hundredths(percentile(sorted, 50)),
    p90: hundredths(percentile(sorted, 90)),
    p99: hundredths(percentile(sorted, 99)),
    max: hundredths(sorted.at(-1) ?? Number.NaN),
  };
}
