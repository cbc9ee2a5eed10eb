import { z } from 'zod';
import { EXCEPTION_QUEUES, type OverdueVariable, overdueVariable, QUEUE_INFO } from './compliance/queues.ts';

const int = (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback);
const flagValue = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const flag = (fallback: boolean) => flagValue.default(fallback);
/** A flag whose default depends on the setup (see {@link setupDefaults}): undefined when unset. */
const setupFlag = flagValue.optional();

/**
 * An http(s) URL that request paths are appended to (the providers' base, the callbacks' base):
 * a query string or a fragment would end up in the middle of every request's URL, so each is
 * refused at start with what is wrong, not later with the HTTP library's message.
 */
const baseUrl = z.string().transform((value, ctx): string => {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    ctx.addIssue({ code: 'custom', message: 'is not a URL' });
    return z.NEVER;
  }
  const problems: string[] = [];
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    problems.push(`must be http or https, not ${url.protocol.slice(0, -1)}`);
  if (url.search) problems.push('must have no query string (a base URL: paths are added after it)');
  if (url.hash) problems.push('must have no fragment (#…)');
  for (const message of problems) ctx.addIssue({ code: 'custom', message });
  return problems.length > 0 ? z.NEVER : value;
});

/** The background jobs, each a worker thread of its own (`src/jobs/registry.ts`). */
export const JOB_NAMES = [
  'instructions',
  'approvals',
  'dispatch',
  'refunds',
  'settlement',
  'webhooks',
  'retention',
  'reconciliation',
  'ledger',
] as const;
export type JobName = (typeof JOB_NAMES)[number];

/** `all`, `none`, or a comma-separated list of job names. */
const jobList = z
  .string()
  .default('all')
  .transform((value, ctx): JobName[] => {
    const v = value.trim();
    if (v === 'all') return [...JOB_NAMES];
    if (v === 'none') return [];
    const names = [...new Set(v.split(',').map((n) => n.trim()))];
    const unknown = names.filter((n) => !(JOB_NAMES as readonly string[]).includes(n));
    if (unknown.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: `unknown job ${unknown.join(', ')}: use all, none, or some of ${JOB_NAMES.join(', ')}`,
      });
      return z.NEVER;
    }
    return names as JobName[];
  });

/**
 * `OVERDUE_<QUEUE>_HOURS` of every exception queue: the hours after which an item of the queue is
 * overdue (whole hours, at least 1), its default declared by the queue (`src/compliance/queues.ts`).
 */
const overdueSettings = Object.fromEntries(
  EXCEPTION_QUEUES.map((q) => [overdueVariable(q), int(QUEUE_INFO[q].overdue.defaultHours, 1)]),
) as Record<OverdueVariable, ReturnType<typeof int>>;

/**
 * Every environment variable the service reads, with its default. Parsed once at start;
 * the README's configuration table mirrors this schema.
 */
