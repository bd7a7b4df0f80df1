import { createTestDb, type TestDb } from '../../helpers/test-db';
import { seedOrg } from '../../helpers/fixtures';
import { HistoryPartitions, generationMonths } from '../../../shared/db/partitions';
import { HistoryService, type HistoryListOptions, type HistoryViewer } from '../../../shared/services/history.service';
import { Prisma } from '../../../shared/db/generated/client';
import type { Db } from '../../../shared/db/client';
import { newId } from '../../../shared/ids';

/**
 * A history listing without dates reads only the months its page needs (issue 42 item 1): bounded to the span of the
 * monthly partitions (shared/db/partitions.ts generationMonths), its plan has no default partition, so PostgreSQL
 * scans the months in order and stops once the page is full instead of merging a scan of every month (EXPLAIN
 * ANALYZE of the very statement HistoryService runs).
 */
const MONTHS = 5;
const DAY_MS = 86_400_000;
let t: TestDb;
let viewer: HistoryViewer;
/** The pages' statements HistoryService ran, in order. */
const pages: Prisma.Sql[] = [];
let history: HistoryService;
/** HistoryService's clock: moved past the time it trusts a span it read (10 s) when the months change. */
let clockMs = Date.now();
const monthsChanged = () => (clockMs += 11_000);

beforeAll(async () => {
  t = await createTestDb();
  const { organizationId, ownerUserId } = await seedOrg(t.db);
  viewer = { kind: 'user', organizationId, userId: ownerUserId, role: 'owner' };
  const now = Date.now();
  for (let m = 1; m <= MONTHS; m++) {
    await new HistoryPartitions(t.db, () => new Date(now - m * 31 * DAY_MS), { retentionDays: 0, contentRetentionDays: 0 }).keep();
  }
  // 30 generations a month, this month and the five before it.
  for (let m = 0; m <= MONTHS; m++) {
    await t.pool.query(
      `INSERT INTO generations (id, organization_id, model, request_type, api_type, response_mode, request, status, created_at, completed_at)
       SELECT $1 || i, $2, 'm', 'text', 'chat', 'sync', '{}', 'completed', $3::timestamptz - i * interval '1 minute', $3::timestamptz
         FROM generate_series(1, 30) i`,
      [`${newId('gen')}_`, organizationId, new Date(now - m * 31 * DAY_MS)],
    );
  }
  await t.pool.query('ANALYZE generations');
  // The Db HistoryService reads through, noting the statement of each page it reads.
  const db = new Proxy(t.db, {
    get(target, prop) {
      if (prop !== '$queryRaw') return Reflect.get(target, prop, target);
      return (query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]) => {
        const s = query instanceof Prisma.Sql ? query : Prisma.sql(query, ...values);
        if (s.text.includes('LEFT JOIN api_keys')) pages.push(s);
        return target.$queryRaw(s);
      };
    },
  }) as Db;
  history = new HistoryService(db, { clock: () => new Date(clockMs) });
}, 60_000);
afterAll(() => t.drop());

/** Each partition a plan names and whether it was scanned (run at least once). */
async function scanned(s: Prisma.Sql): Promise<{ merged: boolean; parts: Map<string, boolean> }> {
  const { rows } = await t.pool.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${s.text}`, s.values as unknown[]);
  const parts = new Map<string, boolean>();
  let merged = false;
  const walk = (n: Record<string, unknown>) => {
    if (n['Node Type'] === 'Merge Append') merged = true;
    const rel = n['Relation Name'];
    if (typeof rel === 'string' && rel.startsWith('generations_')) parts.set(rel, parts.get(rel) === true || (n['Actual Loops'] as number) > 0);
    for (const c of (n.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(c);
  };
  walk(rows[0]['QUERY PLAN'][0].Plan);
  return { merged, parts };
}
const page = (sortOrder: 'asc' | 'desc'): HistoryListOptions => ({ page: 1, limit: 20, sortBy: 'createdAt', sortOrder });

describe('a history listing without dates', () => {
  it('is bounded to the span of the months, which leaves out the default partition', async () => {
    const span = (await generationMonths(t.db))!;
    const month = (d: Date) => `${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;
    expect(month(span.from)).toBe(month(new Date(Date.now() - MONTHS * 31 * DAY_MS)));
    expect(span.before.getTime()).toBeGreaterThan(Date.now() + 60 * DAY_MS);
  });

  it('newest first scans the months from the newest and stops once the page is full', async () => {
    pages.length = 0;
    const items = (await history.list(viewer, page('desc'))).items;
    expect(items).toHaveLength(20);
    expect(items.every((i) => Date.parse(i.createdAt) > Date.now() - DAY_MS)).toBe(true);
    const { merged, parts } = await scanned(pages[0]);
    expect(merged).toBe(false);
    expect(parts.has('generations_default')).toBe(false);
    const read = [...parts].filter(([, ran]) => ran).map(([p]) => p);
    // This month and the empty ones made ahead of it; none of the months before (the five made above, and the
    // migration's own when the template was migrated in an earlier month).
    expect(read.length).toBeLessThanOrEqual(4);
    const now = new Date();
    const before = [...parts].filter(([p]) => p < `generations_p${now.getUTCFullYear()}${String(now.getUTCMonth() + 1).padStart(2, '0')}`);
    expect(before.length).toBeGreaterThanOrEqual(MONTHS);
    expect(before.filter(([, ran]) => ran)).toEqual([]);
  });

  it('oldest first scans the oldest month only', async () => {
    pages.length = 0;
    const items = (await history.list(viewer, page('asc'))).items;
    expect(items).toHaveLength(20);
    expect(items.every((i) => Date.parse(i.createdAt) < Date.now() - (MONTHS - 1) * 31 * DAY_MS)).toBe(true);
    const { parts } = await scanned(pages[0]);
    expect([...parts].filter(([, ran]) => ran)).toHaveLength(1);
  });

  it('while the default partition holds a row (a clock far off), the listing shows it: no span then', async () => {
    const id = newId('gen');
    await t.pool.query(
      `INSERT INTO generations (id, organization_id, model, request_type, api_type, response_mode, request, status, created_at)
       VALUES ($1, $2, 'm', 'text', 'chat', 'sync', '{}', 'completed', '2031-01-01T00:00:00Z')`,
      [id, viewer.organizationId],
    );
    expect(await generationMonths(t.db)).toBeUndefined();
    monthsChanged();
    expect((await history.list(viewer, page('desc'))).items[0].id).toBe(id);
    await t.pool.query('DELETE FROM generations WHERE id = $1', [id]);
    expect(await generationMonths(t.db)).toBeDefined();
    monthsChanged();
  });

  it('without the span (a gap between months) it still answers, merging every month', async () => {
    await new HistoryPartitions(t.db, () => new Date('2001-03-15T00:00:00Z'), { retentionDays: 0, contentRetentionDays: 0 }).keep();
    expect(await generationMonths(t.db)).toBeUndefined();
    monthsChanged();
    pages.length = 0;
    expect((await history.list(viewer, page('desc'))).items).toHaveLength(20);
    const { merged, parts } = await scanned(pages[0]);
    expect(merged).toBe(true);
    expect(parts.has('generations_default')).toBe(true);
  });
});
