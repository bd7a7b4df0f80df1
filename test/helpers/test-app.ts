import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { createApp } from '../../api/app';
import type { Pool } from 'pg';
import { Ledger } from '../../shared/billing/ledger';
import { connectListings, type Db } from '../../shared/db/client';
import type { AppDeps } from '../../api/app-context';
import { loadConfig, type Config } from '../../shared/config/env';
import { createRedis, deleteKeys } from '../../shared/queue/redis';
import { createLogger } from '../../shared/logger';
import type { Catalog } from '../../shared/catalog/catalog.types';
import { createTestDb, type TestDb } from './test-db';
import { TEST_REDIS_URL } from './test-env';
import { TEST_SECRET } from './fixtures';

export interface TestApp {
  app: ReturnType<typeof createApp>;
  t: TestDb;
  redis: Redis;
  config: Config;
  prefix: string;
  close(): Promise<void>;
}

/**
 * A suite's own lease size, unless the run turns leases off (`npm run test:leases-off`, TEST_LEASES=0): a suite's `env`
 * wins over TEST_LEASES, so one that sets LEASE_REQUESTS for `npm test` spreads this instead, and runs the reserved path
 * in the leases-off leg.
 */
export function leasesUnlessOff(requests: number): Record<string, string> {
  return process.env.TEST_LEASES === undefined ? { LEASE_REQUESTS: String(requests) } : {};
}

/** The API on its own database and its own Redis key prefix, so test files run in parallel. */
export async function createTestApp(
  opts: {
    catalog?: Catalog;
    env?: Record<string, string>;
    deps?: Partial<AppDeps>;
    /** Awaited before each close of the app's ledger commits, given its arguments: a test holds settlements with it. */
    beforeClose?: (...close: Parameters<Ledger['close']>) => Promise<void>;
  } = {},
): Promise<TestApp> {
  const t = await createTestDb();
  const prefix = `{t-${randomBytes(5).toString('hex')}}`;
  // npm start's defaults (leases on); `npm run test:leases-off` (TEST_LEASES=0) runs the money suites with leases off.
  const leases = process.env.TEST_LEASES === undefined ? {} : { LEASE_REQUESTS: process.env.TEST_LEASES };
  const config: Config = { ...loadConfig({ QUEUE_PREFIX: prefix, ...leases, ...opts.env }, []), redisUrl: TEST_REDIS_URL, databaseUrl: t.url };
  const redis = createRedis(TEST_REDIS_URL, { name: 'test-api' });
  const subscriber = createRedis(TEST_REDIS_URL, { name: 'test-api-sub', patient: true });
  // History's listings read through a pool of their own, as in `npm start` (shared/runtime/bootstrap.ts).
  const historyPool = connectListings(t.url, { max: 3 });
  const app = createApp({
    config,
    db: t.db,
    pool: t.pool,
    historyPools: { primary: historyPool },
    redis,
    subscriber,
    catalog: opts.catalog ?? { providers: {}, models: {} },
    logger: createLogger({ silent: !process.env.TEST_LOGS }),
    secret: TEST_SECRET,
    ...(opts.beforeClose && { ledger: new HeldLedger(t.db, opts.beforeClose, t.pool) }),
    ...opts.deps,
  });
  await app.locals.ctx.ready();
  return {
    app,
    t,
    redis,
    config,
    prefix,
    async close() {
      await app.locals.ctx.close();
      await historyPool.end();
      await deleteKeys(redis, `${prefix}*`).catch(() => undefined);
      redis.disconnect();
      subscriber.disconnect();
      await t.drop();
    },
  };
}

/** A ledger whose closes wait for `beforeClose` first (createTestApp's option). */
class HeldLedger extends Ledger {
  constructor(db: Db, private readonly beforeClose: (...close: Parameters<Ledger['close']>) => Promise<void>, pool: Pool) {
    super(db, undefined, { pool });
  }

  override async close(...args: Parameters<Ledger['close']>): ReturnType<Ledger['close']> {
    await this.beforeClose(...args);
    return super.close(...args);
  }
}