export const configSchema = z.object({
  PORT: int(3000),
  /**
   * A port of its own for `GET /metrics` (the same bearer token), besides the service's port.
   * Unset: metrics on the service's port only.
   */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().url().optional(),
  /**
   * A direct connection to the same database, for what a transaction pooler (PgBouncer in
   * `pool_mode=transaction`) in DATABASE_URL cannot carry: the migrations at start. Unset:
   * everything over DATABASE_URL.
   */
  DATABASE_DIRECT_URL: z.string().url().optional(),
  /**
   * A hot-standby replica of the database: the merchants' lists, the console's lists and counts
   * and reconciliation read from it while it keeps up (src/db/replica.ts). Unset: everything on
   * the primary.
   */
  DATABASE_REPLICA_URL: z.string().url().optional(),
  /** How far the replica's replay may be behind before its reads go back to the primary. */
  DATABASE_REPLICA_MAX_LAG_MS: int(5_000, 0),
  DATABASE_POOL_SIZE: int(8, 1),
  /**
   * How the hot path's statements run on PostgreSQL: `auto` prepares each once per connection on
   * a direct connection and sends them unnamed behind a pooler that makes up process ids
   * (PgBouncer); `off` sends them unnamed whatever the connection (a pooler that passes the
   * server's process id on).
   */
  DATABASE_PREPARED_STATEMENTS: z.enum(['auto', 'off']).default('auto'),
  DATA_DIR: z.string().default('./.data'),
  ADMIN_TOKEN: z.string().min(16).optional(),
  ENCRYPTION_KEY: z
    .string()
    .regex(/^[A-Za-z0-9+/]{43}=$/, 'must be 32 bytes, base64-encoded')
    .optional(),
  SANDBOX_PORT: int(3100),
  PROVIDERS_URL: baseUrl.optional(),
  PROVIDER_TIMEOUT_MS: int(5000, 1),
  /** Shared secret that signs provider callbacks (bank credits, processor outcomes). */
  PROVIDER_CALLBACK_SECRET: z.string().min(16).optional(),
  /** Public base URL providers call back; defaults to the service's own address. */
  CALLBACK_BASE_URL: baseUrl.optional(),
  INSTRUCTION_SWEEP_INTERVAL_MS: int(30_000, 1),
  PAYMENT_INSTRUCTION_TTL_MS: int(1_800_000, 1),
  QUOTE_TTL_MS: int(30_000, 1),
  NAME_ENQUIRY_CACHE_TTL_MS: int(300_000, 0),
  /** How long a payout's create waits for the institution's name before answering with the check PENDING. */
  PAYEE_CHECK_WAIT_MS: int(1_500, 0),
  WEBHOOK_TIMEOUT_MS: int(10_000, 1),
  WEBHOOK_BACKOFF_BASE_MS: int(10_000, 1),
  WEBHOOK_ALLOW_PRIVATE_URLS: flag(false),
  /**
   * The contract's local-testing exception: webhooks to `localhost` and `127.0.0.1`, plain http
   * too. Default: on with the sandbox (PROVIDERS_URL unset), off with real providers.
   */
  WEBHOOK_ALLOW_LOCALHOST: setupFlag,
  /** Webhook attempts in flight at once per worker, all receivers together. */
  WEBHOOK_CONCURRENCY: int(32, 1),
  /** Webhook attempts in flight at once to one receiver (scheme, host and port), across workers. */
  WEBHOOK_CONCURRENCY_PER_TARGET: int(4, 1),
  WORKER_POLL_INTERVAL_MS: int(1000, 1),
  /**
   * How often the settlement job reads the bank's statement of credits: the pull that finds every
   * credit whose notification never came, and what lets a bank instruction expire.
   */
  BANK_STATEMENT_INTERVAL_MS: int(60_000, 1),
  /**
   * When (UTC, `HH:MM`) the `reconciliation` job reconciles the day before against the bank's
   * statement, the chains and the processor's settlement report (`docs/reconciliation.md`).
   */
  RECON_RUN_AT: z
    .string()
    .regex(/^([01]\d|2[0-3]):[0-5]\d$/, 'must be a UTC time of day written HH:MM, such as 02:00')
    .default('02:00'),
  /**
   * The background jobs this instance runs. Instances that share a database share the work, so
   * API instances may run none (`none`) and leave it to instances that serve no traffic.
   */
  JOBS: jobList,
  /**
   * The replay window of Idempotency-Keys: a key and its stored response are kept at least this
   * long after the write, then deleted by the `retention` job (the key may then be used anew).
   */
  IDEMPOTENCY_RETENTION_HOURS: int(72, 1),
  /** How long done tasks (background work finished) are kept for inspection before deletion. */
  TASK_RETENTION_HOURS: int(168, 1),
  /**
   * Days an outbox event is kept once its week is over (docs/webhooks.md): a week's partition goes
   * when it is wholly older than this and every event in it was published. Keep it at least as
   * long as the deliveries are kept: a delivery reads its event's payload at every attempt.
   */
  OUTBOX_RETENTION_DAYS: int(30, 1),
  /**
   * Days webhook deliveries and their attempts (the merchant's delivery log) are kept after their
   * event: the `retention` job detaches and drops each week's partitions once the whole week is
   * older than this (docs/scaling.md, "Partitioned tables"). At least 1, at most 3650.
   */
  WEBHOOK_LOG_RETENTION_DAYS: z.coerce.number().int().min(1).max(3650).default(30),
  DISPATCH_MAX_ATTEMPTS: int(3, 1),
  OUTFLOW_QUERY_GRACE_MS: int(30_000, 0),
  REFUND_MAX_ATTEMPTS: int(10, 1),
  SANDBOX_BLOCK_INTERVAL_MS: int(3000, 0),
  SANDBOX_CALLBACK_DELAY_MS: int(500, 0),
  CONFIRMATIONS_TRON: int(19, 1),
  CONFIRMATIONS_BSC: int(15, 1),
  RATE_LIMIT_PER_SECOND: int(50, 1),
  RATE_LIMIT_BURST: int(100, 1),
  /**
   * Four eyes on money moves (inflow attribute and return, payout fail, refund retry and raise):
   * an operator proposes, a second operator with the role approver or admin approves, and only
   * then does the action run. `false` (a deployment with a single operator) runs the action at
   * once and records it as a proposal approved by its proposer.
   */
  FOUR_EYES: flag(true),
  /** How long a proposal waits for a decision before it expires. */
  APPROVAL_TTL_HOURS: int(72, 1),
  ...overdueSettings,
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * Whether `npm start` creates the demo tenant (approved, every scope) and prints its key.
   * Default: on only for the zero-configuration setup (embedded database and sandbox).
   */
  DEMO_TENANT: setupFlag,
});

/** The settings whose default is not a constant but follows from the setup. */
type SetupDependent = 'WEBHOOK_ALLOW_LOCALHOST' | 'DEMO_TENANT';

export type Config = Omit<z.infer<typeof configSchema>, SetupDependent> & Record<SetupDependent, boolean>;

/**
 * Defaults that follow from the setup, so that production configuration never behaves like the
 * demo: with real providers (PROVIDERS_URL) webhooks may not reach localhost, and only the
 * embedded database with the sandbox gets a demo tenant. An explicit value always wins.
 */
function setupDefaults(parsed: z.infer<typeof configSchema>): Config {
  const sandbox = parsed.PROVIDERS_URL === undefined;
  const embedded = parsed.DATABASE_URL === undefined;
  return {
    ...parsed,
    WEBHOOK_ALLOW_LOCALHOST: parsed.WEBHOOK_ALLOW_LOCALHOST ?? sandbox,
    DEMO_TENANT: parsed.DEMO_TENANT ?? (sandbox && embedded),
  };
}

/** Parses the environment once; a bad value stops the process with the variable named. */
export function loadConfig(env: Record<string, string | undefined> = process.env): Config {
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(present);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  // Every attempt and redelivery reads its event's payload from the outbox: a delivery kept
  // longer than its event could never be sent again, and a redelivery of it would wait for ever.
  if (parsed.data.WEBHOOK_LOG_RETENTION_DAYS > parsed.data.OUTBOX_RETENTION_DAYS) {
    throw new Error(
      `Invalid configuration:\n  WEBHOOK_LOG_RETENTION_DAYS: ${parsed.data.WEBHOOK_LOG_RETENTION_DAYS} is longer than OUTBOX_RETENTION_DAYS (${parsed.data.OUTBOX_RETENTION_DAYS}): deliveries may not outlive their events`,
    );
  }
  return setupDefaults(parsed.data);
}
