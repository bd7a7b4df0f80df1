import { createHash, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';


function migrationsDir(): string {
  // Works from source (shared/db) and from the build (dist/shared/db).
  for (const candidate of [path.resolve(__dirname, '../../prisma/migrations'), path.resolve(__dirname, '../../../prisma/migrations')]) {
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error('prisma/migrations not found');
}

/**
 * Applies prisma/migrations in order, bookkeeping in `_prisma_migrations` exactly as `prisma migrate deploy`
 * does (same table, same checksums), so either tool can take over. We carry our own applier because Prisma 7's
 * schema engine is a native binary fetched from Prisma's CDN at first use, which offline machines cannot reach.
 * An advisory lock makes concurrent starts (several API/worker processes) safe.
 */
export async function migrate(
  databaseUrl: string,
  log: (msg: string) => void = () => {},
  /** Apply only the migrations named before this one (tests of an upgrade: a database as an older release left it). */
  opts: { before?: string } = {},
): Promise<string[]> {
  const dir = migrationsDir();
  const names = fs.readdirSync(dir).filter((n) => fs.existsSync(path.join(dir, n, 'migration.sql'))).sort();
  const client = new Client({ connectionString: databaseUrl });
  await client.connect();
  const applied: string[] = [];
  try {
    await client.query('SELECT pg_advisory_lock(72707369)');
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL, "checksum" VARCHAR(64) NOT NULL, "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL, "logs" TEXT, "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(), "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    const done = new Set(
      (await client.query('SELECT migration_name FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL')).rows.map(
        (r: { migration_name: string }) => r.migration_name,
      ),
    );
    for (const name of names) {
      if (done.has(name)) continue;
      if (opts.before !== undefined && name >= opts.before) break;
      const sql = fs.readFileSync(path.join(dir, name, 'migration.sql'), 'utf8');
      const checksum = createHash('sha256').update(sql).digest('hex');
      await client.query('BEGIN');
      try {
        await client.query(sql);
        await client.query(
          'INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count) VALUES ($1, $2, now(), $3, 1)',
          [randomUUID(), checksum, name],
        );
        await client.query('COMMIT');
      } catch (e) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${name} failed: ${(e as Error).message}`);
      }
      applied.push(name);
      log(`applied migration ${name}`);
    }
  } finally {
    await client.query('SELECT pg_advisory_unlock(72707369)').catch(() => {});
    await client.end();
  }
  return applied;
}
