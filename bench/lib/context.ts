import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type pg from 'pg';
import type { Config } from '#src/config.ts';
import type { ServiceChildOptions } from '../children/service.ts';
import { type Child, startChild } from './children.ts';
import type { BenchDatabase } from './db.ts';
import type { Results } from './report.ts';
import type { BenchTenant } from './seed.ts';

/** Sizes and durations of a run; `--quick` scales every scenario down but keeps them all. */
export interface Plan {
  quick: boolean;
  /** Tenants the API load spreads over (one key each). */
  tenants: number;
  /** Tenants with a webhook URL (the webhooks scenario). */
  webhookTenants: number;
  warmupS: number;
  /** Load each server of an API scenario takes once, before its first round (V8's compiler). */
  jitWarmupS: number;
  createS: number;
  create1S: number;
  replayS: number;
  listS: number;
  bareS: number;
  /** Payouts of the one tenant the list scenario pages through. */
  listRows: number;
  instructionRows: number;
  settlementRows: number;
  /** Outflows of the reconciliation scenario's day (its bank side is 100,000 in every run). */
  reconOutflows: number;
  /** Payouts the dispatch scenario sends (fewer than settlement's: dispatch submits one at a time). */
  dispatchRows: number;
  webhookEvents: number;
  /** Upper bound of each worker scenario's wait, after which it reports what it got. */
  workerCapS: number;
  /** Requests per load run at most (the time bound usually ends it first). */
  maxRequests: number;
  /** Items traced per operation when counting round trips. */
  traceItems: number;
}

export function planFor(quick: boolean): Plan {
  return quick
    ? {
        quick,
        tenants: 16,
        webhookTenants: 4,
        warmupS: 2,
        jitWarmupS: 0,
        createS: 4,
        create1S: 2,
        replayS: 2,
        listS: 2,
        bareS: 2,
        listRows: 10_000,
        instructionRows: 1_000,
        settlementRows: 1_000,
        reconOutflows: 10_000,
        dispatchRows: 300,
        webhookEvents: 1_000,
        workerCapS: 60,
        maxRequests: 100_000,
        traceItems: 20,
      }
    : {
        quick,
        tenants: 64,
        webhookTenants: 8,
        warmupS: 3,
        jitWarmupS: 15,
        createS: 20,
        create1S: 10,
        replayS: 10,
        listS: 10,
        bareS: 10,
        listRows: 100_000,
        instructionRows: 50_000,
        settlementRows: 50_000,
        reconOutflows: 100_000,
        dispatchRows: 10_000,
        webhookEvents: 20_000,
        workerCapS: 1_200,
        maxRequests: 500_000,
        traceItems: 100,
      };
}

export interface Secrets {
  encryptionKey: string;
  adminToken: string;
  callbackSecret: string;
}

export function newSecrets(): Secrets {
  return {
    encryptionKey: randomBytes(32).toString('base64'),
    adminToken: `adm_bench_${randomUUID()}`,
    callbackSecret: randomBytes(32).toString('base64url'),
  };
}

/**
 * Configuration every service instance of the benchmark gets. The log level is the one the
 * service ships with (`info`, an access line per request), its stdout a file of the run.
 */
export const BENCH_CONFIG: Partial<Config> = {
  // The per-key limiter would turn the load into 429s: the benchmark measures the service.
  RATE_LIMIT_PER_SECOND: 1_000_000,
  RATE_LIMIT_BURST: 1_000_000,
  // The webhook receiver is on loopback.
  WEBHOOK_ALLOW_PRIVATE_URLS: true,
};

export interface BenchContext {
  plan: Plan;
  db: BenchDatabase;
  /** A plain pool on the bench database for seeds, checks and the plain-SQL baselines. */
  pool: pg.Pool;
  secrets: Secrets;
  sandboxUrl: string;
  tenants: BenchTenant[];
  listTenant: BenchTenant;
  webhookTenants: BenchTenant[];
  results: Results;
  /** Extra arguments for service processes (a CPU profile). */
  serviceExecArgv: string[];
  /** Settings of the measured instances, as environment values (`bench/run.ts --service-config`). */
  serviceConfig?: Record<string, string>;
  /** Where service instances write their logs (removed at the end of the run). */
  logDir: string;
  log(message: string): void;
}

/** Node or V8 flags of the measured service instances: the command line's `--service-flag=<flag>` (repeatable). */
export function serviceFlagsOf(args: readonly string[]): string[] {
  return args.filter((a) => a.startsWith('--service-flag=')).map((a) => a.slice('--service-flag='.length));
}

/**
 * Settings of the measured service instances from the command line's
 * `--service-config=NAME=value` arguments (repeatable), as environment values.
 */
export function serviceConfigOf(args: readonly string[]): Record<string, string> {
  return Object.fromEntries(
    args
      .filter((a) => a.startsWith('--service-config='))
      .map((a) => {
        const [name, ...value] = a.slice('--service-config='.length).split('=');
        return [name!, value.join('=')];
      }),
  );
}

let instances = 0;

/** Starts one service instance (and the given jobs) in its own process; its log goes to `logDir`. */
export function startService(
  ctx: BenchContext,
  options: {
    jobs?: string[];
    config?: Partial<Config>;
    databaseUrl?: string;
    execArgv?: string[];
    readyTimeoutMs?: number;
    /** The service child of another checkout (`bench/service-cpu.ts --against`). */
    file?: string;
  } = {},
): Promise<Child> {
  const child: ServiceChildOptions = {
    databaseUrl: options.databaseUrl ?? ctx.db.url,
    providersUrl: ctx.sandboxUrl,
    jobs: options.jobs ?? [],
    config: { ...BENCH_CONFIG, ...options.config },
    ...(ctx.serviceConfig ? { env: ctx.serviceConfig } : {}),
    secrets: ctx.secrets,
  };
  return startChild('service', child, {
    execArgv: options.execArgv ?? ctx.serviceExecArgv,
    stdoutFile: join(ctx.logDir, `service-${++instances}.log`),
    ...(options.readyTimeoutMs === undefined ? {} : { readyTimeoutMs: options.readyTimeoutMs }),
    ...(options.file === undefined ? {} : { file: options.file }),
  });
}

/** Polls `probe` until it returns true or `capS` passes; returns whether it finished. */
export async function waitFor(probe: () => Promise<boolean>, capS: number, everyMs = 250): Promise<boolean> {
  const deadline = performance.now() + capS * 1000;
  while (performance.now() < deadline) {
    if (await probe()) return true;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return probe();
}
