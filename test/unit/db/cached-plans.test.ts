import { createTestDb, type TestDb } from '../../helpers/test-db';
import { seedOrg } from '../../helpers/fixtures';
import { connectDb, type Db } from '../../../shared/db/client';
import { HistoryService } from '../../../shared/services/history.service';

/**
 * History's listings are named prepared statements on a connection to PostgreSQL itself (shared/db/client.ts
 * CACHED_PLAN: planned once per connection), and unnamed ones where the URL says `pgbouncer=true` (a transaction
 * pooler that keeps no named statements). Each case uses one connection, so pg_prepared_statements shows its own.
 */
let t: TestDb;
let org: { organizationId: string; ownerUserId: string };
const opened: Db[] = [];
beforeAll(async () => {
  t = await createTestDb();
  org = await seedOrg(t.db, { balance: '100' });
});
afterAll(async () => {
  for (const db of opened) await db.$disconnect();
  await t.drop();
});

/** `through`: the pool under the client (as the service reads), or Prisma's query engine. */
async function listThenPrepared(url: string, through: 'pool' | 'prisma'): Promise<string[]> {
  const { db, pool } = connectDb(url, { max: 1 });
  opened.push(db);
  const owner = { kind: 'user' as const, organizationId: org.organizationId, userId: org.ownerUserId, role: 'owner' as const };
  const history = new HistoryService(db, through === 'pool' ? { pool } : {});
  for (let i = 0; i < 2; i++) await history.list(owner, { page: 1, limit: 20, sortBy: 'createdAt', sortOrder: 'desc' });
  const rows = await db.$queryRaw<Array<{ name: string; statement: string }>>`SELECT name, statement FROM pg_prepared_statements`;
  return rows.map((r) => `${r.name.slice(0, 3)} ${/count\(\*\)/.test(r.statement) ? 'count' : 'page'}`).sort();
}

describe.each(['pool', 'prisma'] as const)('read through %s', (through) => {
  it('a listing is prepared once per connection under a name: its count and its page', async () => {
    expect(await listThenPrepared(t.url, through)).toEqual(['sy_ count', 'sy_ page']);
  });

  it('with pgbouncer=true on the URL nothing is prepared under a name', async () => {
    const url = new URL(t.url);
    url.searchParams.set('pgbouncer', 'true');
    expect(await listThenPrepared(url.toString(), through)).toEqual([]);
  });
});
