import path from 'node:path';
import { QUEUE_NAMES, type QueueName } from '../queue/queue-names';

/**
 * Everything the service reads from its environment, parsed once (decisions.md section 1). This is the only
 * module that reads `process.env`: every other module receives the values it needs from a `Config` (README
 * "Configuration" lists each variable). A value that does not parse stops the start with a message naming the
 * variable; nothing falls back silently. Start-up never changes the environment or the parsed values.
 */

/** How a process leases reservations (shared/billing/leases.ts, docs/architecture.md "Leases"). */
export interface LeaseSettings {
  /** A lease covers this many requests of the bound that asked for it; 0 turns leases off (LEASE_REQUESTS, 32). */
  requests: number;
  /** A lease is taken only while the caller's room is at least this many leases (LEASE_HEADROOM, 8). */
  headroom: number;
  /** A lease nobody drew from this long is given back (LEASE_IDLE_MS, 1 s). */
  idleMs: number;
  /** How far ahead a lease's expiry is kept: the reaper releases a dead process's leases this long after (LEASE_TTL_MS, 15 s). */
  ttlMs: number;
  /** A lease this old is replaced (or, near a limit, given back): what it holds follows the room (LEASE_MAX_AGE_MS, 10 s). */
  maxAgeMs: number;
}

export const LEASE_DEFAULTS: LeaseSettings = { requests: 32, headroom: 8, idleMs: 1_000, ttlMs: 15_000, maxAgeMs: 10_000 };

export interface Config {
  port: number;
  databaseUrl?: string;
  /**
   * DATABASE_READ_URL: a streaming replica of DATABASE_URL's database; history's listings and details and activity
   * read from it (shared/db/read-routing.ts). Unset: everything reads the primary.
   */
  databaseReadUrl?: string;
  /** READ_REPLICA_TIMEOUT_MS (default 2000): a replica's connection or query taking longer is read from the primary. */
  readReplicaTimeoutMs: number;
  /**
   * DIRECT_DATABASE_URL: PostgreSQL itself, for migrations (they hold a session advisory lock, which a
   * transaction-pooling PgBouncer in DATABASE_URL cannot keep). Defaults to DATABASE_URL.
   */
  directDatabaseUrl?: string;
  /** REDIS_URL: `redis://…` for one server, `redis+cluster://host:port,host:port` for a Redis Cluster. */
  redisUrl?: string;
  catalogPath: string;
  secret?: string;
  syncWaitMs: number;
  logLevel: string;
  maxBodyBytes: number;
  defaultRateLimitPerMinute: number;
  metricsToken?: string;
  callbackAllowPrivate: boolean;
  demo: boolean;
  /** Port of the demo mode's fake providers: DEMO_PROVIDER_PORT, default 4010. */
  demoProviderPort: number;
  /** Working folder for embedded services, the generated secret and local files. */
  homeDir: string;
  /** BullMQ key prefix; hash-tagged so every key of a queue lands on one Redis Cluster slot. */
  queuePrefix: string;
  publicBaseUrl?: string;
  /**
   * Which proxies in front of the API to believe about the client's address (X-Forwarded-For), for the sign-in throttle
   * per address: TRUST_PROXY, Express's `trust proxy` setting. Unset: none (the socket's address). `true`, a number
   * of hops, or a comma-separated list of addresses and subnets (`loopback`, `10.0.0.0/8`, ...).
   */
  trustProxy: boolean | number | string;
  /** Lifetime of signed file URLs (`?exp=&sig=`), seconds: FILE_URL_TTL_SECONDS, default 3600. */
  fileUrlTtlSeconds: number;
  /** A process `npm start` forked (SWITCHYARD_CLUSTER_CHILD=1, set by bin/start.ts): its parent owns the services. */
  clusterChild: boolean;
  /** PostgreSQL connections per process: DATABASE_POOL_SIZE, default 20. */
  databasePoolSize: number;
  /** Whether DATABASE_POOL_SIZE was set (else `npm start` shares 80 connections among its processes). */
  databasePoolSizeSet: boolean;
  /** Processes `npm start` runs: WEB_CONCURRENCY; null means the core count (1 in demo mode). */
  webConcurrency: number | null;
  /** How long a graceful shutdown may take before the process exits anyway: SHUTDOWN_TIMEOUT_MS, default 30000. */
  shutdownTimeoutMs: number;
  worker: WorkerSettings;
  reaper: ReaperSettings;
  /** Monthly partitions of history and the ledger (shared/db/partitions.ts): HISTORY_RETENTION_DAYS. */
  history: HistorySettings;
  /** Reservation leases (shared/billing/leases.ts): LEASE_REQUESTS (0: off), LEASE_HEADROOM, LEASE_IDLE_MS, LEASE_TTL_MS, LEASE_MAX_AGE_MS. */
  leases: LeaseSettings;
  media: MediaSettings;
  /** The Batch API's drivers (api/services/batch-driver.ts) and files: BATCH_LINES_IN_FLIGHT, BATCH_POLL_MS, BATCH_FILE_RETENTION_DAYS. */
  batches: BatchSettings;
  /** S3-compatible file storage when S3_BUCKET is set; else files live under `<homeDir>/files`. */
  s3?: S3Settings;
  /** OpenTelemetry traces over OTLP/HTTP when OTEL_EXPORTER_OTLP_ENDPOINT is set (shared/telemetry); else none, at no cost. */
  tracing?: TracingSettings;
  /**
   * Values looked up by names that only the catalog knows (a provider's `apiKeyEnv`, e.g. OPENAI_API_KEY). In
   * demo mode DEMO_PROVIDER_KEY defaults to `demo` (the demo catalog's providers read their key from it).
   */
  providerKeys: Readonly<Record<string, string | undefined>>;
}

