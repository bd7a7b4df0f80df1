import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { createDb, type Db } from '../../shared/db/client';
import { TEMPLATE_DB, TEST_APP_PG_URL, TEST_PG_URL, databaseUrl } from './test-env';

export interface TestDb {
  name: string;
  url: string;
  db: Db;
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
    // CREATE DATABASE ... TEMPLATE needs the template to have no other connections; retry briefly if busy.
    for (let i = 0; ; i++) {
      try {
        await c.query(`CREATE DATABASE "${name}" TEMPLATE "${TEMPLATE_DB}"`);
        return;
      } catch (e) {
        if (i > 20 || !/being accessed/.test((e as Error).message)) throw e;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  });
  const url = databaseUrl(name, TEST_APP_PG_URL);
  const db = createDb(url, { max: 30 });
  return {
    name,
    url,
    db,
    async drop() {
      await db.$disconnect();
      await admin((c) => c.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));
    },
  };
}
