import type { Pool } from 'pg';
import { createTestDb, type TestDb } from '../../helpers/test-db';
import { seedOrg } from '../../helpers/fixtures';
import { connectDb, connectListings, type Db } from '../../../shared/db/client';
import { HistoryService } from '../../../shared/services/history.service';

/**
 * History's listings are named prepared statements on a connection to PostgreSQL itself (shared/db/client.ts
 * CACHED_PLAN: planned once per connection), and unnamed ones where the URL says `pgbouncer=true` (a transaction
 * pooler that keeps no named statements). Read through their own pool (connectListings, as the service reads), that
 * plan is generic from the first run; read through Prisma (no pool given), PostgreSQL's own rule stands. Each case
 * uses one connection, so pg_prepared_statements shows its own.
 */
let t: TestDb;
let org: { organizationId: string; ownerUserId: string };
const opened: Array<{ db: Db; pool?: Pool }> = [];
beforeAll(async () => {
  t = await createTestDb();
  org = await seedOrg(t.db, { balance: '100' });
});
afterAll(async () => {
  for (const o of opened) {
    await o.pool?.end();
    await o.db.$disconnect();
  }
  await t.drop();
});

/** Lists twice, then what the listing's connection holds: its named statements and its plan_cache_mode. */
async function listThenPrepared(url: string, through: 'listings' | 'prisma'): Promise<{ prepared: string[]; mode: string }> {
  const db = connectDb(url, { max: 1 }).db;
  const pool = through === 'listings' ? connectListings(url, { max: 1 }) : undefined;
  opened.push({ db, pool });
  const owner = { kind: 'user' as const, organizationId: org.organizationId, userId: org.ownerUserId, role: 'owner' as const };
  const history = new HistoryService(db, { pool });
  for (let i = 0; i < 2; i++) await history.list(owner, { page: 1, limit: 20, sortBy: 'createdAt', sortOrder: 'desc' });
  const read = async <T>(q: string): Promise<T[]> => (pool ? (await pool.query(q)).rows : await db.$queryRawUnsafe<T[]>(q));
  const rows = await read<{ name: string; statement: string }>('SELECT name, statement FROM pg_prepared_statements');
  const [{ plan_cache_mode: mode }] = await read<{ plan_cache_mode: string }>('SHOW plan_cache_mode');
  return { prepared: rows.map((r) => `${r.name.slice(0, 3)} ${/count\(\*\)/.test(r.statement) ? 'count' : 'page'}`).sort(), mode };
}

const pooled = () => {
  const url = new URL(t.url);
  url.searchParams.set('pgbouncer', 'true');
  return url.toString();
};

describe('read through their own pool', () => {
  it('a listing is prepared once per connection under a name, its plan generic from the first run', async () => {
    expect(await listThenPrepared(t.url, 'listings')).toEqual({ prepared: ['sy_ count', 'sy_ page'], mode: 'force_generic_plan' });
  });

  it('with pgbouncer=true on the URL nothing is prepared under a name, nor the session set', async () => {
    expect(await listThenPrepared(pooled(), 'listings')).toEqual({ prepared: [], mode: 'auto' });
  });
});

describe('read through Prisma', () => {
  it('a listing is prepared once per connection under a name', async () => {
    expect(await listThenPrepared(t.url, 'prisma')).toEqual({ prepared: ['sy_ count', 'sy_ page'], mode: 'auto' });
  });

  it('with pgbouncer=true on the URL nothing is prepared under a name', async () => {
    expect(await listThenPrepared(pooled(), 'prisma')).toEqual({ prepared: [], mode: 'auto' });
  });
});
