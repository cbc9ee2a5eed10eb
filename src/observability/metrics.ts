import type pg from 'pg';
import {
  AggregatorRegistry,
  Counter,
  collectDefaultMetrics,
  Gauge,
  Histogram,
  type MetricObjectWithValues,
  type MetricValue,
  Registry,
} from 'prom-client';
import { exceptionQueues, type QueueCount } from '#src/compliance/exceptions.ts';
import type { ExceptionQueue } from '#src/compliance/queues.ts';
import { type Sql, statement } from '#src/db/sql.ts';
import { LEDGER_CHECKS, openViolationCounts } from '#src/ledger/checks.ts';
import type { Clock } from '#src/lib/clock.ts';
import { HttpMetrics } from './http-metrics.ts';

/**
 * The service's Prometheus metrics (`GET /metrics`, docs/operations.md lists them). One registry
 * per service instance and per worker thread, never prom-client's global one: tests start several
 * services in one process, and each must count only its own. The request path only bumps
 * counters and histograms (the HTTP ones in totals of their own, `HttpMetrics`, handed to
 * prom-client at scrape time); anything that needs the database (queue depths, the pool) is read
 * when Prometheus scrapes.
 */

/** A metric snapshot as `Registry.getMetricsAsJSON()` gives it: what worker threads send the main thread. */
export type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/** Latency buckets in seconds, from a cached read (a few ms) to a provider's time-out. */
export const LATENCY_BUCKETS = [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface Metrics {
  readonly registry: Registry;
  /**
   * One observation per HTTP request (`payout_http_requests_total` and
   * `payout_http_request_duration_seconds`): `route` is the route's template, never the raw path.
   */
  readonly http: HttpMetrics;
  /** Payout status changes; `from` is `none` for a payout's first status. */
  readonly payoutTransitions: Counter<'from' | 'to'>;
  /** Webhook attempts by outcome: success, failure (a non-2xx answer), error (no answer), abandoned. */
  readonly webhookAttempts: Counter<'outcome'>;
  /** Outbound provider calls (each HTTP attempt) by provider and outcome. */
  readonly providerCalls: Counter<'provider' | 'outcome'>;
  readonly providerDuration: Histogram<'provider' | 'outcome'>;
}

/** The instruments every process and thread of the service records into. */
export function createMetrics(): Metrics {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    http: new HttpMetrics({ registry, buckets: LATENCY_BUCKETS }),
    payoutTransitions: new Counter({
      name: 'payout_transitions_total',
      help: 'Payout status changes, by the status left ("none" for a new payout) and the status entered.',
      labelNames: ['from', 'to'],
      registers,
    }),
    webhookAttempts: new Counter({
      name: 'payout_webhook_attempts_total',
      help: 'Webhook delivery attempts, by outcome: success, failure (non-2xx), error (no answer), abandoned.',
      labelNames: ['outcome'],
      registers,
    }),
    providerCalls: new Counter({
      name: 'payout_provider_calls_total',
      help: 'Outbound provider calls (each HTTP attempt, retries included), by provider and outcome.',
      labelNames: ['provider', 'outcome'],
      registers,
    }),
    providerDuration: new Histogram({
      name: 'payout_provider_call_duration_seconds',
      help: 'Duration of outbound provider calls, by provider and outcome.',
      labelNames: ['provider', 'outcome'],
      buckets: LATENCY_BUCKETS,
      registers,
    }),
  };
}

const dueTasks = statement(
  'metrics_due_tasks',
  `select kind, count(*)::int as n from tasks where done_at is null and due_at <= $1 group by kind`,
);
const unpublishedEvents = statement(
  'metrics_unpublished_events',
  `select count(*)::int as n from outbox_events where published_at is null`,
);
const dueDeliveries = statement(
  'metrics_due_deliveries',
  `select count(*)::int as n from webhook_deliveries where due_at <= $1`,
);

/**
 * What only the thread that answers `/metrics` reports: the queues in the database (each an
 * indexed count, run at scrape time) and Node's process metrics.
 */
