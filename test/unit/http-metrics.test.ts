import { expect } from 'chai';
import { AggregatorRegistry, Counter, Histogram, Registry } from 'prom-client';
import { HttpMetrics } from '#src/observability/http-metrics.ts';
import { createMetrics, LATENCY_BUCKETS, renderMetrics } from '#src/observability/metrics.ts';

type Observation = [route: string, method: string, status: number, seconds: number];

/** The two metrics as the access line recorded them before HttpMetrics: prom-client's own, per request. */
function promClientReference() {
  const registry = new Registry();
  const registers = [registry];
  const requests = new Counter({
    name: 'payout_http_requests_total',
    help: 'HTTP requests served, by route template, method and status.',
    labelNames: ['route', 'method', 'status'],
    registers,
  });
  const duration = new Histogram({
    name: 'payout_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by route template, method and status.',
    labelNames: ['route', 'method', 'status'],
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const record = (route: string, method: string, status: number, seconds: number) => {
    const labels = { route, method, status: String(status) };
    requests.inc(labels);
    duration.observe(labels, seconds);
  };
  return { registry, record };
}

/** Both sides' outcome of one observation: nothing, or the error's type and message. */
function outcome(record: () => void): string {
  try {
    record();
    return 'ok';
  } catch (err) {
    return `${(err as Error).constructor.name}: ${(err as Error).message}`;
  }
}

/** A fixed pseudo-random sequence (a linear congruential generator), the same at every run. */
function sequence(seed: number) {
  let x = seed;
  return (n: number) => {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    return Math.floor(x / 2 ** 15) % n; // the high bits: the low ones repeat with a short period
  };
}

const ROUTES = ['/v1/payouts', '/v1/payouts/:id', '/trpc/admin.tenant.list', 'unmatched', '/metrics'];
const METHODS = ['GET', 'POST', 'PUT', 'HEAD'];
const STATUSES = [200, 201, 400, 404, 500];
/** Every bound, between and beyond them, zero either sign, negative, and sums that round. */
const SECONDS = [
  ...LATENCY_BUCKETS,
  ...LATENCY_BUCKETS.map((b) => b * 0.999),
  ...LATENCY_BUCKETS.map((b) => b * 1.001),
  0,
  -0,
  -0.001,
  0.1 + 0.2,
  1e-9,
  10.5,
  123.456,
  0.0034,
  0.0007,
];

function observations(seed: number, n: number): Observation[] {
  const next = sequence(seed);
  return Array.from({ length: n }, () => [
    ROUTES[next(ROUTES.length)]!,
    METHODS[next(METHODS.length)]!,
    STATUSES[next(STATUSES.length)]!,
    SECONDS[next(SECONDS.length)]!,
  ]);
}

describe('HttpMetrics: the HTTP metrics recorded per request, handed to prom-client at scrape time', () => {
  it("prints exactly what prom-client's own counter and histogram print after the same requests", async () => {
    const reference = promClientReference();
    const registry = new Registry();
    const http = new HttpMetrics({ registry, buckets: LATENCY_BUCKETS });
    // Before any request: the two metrics' headers, no series.
    expect(await registry.metrics()).to.equal(await reference.registry.metrics());
    // Scraped between batches: each scrape must hold every request so far, none twice.
    for (const [seed, n] of [
      [1, 1],
      [2, 50],
      [3, 3000],
      [4, 0],
      [5, 2000],
    ] as const) {
      for (const [route, method, status, seconds] of observations(seed, n)) {
        reference.record(route, method, status, seconds);
        http.record(route, method, status, seconds);
      }
      const text = await registry.metrics();
      expect(text).to.equal(await reference.registry.metrics());
      expect(await registry.getMetricsAsJSON()).to.deep.equal(await reference.registry.getMetricsAsJSON());
    }
    const text = await registry.metrics();
    expect(text).to.include('payout_http_request_duration_seconds_bucket{le="0.002",route="');
    expect(text).to.include('payout_http_request_duration_seconds_bucket{le="+Inf",route="');
    expect(text.split('\n').filter((l) => l.startsWith('payout_http_requests_total{'))).to.have.length.above(
      50,
    );
  });

  it('refuses a non-finite duration as prom-client does, the request still counted, series in the same order', async () => {
    const reference = promClientReference();
    const registry = new Registry();
    const http = new HttpMetrics({ registry, buckets: LATENCY_BUCKETS });
    const sequenceWithBadValues: Observation[] = [
      ['/v1/payouts', 'GET', 200, Number.NaN], // first seen without a duration
      ['/v1/payouts/:id', 'GET', 200, 0.003],
      ['/v1/payouts', 'GET', 200, 0.004],
      ['/v1/payouts', 'POST', 201, Number.POSITIVE_INFINITY],
      ['/v1/payouts', 'POST', 201, Number.NEGATIVE_INFINITY],
      ['/v1/payouts/:id', 'GET', 200, -2],
    ];
    for (const [route, method, status, seconds] of sequenceWithBadValues) {
      const theirs = outcome(() => reference.record(route, method, status, seconds));
      const ours = outcome(() => http.record(route, method, status, seconds));
      expect(ours, `${route} ${seconds}`).to.equal(theirs);
    }
    expect(outcome(() => http.record('/', 'GET', 200, Number.NaN))).to.equal(
      'TypeError: Value is not a valid number: NaN',
    );
    expect(outcome(() => reference.record('/', 'GET', 200, Number.NaN))).to.equal(
      'TypeError: Value is not a valid number: NaN',
    );
    reference.record('/', 'GET', 200, 1);
    http.record('/', 'GET', 200, 1);
    expect(await registry.metrics()).to.equal(await reference.registry.metrics());
  });

  it("sums the same across an instance's threads as prom-client's metrics did (renderMetrics)", async () => {
    const reference = promClientReference();
    const metrics = createMetrics();
    for (const [route, method, status, seconds] of observations(7, 500)) {
      reference.record(route, method, status, seconds);
      metrics.http.record(route, method, status, seconds);
    }
    // A job thread's snapshot: its own (empty) HTTP metrics.
    const thread = await createMetrics().registry.getMetricsAsJSON();
    const ours = await renderMetrics(metrics, [thread]);
    const theirs = await AggregatorRegistry.aggregate([
      await reference.registry.getMetricsAsJSON(),
      thread.filter((m) => m.name.startsWith('payout_http_')),
    ]).metrics();
    const httpPart = (text: string) =>
      text
        .split('\n\n')
        .filter((block) => block.includes('# TYPE payout_http_'))
        .map((block) => block.trim())
        .join('\n\n');
    expect(httpPart(ours)).to.equal(httpPart(theirs));
    expect(httpPart(ours)).to.include('payout_http_requests_total{');
  });

  it('keeps the totals of each instance apart', async () => {
    const a = createMetrics();
    const b = createMetrics();
    a.http.record('/health', 'GET', 200, 0.001);
    a.http.record('/health', 'GET', 200, 0.001);
    b.http.record('/health', 'GET', 200, 0.001);
    const count = async (registry: Registry) =>
      (await registry.getSingleMetric('payout_http_requests_total')!.get()).values[0]?.value;
    expect(await count(a.registry)).to.equal(2);
    expect(await count(b.registry)).to.equal(1);
  });
});
