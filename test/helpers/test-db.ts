import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { connectDb, type Db } from '../../shared/db/client';
import { migrate } from '../../shared/db/migrate';
import type { Pool } from 'pg';
import { TEMPLATE_DB, TEST_APP_PG_URL, TEST_PG_URL, databaseUrl } from './test-env';
import { waitUntil } from './until';

export interface TestDb {
  name: string;
  url: string;
  db: Db;
  /** The pool under `db` (handed to the ledger as in production). */
  pool: Pool;
  drop(): Promise<void>;
}

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: TEST_PG_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** A fresh database of its own for one test file, cloned from the migrated template. */
export async function createTestDb(): Promise<TestDb> {
  const name = `sy_t_${randomBytes(6).toString('hex')}`;
  await admin(async (c) => {
    // CREATE DATABASE ... TEMPLATE needs the template to have no other connections: tried again while it is busy.
    let busy: Error | undefined;
    await waitUntil(async () => {
      try {
        await c.query(`CREATE DATABASE "${name}" TEMPLATE "${TEMPLATE_DB}"`);
        return true;
      } catch (e) {
        if (!/being accessed/.test((e as Error).message)) throw e;
        busy = e as Error;
        return undefined;
      }
    }, 10_000, 100).catch((e: Error) => {
      throw busy && e.message === 'condition not met in time' ? busy : e;
    });
  });
  const url = databaseUrl(name, TEST_APP_PG_URL);
  const { db, pool } = connectDb(url, { max: 30 });
  return {
    name,
    url,
    db,
    pool,
    async drop() {
      await db.$disconnect();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}

/**
 * A database of its own migrated up to, not including, `migration` (an upgrade test fills it as an older release left
 * it, then migrates the rest), with a client on it. `drop` ends the client and drops the database.
 */
export async function createDbBefore(migration: string, prefix: string): Promise<{ url: string; c: Client; drop(): Promise<void> }> {
  const name = `${prefix}${randomBytes(6).toString('hex')}`;
  const url = databaseUrl(name);
  await admin((a) => a.query(`CREATE DATABASE "${name}"`));
  await migrate(url, () => {}, { before: migration });
  const c = new Client({ connectionString: url });
  await c.connect();
  return {
    url,
    c,
    drop: async () => {
      await c.end();
      await admin((a) => a.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}