export function registerServiceMetrics(
  metrics: Metrics,
  args: { sql: Sql; clock: Clock; overdueHours: Readonly<Record<ExceptionQueue, number>> },
): void {
  const { sql, clock } = args;
  const registers = [metrics.registry];
  // The three exception gauges come from one statement, read once per scrape.
  let queues: { at: number; rows: Promise<QueueCount[]> } | undefined;
  const queueCounts = (): Promise<QueueCount[]> => {
    const now = clock.now();
    if (!queues || Math.abs(now.getTime() - queues.at) > 1000) {
      queues = { at: now.getTime(), rows: exceptionQueues(sql, { now, hours: args.overdueHours }) };
      queues.rows.catch(() => {
        queues = undefined;
      });
    }
    return queues.rows;
  };
  const perQueue = (name: string, help: string, value: (q: QueueCount, now: Date) => number) =>
    new Gauge({
      name,
      help,
      labelNames: ['queue'],
      registers,
      async collect() {
        const rows = await queueCounts();
        const now = clock.now();
        this.reset();
        for (const q of rows) this.set({ queue: q.queue }, value(q, now));
      },
    });
  perQueue('payout_exception_items', 'Objects waiting for a person, by exception queue.', (q) => q.count);
  perQueue(
    'payout_exception_overdue',
    'Objects that have waited longer than their queue’s overdue age (OVERDUE_<QUEUE>_HOURS), by queue.',
    (q) => q.overdue,
  );
  perQueue(
    'payout_exception_oldest_age_seconds',
    'How long the oldest object of each exception queue has waited; 0 when the queue is empty.',
    (q, now) => (q.oldestAt ? Math.max(0, Math.floor((now.getTime() - q.oldestAt.getTime()) / 1000)) : 0),
  );
  collectDefaultMetrics({ register: metrics.registry, prefix: 'payout_' });
  new Gauge({
    name: 'payout_tasks_due',
    help: 'Background tasks due now and not done, by kind.',
    labelNames: ['kind'],
    registers,
    async collect() {
      const rows = await sql.rows<{ kind: string; n: number }>(dueTasks, [clock.now()]);
      this.reset();
      for (const row of rows) this.set({ kind: row.kind }, row.n);
    },
  });
  new Gauge({
    name: 'payout_outbox_unpublished_events',
    help: 'Events written and not yet turned into webhook deliveries.',
    registers,
    async collect() {
      const [row] = await sql.rows<{ n: number }>(unpublishedEvents);
      this.set(row?.n ?? 0);
    },
  });
  new Gauge({
    name: 'payout_ledger_out_of_balance',
    help: 'What the checks of the ledger found out of balance and is still open, by check (should be 0).',
    labelNames: ['check'],
    registers,
    async collect() {
      const counts = await openViolationCounts(sql);
      this.reset();
      for (const check of LEDGER_CHECKS) this.set({ check: check.name }, counts.get(check.name) ?? 0);
    },
  });
  new Gauge({
    name: 'payout_webhook_deliveries_due',
    help: 'Webhook deliveries whose next attempt is due now.',
    registers,
    async collect() {
      const [row] = await sql.rows<{ n: number }>(dueDeliveries, [clock.now()]);
      this.set(row?.n ?? 0);
    },
  });
}

/** A thread's connection pool: in use and waiting (summed over the threads of an instance in `/metrics`). */
export function registerPoolMetrics(metrics: Metrics, pool: pg.Pool): void {
  const registers = [metrics.registry];
  new Gauge({
    name: 'payout_db_pool_connections_in_use',
    help: 'Database connections checked out of the pools of this instance (all its threads).',
    registers,
    collect() {
      this.set(pool.totalCount - pool.idleCount);
    },
  });
  new Gauge({
    name: 'payout_db_pool_waiting',
    help: 'Queries of this instance waiting for a free pool connection.',
    registers,
    collect() {
      this.set(pool.waitingCount);
    },
  });
}

/**
 * The Prometheus text of this instance: its own registry, plus the snapshots its worker threads
 * sent (counters and histograms summed by label; every pool gauge summed across threads).
 */
export async function renderMetrics(metrics: Metrics, threads: readonly MetricsSnapshot[]): Promise<string> {
  if (threads.length === 0) return metrics.registry.metrics();
  // Metrics only this thread has (Node's process metrics) would be dropped where prom-client says
  // not to aggregate them across a cluster: here nothing else reports them.
  const own = (await metrics.registry.getMetricsAsJSON()).map((m) =>
    m.aggregator === 'omit' ? { ...m, aggregator: 'first' as const } : m,
  );
  return AggregatorRegistry.aggregate([own, ...threads]).metrics();
}

/** The main thread's question to a job thread: its metrics, answered with the same id. */
export function isMetricsRequest(message: unknown): message is { type: 'metrics?'; id: number } {
  return (message as { type?: unknown } | null)?.type === 'metrics?';
}

/** A job thread's answer to {@link isMetricsRequest}. */
export function isMetricsAnswer(
  message: unknown,
): message is { type: 'metrics'; id: number; metrics: MetricsSnapshot } {
  return (message as { type?: unknown } | null)?.type === 'metrics';
}

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;
