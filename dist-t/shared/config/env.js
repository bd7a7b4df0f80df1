"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_WORKER_METRICS_PORT = exports.DEFAULT_ROOT_STATE_DIR = void 0;
exports.loadConfig = loadConfig;
exports.embeddedSettings = embeddedSettings;
const node_path_1 = __importDefault(require("node:path"));
const queue_names_1 = require("../queue/queue-names");
exports.DEFAULT_ROOT_STATE_DIR = '/var/lib/switchyard';
exports.DEFAULT_WORKER_METRICS_PORT = 9091;
/** A non-negative integer, or `fallback` when unset or empty. */
function int(env, name, fallback) {
    const value = env[name];
    if (value === undefined || value === '')
        return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n < 0)
        throw new Error(`${name} must be a non-negative integer, got "${value}"`);
    return n;
}
/** A positive integer (a duration, a count), or `fallback` when unset or empty. */
function positive(env, name, fallback) {
    const value = env[name];
    if (value === undefined || value === '')
        return fallback;
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0)
        throw new Error(`${name} must be a positive integer, got "${value}"`);
    return n;
}
function flag(env, name) {
    const value = env[name];
    if (value === undefined || value === '' || value === 'false' || value === '0')
        return false;
    if (value === 'true' || value === '1')
        return true;
    throw new Error(`${name} must be true or false, got "${value}"`);
}
function text(env, name) {
    return env[name] || undefined;
}
/** Parses the environment (default: this process's) and the command line (`--demo`). Never changes either. */
function loadConfig(env = process.env, argv = process.argv) {
    const homeDir = node_path_1.default.resolve(env.SWITCHYARD_HOME ?? '.switchyard');
    const demo = argv.includes('--demo') || flag(env, 'SWITCHYARD_DEMO');
    const concurrency = {};
    for (const q of queue_names_1.QUEUE_NAMES) {
        const name = `WORKER_CONCURRENCY_${q.toUpperCase()}`;
        if (env[name])
            concurrency[q] = positive(env, name, 1);
    }
    return {
        port: int(env, 'PORT', 3000),
        databaseUrl: text(env, 'DATABASE_URL'),
        directDatabaseUrl: text(env, 'DIRECT_DATABASE_URL'),
        redisUrl: text(env, 'REDIS_URL'),
        catalogPath: node_path_1.default.resolve(env.SWITCHYARD_CATALOG ?? (demo ? 'config/catalog.demo.json' : 'config/catalog.json')),
        secret: text(env, 'SWITCHYARD_SECRET'),
        syncWaitMs: int(env, 'SYNC_WAIT_MS', 120_000),
        logLevel: env.LOG_LEVEL ?? 'info',
        maxBodyBytes: int(env, 'MAX_BODY_BYTES', 10 * 1024 * 1024),
        defaultRateLimitPerMinute: int(env, 'RATE_LIMIT_PER_MINUTE', 600),
        metricsToken: text(env, 'METRICS_TOKEN'),
        callbackAllowPrivate: env.CALLBACK_ALLOW_PRIVATE === 'true',
        demo,
        demoProviderPort: int(env, 'DEMO_PROVIDER_PORT', 4010),
        homeDir,
        queuePrefix: env.QUEUE_PREFIX ?? '{switchyard}',
        publicBaseUrl: text(env, 'PUBLIC_BASE_URL'),
        fileUrlTtlSeconds: Math.max(1, int(env, 'FILE_URL_TTL_SECONDS', 3600)),
        clusterChild: env.SWITCHYARD_CLUSTER_CHILD === '1',
        databasePoolSize: positive(env, 'DATABASE_POOL_SIZE', 20),
        databasePoolSizeSet: text(env, 'DATABASE_POOL_SIZE') !== undefined,
        webConcurrency: text(env, 'WEB_CONCURRENCY') === undefined ? null : positive(env, 'WEB_CONCURRENCY', 1),
        shutdownTimeoutMs: positive(env, 'SHUTDOWN_TIMEOUT_MS', 30_000),
        worker: {
            concurrency,
            stalledIntervalMs: positive(env, 'WORKER_STALLED_INTERVAL_MS', 15_000),
            lockDurationMs: positive(env, 'WORKER_LOCK_DURATION_MS', 30_000),
            metricsPort: int(env, 'WORKER_METRICS_PORT', exports.DEFAULT_WORKER_METRICS_PORT),
        },
        reaper: { everyMs: positive(env, 'REAPER_EVERY_MS', 60_000), minAgeMs: positive(env, 'REAPER_MIN_AGE_MS', 120_000) },
        media: {
            pollMs: positive(env, 'MEDIA_POLL_MS', 1000),
            maxPollMs: positive(env, 'MEDIA_POLL_MAX_MS', 10_000),
            maxPollErrors: positive(env, 'MEDIA_MAX_POLL_ERRORS', 5),
            taskTimeoutMs: positive(env, 'MEDIA_TASK_TIMEOUT_MS', 30 * 60_000),
            downloadTimeoutMs: positive(env, 'MEDIA_DOWNLOAD_TIMEOUT_MS', 120_000),
            cancelCheckMs: positive(env, 'MEDIA_CANCEL_CHECK_MS', 1000),
            callbackBackoffMs: env.CALLBACK_BACKOFF_MS ? positive(env, 'CALLBACK_BACKOFF_MS', 1000) : undefined,
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
        providerKeys: Object.freeze({ ...env, ...(demo && !env.DEMO_PROVIDER_KEY ? { DEMO_PROVIDER_KEY: 'demo' } : {}) }),
    };
}
/** SWITCHYARD_PG_BIN, SWITCHYARD_ROOT_STATE_DIR and PATH (default: this process's environment, as it is now). */
function embeddedSettings(env = process.env) {
    return {
        pgBinDir: text(env, 'SWITCHYARD_PG_BIN'),
        rootStateDir: node_path_1.default.resolve(env.SWITCHYARD_ROOT_STATE_DIR || exports.DEFAULT_ROOT_STATE_DIR),
        searchPath: env.PATH,
        childEnv: Object.freeze({ ...env }),
    };
}