export interface WorkerSettings {
  /** Jobs in flight per worker process and queue: WORKER_CONCURRENCY_<QUEUE>, defaults in the job catalog. */
  concurrency: Partial<Record<QueueName, number>>;
  /** Stalled-job timing (how soon a dead worker's jobs run again): WORKER_STALLED_INTERVAL_MS, WORKER_LOCK_DURATION_MS. */
  stalledIntervalMs: number;
  lockDurationMs: number;
  /**
   * The default share's headroom (workers/services/default-share.ts): slots each worker process keeps per generation
   * queue beyond its concurrency, for organizations holding fewer than their share, as a fraction of that concurrency
   * (at least one slot; 0: none). WORKER_SHARE_HEADROOM, default 0.125.
   */
  shareHeadroom: number;
  /** Port of a worker process's own /metrics: WORKER_METRICS_PORT, default 9091 (0: any free port). */
  metricsPort: number;
}

/** The reaper of generations no job will finish: REAPER_EVERY_MS, REAPER_MIN_AGE_MS. */
export interface ReaperSettings {
  everyMs: number;
  minAgeMs: number;
}

/** docs/architecture.md "Partitions". */
export interface HistorySettings {
  /**
   * Days a generation's record (usage, cost, timings) is kept: the maintenance job drops each month partition once
   * its last day is older (HISTORY_RETENTION_DAYS, default 400; 0 keeps them). Ledger entries are never dropped.
   */
  retentionDays: number;
  /**
   * Days a generation's content (its request and answer: stored responses, previous_response_id, the history
   * detail's answer) is kept: each day of generation_contents is dropped once it is older (CONTENT_RETENTION_DAYS,
   * default 30; 0 keeps it). The record stays.
   */
  contentRetentionDays: number;
}

/** MEDIA_POLL_MS, MEDIA_POLL_MAX_MS, MEDIA_MAX_POLL_ERRORS, MEDIA_TASK_TIMEOUT_MS, MEDIA_DOWNLOAD_TIMEOUT_MS, CALLBACK_BACKOFF_MS. */
export interface MediaSettings {
  /** First wait between two polls of an upstream task; each next wait is 1.5 times longer, up to `maxPollMs`. */
  pollMs: number;
  maxPollMs: number;
  /** Consecutive failed polls before the generation fails. */
  maxPollErrors: number;
  /** A task still running after this long is cancelled upstream and the generation fails. */
  taskTimeoutMs: number;
  downloadTimeoutMs: number;
  /** First callback retry delay (exponential); default the job catalog's. */
  callbackBackoffMs?: number;
}

