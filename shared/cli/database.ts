import path from 'node:path';
import type { Config } from '../config/env';
import { createDb, type Db } from '../db/client';
import { migrate } from '../db/migrate';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../runtime/embedded-postgres';
import type { RuntimeLogger } from '../runtime/process-utils';
import { readRuntimeInfo } from '../runtime/runtime-file';

export type DatabaseSource = 'env' | 'service' | 'embedded';

export interface CliDatabase {
  db: Db;
  url: string;
  source: DatabaseSource;
  close(): Promise<void>;
}

/** A database URL with its password masked, for messages. */
export function safeUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '(invalid URL)';
  }
}

/**
 * The database the CLI works on, migrated to the current schema:
 * 1. DATABASE_URL;
 * 2. else the external database a running service uses (its `<homeDir>/runtime.json`, when that service was
 *    started with its own DATABASE_URL);
 * 3. else the embedded PostgreSQL in `<homeDir>/pg`: the running server (the service's) is reused, found
 *    through its `postmaster.pid`; if none runs, the CLI starts it and stops it again in close(), unless a
 *    service started meanwhile and took it over.
 */
export async function openDatabase(config: Config, logger: RuntimeLogger): Promise<CliDatabase> {
  let url = config.databaseUrl;
  let source: DatabaseSource = 'env';
  let embedded: EmbeddedPostgres | undefined;
  if (!url) {
    const service = readRuntimeInfo(config.homeDir);
    if (service && !service.embedded.postgres) {
      url = service.databaseUrl;
      source = 'service';
    } else {
      embedded = await startEmbeddedPostgres({ dataDir: path.join(config.homeDir, 'pg'), logger, transient: true });
      url = embedded.url;
      source = 'embedded';
    }
  }
  try {
    await migrate((source === 'env' && config.directDatabaseUrl) || url, (m) => logger.info(m));
  } catch (e) {
    await embedded?.stop().catch(() => {});
    throw new Error(`cannot use the database ${safeUrl(url)}: ${describeError(e)}`);
  }
  const db = createDb(url, { max: 2 });
  return {
    db,
    url,
    source,
    async close() {
      await db.$disconnect().catch(() => {});
      await embedded?.stop();
    },
  };
}

/** One readable message for any error (pg connection failures are AggregateErrors with an empty message). */
export function describeError(e: unknown): string {
  if (e instanceof AggregateError && !e.message) return e.errors.map(describeError).join('; ');
  if (e instanceof Error) return e.message || (e as NodeJS.ErrnoException).code || e.name;
  return String(e);
}
