import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Client } from 'pg';
import { migrate } from '../../shared/db/migrate';
import { TEST_PG_URL, databaseUrl } from './test-env';

/** Builds the template database once per run (named after a hash of the migrations, so a change rebuilds it). */
export default async function globalSetup(): Promise<void> {
  const dir = path.resolve(__dirname, '../../prisma/migrations');
  const hash = createHash('sha256');
  for (const name of fs.readdirSync(dir).sort()) {
    const file = path.join(dir, name, 'migration.sql');
    if (fs.existsSync(file)) hash.update(name).update(fs.readFileSync(file));
  }
  const suffix = hash.digest('hex').slice(0, 12);
  process.env.SY_TEMPLATE_SUFFIX = suffix;
  const template = `sy_template_${suffix}`;
  const admin = new Client({ connectionString: TEST_PG_URL });
  await admin.connect();
  try {
    await admin.query('SELECT pg_advisory_lock(4242)');
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [template]);
    if (exists.rowCount === 0) {
      await admin.query(`CREATE DATABASE "${template}_tmp"`);
      await migrate(databaseUrl(`${template}_tmp`));
      await admin.query(`ALTER DATABASE "${template}_tmp" RENAME TO "${template}"`);
    }
  } finally {
    await admin.query('SELECT pg_advisory_unlock(4242)');
    await admin.end();
  }
}