export interface BatchSettings {
  /** Lines of one batch running at once (more are started as they finish): BATCH_LINES_IN_FLIGHT, default 64. */
  linesInFlight: number;
  /** How often a batch's driver looks at its running lines: BATCH_POLL_MS, default 500. */
  pollMs: number;
  /**
   * Days a batch file is kept after its creation (then the maintenance sweep deletes it; an input not before the
   * batches reading it have ended): BATCH_FILE_RETENTION_DAYS, default 30; 0 keeps them until deleted.
   */
  fileRetentionDays: number;
  /**
   * Provider batch APIs (docs/batches.md): the most lines of one upstream batch (BATCH_UPSTREAM_MAX_LINES, 10,000; also the
   * most parked lines a driver keeps in flight beside `linesInFlight`), how often a worker polls one
   * (BATCH_UPSTREAM_POLL_MS, 15,000; also the longest a driver waits between steps while its batch only waits on
   * providers), and how long parked lines wait for company before their chunk is sent
   * (BATCH_UPSTREAM_GATHER_MS, 2,000). In demo mode 1,000 and 500: the fake providers end a batch in 200 ms.
   */
  upstreamMaxLines: number;
  upstreamPollMs: number;
  upstreamGatherMs: number;
  /** The most bytes of one line, as the route's body (MAX_BODY_BYTES): a longer line answers 413. */
  maxLineBytes: number;
  /**
   * How long a line is tried again after a transient failure of ours (503: PostgreSQL or Redis away), from its first
   * such failure, with back-off: BATCH_LINE_RETRY_MS, default 600,000 (within the batch's completion window).
   */
  lineRetryMs: number;
}

/** S3_BUCKET, S3_REGION (default us-east-1), S3_ENDPOINT, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY, S3_FORCE_PATH_STYLE, S3_PREFIX. */
export interface S3Settings {
  bucket: string;
  region: string;
  endpoint?: string;
  accessKeyId?: string;
  secretAccessKey?: string;
  forcePathStyle: boolean;
  prefix?: string;
}

/**
 * OTEL_EXPORTER_OTLP_ENDPOINT (the collector's base URL: spans go to `<endpoint>/v1/traces`), OTEL_SERVICE_NAME (default
 * `switchyard`), OTEL_RESOURCE_ATTRIBUTES (`key=value,...`, values percent-encoded: the resource's own attributes, e.g.
 * `deployment.environment.name=staging`; default deployment `demo` in demo mode, else `production`).
 */
export interface TracingSettings {
  endpoint: string;
  serviceName: string;
  resourceAttributes: Readonly<Record<string, string>>;
}

/**
 * What the embedded PostgreSQL and Redis need from the environment. Read when they start (`embeddedSettings()`),
 * not kept in Config: the CLI and tests start them without a service configuration.
 */
export interface EmbeddedSettings {
  /** Folder of initdb and postgres: SWITCHYARD_PG_BIN, default the installed platform package's. */
  pgBinDir?: string;
  /** As root: where PostgreSQL's binaries and cluster go when the `postgres` user cannot enter the checkout. */
  rootStateDir: string;
  /** PATH, searched for `redis-server`. */
  searchPath?: string;
  /** The environment embedded children start with (initdb and postgres get LC_ALL=C on top). */
  childEnv: Readonly<Record<string, string | undefined>>;
}

export const DEFAULT_ROOT_STATE_DIR = '/var/lib/switchyard';
export const DEFAULT_WORKER_METRICS_PORT = 9091;

type Env = Readonly<Record<string, string | undefined>>;

/** A non-negative integer, or `fallback` when unset or empty. */
function int(env: Env, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return n;
}

