/**
 * PostgreSQL behind PgBouncer in transaction pooling mode (started by test/scale/global-setup.ts). The API,
 * worker and money tests of this suite already run through it; here: a service start whose DATABASE_URL is the
 * PgBouncer migrates over DIRECT_DATABASE_URL (migrations hold a session advisory lock), then works through it.
 */
import { randomBytes } from 'node:crypto';
import { Client } from 'pg';
import { loadConfig } from '../../shared/config/env';
import { createDb } from '../../shared/db/client';
import { resolveServices } from '../../shared/runtime/services';
import { silentLogger } from '../../shared/runtime/process-utils';
import { TEST_APP_PG_URL, TEST_PG_URL, TEST_REDIS_URL, databaseUrl } from '../helpers/test-env';

const viaBouncer = TEST_APP_PG_URL !== TEST_PG_URL;
const describeBouncer = viaBouncer ? describe : describe.skip;

async function admin(sql: string): Promise<void> {
  const c = new Client({ connectionString: TEST_PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

describeBouncer('PgBouncer (transaction pooling)', () => {
  const name = `sy_pgb_${randomBytes(5).toString('hex')}`;
  beforeAll(() => admin(`CREATE DATABASE "${name}"`));
  afterAll(() => admin(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`));

  it('runs the migrations on DIRECT_DATABASE_URL and the service through PgBouncer', async () => {
    const config = loadConfig(
      { DATABASE_URL: databaseUrl(name, TEST_APP_PG_URL), DIRECT_DATABASE_URL: databaseUrl(name), REDIS_URL: TEST_REDIS_URL, SWITCHYARD_HOME: '/tmp/sy-pgb-unused' },
      [],
    );
    expect(config.directDatabaseUrl).toBe(databaseUrl(name));
    const services = await resolveServices(config, silentLogger, { writeRuntimeFile: false });
    try {
      expect(services.databaseUrl).toBe(databaseUrl(name, TEST_APP_PG_URL)); // the service itself uses PgBouncer
      const db = createDb(services.databaseUrl, { max: 4 });
      try {
        // Transactions and parallel queries through the pooler: no session state is relied upon.
        const counts = await Promise.all(Array.from({ length: 12 }, () => db.$transaction(async (tx) => tx.organization.count())));
        expect(counts.every((n) => n === 0)).toBe(true);
      } finally {
        await db.$disconnect();
      }
    } finally {
      await services.stop();
    }
  });
});
