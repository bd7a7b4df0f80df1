"use strict";
var __importDefault = (this && this.__importDefault) || function (mod) {
    return (mod && mod.__esModule) ? mod : { "default": mod };
};
Object.defineProperty(exports, "__esModule", { value: true });
exports.resolveServices = resolveServices;
const node_path_1 = __importDefault(require("node:path"));
const env_1 = require("../config/env");
const migrate_1 = require("../db/migrate");
const embedded_postgres_1 = require("./embedded-postgres");
const embedded_redis_1 = require("./embedded-redis");
const runtime_file_1 = require("./runtime-file");
/**
 * The database and Redis the service uses (decisions.md section 1): DATABASE_URL / REDIS_URL when set, else
 * the embedded PostgreSQL under `<homeDir>/pg` and `redis-server` under `<homeDir>/redis`. Applies the
 * migrations and writes `<homeDir>/runtime.json`.
 *
 * Errors are meant to be printed as one line (`err.message`), e.g. the missing redis-server one, which is
 * raised before anything is started. Call stop() on SIGTERM/SIGINT; if the process dies without it, a
 * watchdog still stops the children (see process-utils `spawnWatchdog`).
 */
async function resolveServices(config, logger, opts = {}) {
    if (!config.redisUrl)
        (0, embedded_redis_1.findRedisServer)(opts.env ? opts.env.PATH : (0, env_1.embeddedSettings)().searchPath); // fail fast, before PostgreSQL spends seconds starting
    const [pg, redis] = await Promise.allSettled([
        config.databaseUrl ? Promise.resolve(null) : (0, embedded_postgres_1.startEmbeddedPostgres)({ dataDir: node_path_1.default.join(config.homeDir, 'pg'), logger }),
        config.redisUrl ? Promise.resolve(null) : (0, embedded_redis_1.startEmbeddedRedis)({ dir: node_path_1.default.join(config.homeDir, 'redis'), logger, env: opts.env }),
    ]);
    const children = [];
    for (const r of [pg, redis])
        if (r.status === 'fulfilled' && r.value)
            children.push(r.value);
    const stopChildren = () => Promise.allSettled(children.map((c) => c.stop())).then(() => undefined);
    const failed = [pg, redis].find((r) => r.status === 'rejected');
    if (failed) {
        await stopChildren();
        throw failed.reason;
    }
    const databaseUrl = config.databaseUrl ?? pg.value.url;
    const redisUrl = config.redisUrl ?? redis.value.url;
    const embedded = { postgres: !config.databaseUrl, redis: !config.redisUrl };
    try {
        if (opts.migrate !== false) {
            // Migrations hold a session advisory lock: straight to PostgreSQL when DATABASE_URL is a PgBouncer.
            const applied = await (0, migrate_1.migrate)((config.databaseUrl && config.directDatabaseUrl) || databaseUrl, (m) => logger.info(m));
            logger.debug(`database schema up to date (${applied.length} migration(s) applied now)`);
        }
        if (opts.writeRuntimeFile !== false) {
            (0, runtime_file_1.writeRuntimeInfo)(config.homeDir, { pid: process.pid, startedAt: new Date().toISOString(), databaseUrl, redisUrl, embedded });
        }
    }
    catch (e) {
        await stopChildren();
        throw e;
    }
    let stopping;
    return {
        databaseUrl,
        redisUrl,
        embedded,
        stop() {
            stopping ??= (async () => {
                if (opts.writeRuntimeFile !== false)
                    (0, runtime_file_1.removeRuntimeInfo)(config.homeDir);
                await stopChildren();
            })();
            return stopping;
        },
    };
}