/** A positive integer (a duration, a count), or `fallback` when unset or empty. */
function positive(env: Env, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got "${value}"`);
  return n;
}

/** A number from 0 to 1, or `fallback` when unset or empty. */
function fraction(env: Env, name: string, fallback: number): number {
  const value = env[name];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isFinite(n) || n < 0 || n > 1) throw new Error(`${name} must be a number from 0 to 1, got "${value}"`);
  return n;
}

/** The words every boolean setting takes, in any case; unset or empty is false. */
const FLAG_WORDS: Readonly<Record<string, boolean>> = { true: true, 1: true, yes: true, false: false, 0: false, no: false };

function flag(env: Env, name: string): boolean {
  const value = env[name];
  if (value === undefined || value === '') return false;
  const on = FLAG_WORDS[value.trim().toLowerCase()];
  if (on === undefined) throw new Error(`${name} must be true or false (or 1/0, yes/no), got "${value}"`);
  return on;
}

/** TRUST_PROXY: a boolean word, a number of hops, or Express's list of addresses and subnets. */
function trustProxy(env: Env): boolean | number | string {
  const value = text(env, 'TRUST_PROXY')?.trim();
  if (value === undefined) return false;
  if (FLAG_WORDS[value.toLowerCase()] !== undefined && !/^\d+$/.test(value)) return FLAG_WORDS[value.toLowerCase()];
  if (/^\d+$/.test(value)) return Number(value);
  return value;
}

function text(env: Env, name: string): string | undefined {
  return env[name] || undefined;
}

function tracingSettings(env: Env, demo: boolean): TracingSettings | undefined {
  const endpoint = text(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  if (!endpoint) return undefined;
  if (!/^https?:\/\/[^/]/.test(endpoint)) throw new Error(`OTEL_EXPORTER_OTLP_ENDPOINT must be an http(s) URL, got "${endpoint}"`);
  const resourceAttributes: Record<string, string> = { 'deployment.environment.name': demo ? 'demo' : 'production' };
  for (const pair of (text(env, 'OTEL_RESOURCE_ATTRIBUTES') ?? '').split(',').filter((p) => p.trim())) {
    const at = pair.indexOf('=');
    const key = pair.slice(0, at).trim();
    let value: string | undefined;
    try {
      value = at > 0 ? decodeURIComponent(pair.slice(at + 1).trim()) : undefined;
    } catch {
      value = undefined;
    }
    if (!key || value === undefined) throw new Error(`OTEL_RESOURCE_ATTRIBUTES must be key=value pairs separated by commas, got "${pair}"`);
    resourceAttributes[key] = value;
  }
  return { endpoint: endpoint.replace(/\/+$/, ''), serviceName: text(env, 'OTEL_SERVICE_NAME') ?? 'switchyard', resourceAttributes };
}

/** Parses the environment (default: this process's) and the command line (`--demo`). Never changes either. */
export function loadConfig(env: Env = process.env, argv: string[] = process.argv): Config {
  const homeDir = path.resolve(env.SWITCHYARD_HOME ?? '.switchyard');
  const demo = argv.includes('--demo') || flag(env, 'SWITCHYARD_DEMO');
  const concurrency: Partial<Record<QueueName, number>> = {};
  for (const q of QUEUE_NAMES) {
    const name = `WORKER_CONCURRENCY_${q.toUpperCase()}`;
    if (env[name]) concurrency[q] = positive(env, name, 1);
  }
  const maxBodyBytes = int(env, 'MAX_BODY_BYTES', 10 * 1024 * 1024);
  return {
    port: int(env, 'PORT', 3000),
    databaseUrl: text(env, 'DATABASE_URL'),
    databaseReadUrl: text(env, 'DATABASE_READ_URL'),
    readReplicaTimeoutMs: positive(env, 'READ_REPLICA_TIMEOUT_MS', 2000),
    directDatabaseUrl: text(env, 'DIRECT_DATABASE_URL'),
    redisUrl: text(env, 'REDIS_URL'),
    catalogPath: path.resolve(env.SWITCHYARD_CATALOG ?? (demo ? 'config/catalog.demo.json' : 'config/catalog.json')),
    secret: text(env, 'SWITCHYARD_SECRET'),
    syncWaitMs: int(env, 'SYNC_WAIT_MS', 120_000),
    logLevel: env.LOG_LEVEL ?? 'info',
    maxBodyBytes,
    defaultRateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 600),
    metricsToken: text(env, 'METRICS_TOKEN'),
    callbackAllowPrivate: flag(env, 'CALLBACK_ALLOW_PRIVATE'),
    demo,
    demoProviderPort: int(env, 'DEMO_PROVIDER_PORT', 4010),
    homeDir,
    queuePrefix: env.QUEUE_PREFIX ?? '{switchyard}',
    publicBaseUrl: text(env, 'PUBLIC_BASE_URL'),
    trustProxy: trustProxy(env),
    fileUrlTtlSeconds: Math.max(1, int(env, 'FILE_URL_TTL_SECONDS', 3600)),
    clusterChild: flag(env, 'SWITCHYARD_CLUSTER_CHILD'),
    databasePoolSize: positive(env, 'DATABASE_POOL_SIZE', 20),
    databasePoolSizeSet: text(env, 'DATABASE_POOL_SIZE') !== undefined,
    webConcurrency: text(env, 'WEB_CONCURRENCY') === undefined ? null : positive(env, 'WEB_CONCURRENCY', 1),
    shutdownTimeoutMs: positive(env, 'SHUTDOWN_TIMEOUT_MS', 30_000),
    worker: {
      concurrency,
      stalledIntervalMs: positive(env, 'WORKER_STALLED_INTERVAL_MS', 15_000),
      lockDurationMs: positive(env, 'WORKER_LOCK_DURATION_MS', 30_000),
      shareHeadroom: fraction(env, 'WORKER_SHARE_HEADROOM', 0.125),
      metricsPort: int(env, 'WORKER_METRICS_PORT', DEFAULT_WORKER_METRICS_PORT),
    },
    reaper: { everyMs: positive(env, 'REAPER_EVERY_MS', 60_000), minAgeMs: positive(env, 'REAPER_MIN_AGE_MS', 120_000) },
    history: { retentionDays: int(env, 'HISTORY_RETENTION_DAYS', 400), contentRetentionDays: int(env, 'CONTENT_RETENTION_DAYS', 30) },
    leases: {
      requests: int(env, 'LEASE_REQUESTS', LEASE_DEFAULTS.requests),
      headroom: positive(env, 'LEASE_HEADROOM', LEASE_DEFAULTS.headroom),
      idleMs: positive(env, 'LEASE_IDLE_MS', LEASE_DEFAULTS.idleMs),
      ttlMs: positive(env, 'LEASE_TTL_MS', LEASE_DEFAULTS.ttlMs),
      maxAgeMs: positive(env, 'LEASE_MAX_AGE_MS', LEASE_DEFAULTS.maxAgeMs),
    },
    media: {
      pollMs: positive(env, 'MEDIA_POLL_MS', 1000),
      maxPollMs: positive(env, 'MEDIA_POLL_MAX_MS', 10_000),
      maxPollErrors: positive(env, 'MEDIA_MAX_POLL_ERRORS', 5),
      taskTimeoutMs: positive(env, 'MEDIA_TASK_TIMEOUT_MS', 30 * 60_000),
      downloadTimeoutMs: positive(env, 'MEDIA_DOWNLOAD_TIMEOUT_MS', 120_000),
      callbackBackoffMs: env.CALLBACK_BACKOFF_MS ? positive(env, 'CALLBACK_BACKOFF_MS', 1000) : undefined,
    },
    batches: {
      linesInFlight: positive(env, 'BATCH_LINES_IN_FLIGHT', 64),
      pollMs: positive(env, 'BATCH_POLL_MS', 500),
      fileRetentionDays: int(env, 'BATCH_FILE_RETENTION_DAYS', 30),
      upstreamMaxLines: positive(env, 'BATCH_UPSTREAM_MAX_LINES', 10_000),
      // Demo mode's fake providers end a batch in 200 ms: poll and gather at a pace that answers a small batch in seconds.
      upstreamPollMs: positive(env, 'BATCH_UPSTREAM_POLL_MS', demo ? 1_000 : 15_000),
      upstreamGatherMs: positive(env, 'BATCH_UPSTREAM_GATHER_MS', demo ? 500 : 2_000),
      maxLineBytes: maxBodyBytes,
      lineRetryMs: int(env, 'BATCH_LINE_RETRY_MS', 600_000),
    },
    s3: env.S3_BUCKET
      ? {
          bucket: env.S3_BUCKET,
          region: env.S3_REGION || 'us-east-1',
          endpoint: text(env, 'S3_ENDPOINT'),
          accessKeyId: text(env, 'S3_ACCESS_KEY_ID'),
          secretAccessKey: text(env, 'S3_SECRET_ACCESS_KEY'),
          forcePathStyle: flag(env, 'S3_FORCE_PATH_STYLE'),
          prefix: text(env, 'S3_PREFIX'),
        }
      : undefined,
    tracing: tracingSettings(env, demo),
    providerKeys: Object.freeze({ ...env, ...(demo && !env.DEMO_PROVIDER_KEY ? { DEMO_PROVIDER_KEY: 'demo' } : {}) }),
  };
}

/** SWITCHYARD_PG_BIN, SWITCHYARD_ROOT_STATE_DIR and PATH (default: this process's environment, as it is now). */
export function embeddedSettings(env: Env = process.env): EmbeddedSettings {
  return {
    pgBinDir: text(env, 'SWITCHYARD_PG_BIN'),
    rootStateDir: path.resolve(env.SWITCHYARD_ROOT_STATE_DIR || DEFAULT_ROOT_STATE_DIR),
    searchPath: env.PATH,
    childEnv: Object.freeze({ ...env }),
  };
}
