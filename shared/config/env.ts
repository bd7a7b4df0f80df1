import path from 'node:path';

/** Everything the service reads from its environment, parsed once (decisions.md section 1). */
export interface Config {
  port: number;
  databaseUrl?: string;
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
  /** Working folder for embedded services, the generated secret and local files. */
  homeDir: string;
  /** BullMQ key prefix; hash-tagged so every key of a queue lands on one Redis Cluster slot. */
  queuePrefix: string;
  publicBaseUrl?: string;
  /** Lifetime of signed file URLs (`?exp=&sig=`), seconds: FILE_URL_TTL_SECONDS, default 3600. */
  fileUrlTtlSeconds: number;
}

function int(value: string | undefined, fallback: number, name: string): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a non-negative integer, got "${value}"`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, argv: string[] = process.argv): Config {
  const homeDir = path.resolve(env.SWITCHYARD_HOME ?? '.switchyard');
  const demo = argv.includes('--demo') || env.SWITCHYARD_DEMO === '1' || env.SWITCHYARD_DEMO === 'true';
  return {
    port: int(env.PORT, 3000, 'PORT'),
    databaseUrl: env.DATABASE_URL || undefined,
    directDatabaseUrl: env.DIRECT_DATABASE_URL || undefined,
    redisUrl: env.REDIS_URL || undefined,
    catalogPath: path.resolve(env.SWITCHYARD_CATALOG ?? (demo ? 'config/catalog.demo.json' : 'config/catalog.json')),
    secret: env.SWITCHYARD_SECRET || undefined,
    syncWaitMs: int(env.SYNC_WAIT_MS, 120_000, 'SYNC_WAIT_MS'),
    logLevel: env.LOG_LEVEL ?? 'info',
    maxBodyBytes: int(env.MAX_BODY_BYTES, 10 * 1024 * 1024, 'MAX_BODY_BYTES'),
    defaultRateLimitPerMinute: int(env.RATE_LIMIT_PER_MINUTE, 600, 'RATE_LIMIT_PER_MINUTE'),
    metricsToken: env.METRICS_TOKEN || undefined,
    callbackAllowPrivate: env.CALLBACK_ALLOW_PRIVATE === 'true',
    demo,
    homeDir,
    queuePrefix: env.QUEUE_PREFIX ?? '{switchyard}',
    publicBaseUrl: env.PUBLIC_BASE_URL || undefined,
    fileUrlTtlSeconds: Math.max(1, int(env.FILE_URL_TTL_SECONDS, 3600, 'FILE_URL_TTL_SECONDS')),
  };
}
