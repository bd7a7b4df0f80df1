import type { Pool } from 'pg';
import { createTestDb, type TestDb } from '../../helpers/test-db';
import { connectListings } from '../../../shared/db/client';
import { seedOrg } from '../../helpers/fixtures';
import { EXACT_COUNT_LIMIT, HistoryService, type HistoryListOptions, type HistoryViewer } from '../../../shared/services/history.service';
import { newId } from '../../../shared/ids';

/**
 * Past EXACT_COUNT_LIMIT matches a listing's total is the planner's estimate, which costs PostgreSQL a planning of the
 * whole listing: one listing's estimate serves its pages and repeats for 30 s (shared/services/history.service.ts
 * ESTIMATE_KEEP_MS), then it is asked again.
 */
let t: TestDb;
let viewer: HistoryViewer;
let organizationId: string;
let clockMs = Date.now();
let history: HistoryService;
let listings: Pool;

/**
 * `n` completed generations of the organization, a second apart back from now; then fresh statistics. Recorded pending
 * and ended by one update, as the service does: the activity totals then add them up once per statement, where an
 * insert of ended rows adds each to the same totals row, row by row (42 s for 24,000 rows at once here).
 */
async function insert(n: number): Promise<void> {
  const prefix = `${newId('gen')}_`;
  await t.pool.query(
    `INSERT INTO generations (id, organization_id, model, request_type, api_type, response_mode, request, status, created_at)
     SELECT $1 || i, $2, 'm', 'chat', 'chat', 'sync', '{}', 'pending', now() - i * interval '1 second'
       FROM generate_series(1, $3::int) i`,
    [prefix, organizationId, n],
  );
  await t.pool.query(`UPDATE generations SET status = 'completed', completed_at = now() WHERE organization_id = $1 AND id LIKE $2 || '%'`, [organizationId, prefix]);
  await t.pool.query('ANALYZE generations');
}

beforeAll(async () => {
  t = await createTestDb();
  const org = await seedOrg(t.db);
  organizationId = org.organizationId;
  viewer = { kind: 'user', organizationId, userId: org.ownerUserId, role: 'owner' };
  listings = connectListings(t.url, { max: 3 });
  history = new HistoryService(t.db, { pool: listings, clock: () => new Date(clockMs) });
  await insert(EXACT_COUNT_LIMIT + 2_000);
}, 60_000);
afterAll(async () => {
  await listings.end();
  await t.drop();
});

const first: HistoryListOptions = { page: 1, limit: 20, sortBy: 'createdAt', sortOrder: 'desc' };

it("a large listing's estimated total stands for its pages for 30 s, then is asked again", async () => {
  const before = await history.list(viewer, first);
  expect(before.totalIsEstimate).toBe(true);
  expect(before.meta.total).toBeGreaterThan(EXACT_COUNT_LIMIT);

  // Three times the rows, and statistics that know it.
  await insert(2 * (EXACT_COUNT_LIMIT + 2_000));
  const second = await history.list(viewer, { ...first, page: 2 });
  expect(second.meta.total).toBe(before.meta.total);
  expect(second.items).toHaveLength(20);

  clockMs += 30_001;
  const later = await history.list(viewer, first);
  expect(later.totalIsEstimate).toBe(true);
  expect(later.meta.total).toBeGreaterThan(2 * before.meta.total);
}, 60_000);

it('a listing with other filters has an estimate of its own', async () => {
  const chats = await history.list(viewer, { ...first, requestType: 'chat' });
  const none = await history.list(viewer, { ...first, requestType: 'image' });
  expect(chats.totalIsEstimate).toBe(true);
  expect(none).toMatchObject({ totalIsEstimate: false, meta: { total: 0 }, items: [] });
});
