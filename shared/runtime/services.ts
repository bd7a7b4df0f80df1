import path from 'node:path';
import type { Config } from '../config/env';
import { migrate } from '../db/migrate';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './embedded-postgres';
import { findRedisServer, startEmbeddedRedis, type EmbeddedRedis } from './embedded-redis';
import type { RuntimeLogger } from './process-utils';
import { removeRuntimeInfo, writeRuntimeInfo } from './runtime-file';

export interface Services {
  databaseUrl: string;
  redisUrl: string;
  embedded: { postgres: boolean; redis: boolean };
  /** Stops the embedded children this process is responsible for; safe to call twice. */
  stop(): Promise<void>;
}

export interface ResolveServicesOptions {
  /** Apply prisma/migrations (default true). */
  migrate?: boolean;
  /** Write `<homeDir>/runtime.json` for the CLI (default true). */
  writeRuntimeFile?: boolean;
  /** Environment for the redis-server PATH lookup (default process.env). */
  env?: NodeJS.ProcessEnv;
}

/**
 * The database and Redis the service uses (decisions.md section 1): DATABASE_URL / REDIS_URL when set, else
 * the embedded PostgreSQL under `<homeDir>/pg` and `redis-server` under `<homeDir>/redis`. Applies the
 * migrations and writes `<homeDir>/runtime.json`.
 *
 * Errors are meant to be printed as one line (`err.message`), e.g. the missing redis-server one, which is
 * raised before anything is started. Call stop() on SIGTERM/SIGINT; if the process dies without it, a
 * watchdog still stops the children (see process-utils `spawnWatchdog`).
 */
export async function resolveServices(config: Config, logger: RuntimeLogger, opts: ResolveServicesOptions = {}): Promise<Services> {
  if (!config.redisUrl) findRedisServer(opts.env ?? process.env); // fail fast, before PostgreSQL spends seconds starting

  const [pg, redis] = await Promise.allSettled([
    config.databaseUrl ? Promise.resolve(null) : startEmbeddedPostgres({ dataDir: path.join(config.homeDir, 'pg'), logger }),
    config.redisUrl ? Promise.resolve(null) : startEmbeddedRedis({ dir: path.join(config.homeDir, 'redis'), logger, env: opts.env }),
  ]);
  const children: Array<EmbeddedPostgres | EmbeddedRedis> = [];
  for (const r of [pg, redis]) if (r.status === 'fulfilled' && r.value) children.push(r.value);
  const stopChildren = () => Promise.allSettled(children.map((c) => c.stop())).then(() => undefined);

  const failed = [pg, redis].find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await stopChildren();
    throw failed.reason;
  }
  const databaseUrl = config.databaseUrl ?? (pg as PromiseFulfilledResult<EmbeddedPostgres>).value.url;
  const redisUrl = config.redisUrl ?? (redis as PromiseFulfilledResult<EmbeddedRedis>).value.url;
  const embedded = { postgres: !config.databaseUrl, redis: !config.redisUrl };

  try {
    if (opts.migrate !== false) {
      // Migrations hold a session advisory lock: straight to PostgreSQL when DATABASE_URL is a PgBouncer.
      const applied = await migrate((config.databaseUrl && config.directDatabaseUrl) || databaseUrl, (m) => logger.info(m));
      logger.debug(`database schema up to date (${applied.length} migration(s) applied now)`);
    }
    if (opts.writeRuntimeFile !== false) {
      writeRuntimeInfo(config.homeDir, { pid: process.pid, startedAt: new Date().toISOString(), databaseUrl, redisUrl, embedded });
    }
  } catch (e) {
    await stopChildren();
    throw e;
  }

  let stopping: Promise<void> | undefined;
  return {
    databaseUrl,
    redisUrl,
    embedded,
    stop() {
      stopping ??= (async () => {
        if (opts.writeRuntimeFile !== false) removeRuntimeInfo(config.homeDir);
        await stopChildren();
      })();
      return stopping;
    },
  };
}
