import { createTestDb, type TestDb } from '../../helpers/test-db';
import { seedOrg } from '../../helpers/fixtures';
import { HistoryPartitions } from '../../../shared/db/partitions';
import { generationById, generationKey } from '../../../shared/db/generation-reads';
import { idTime, newId, randomBase62, timedBase62 } from '../../../shared/ids';

/**
 * generations and ledger_entries in monthly partitions (prisma/migrations/20261204000000_history_partitions,
 * shared/db/partitions.ts): a row finds a place whatever its month, the maintenance job makes months ahead and drops
 * generations' months past retention whole, a generation's id stays unique across months, and a read by id or a
 * listing bounded in time reads only its months (EXPLAIN).
 */
let t: TestDb;
let org: string;
beforeAll(async () => {
  t = await createTestDb();
  org = (await seedOrg(t.db)).organizationId;
});
afterAll(() => t.drop());

const insertGeneration = (id: string, at: Date) =>
  t.pool.query(
    `INSERT INTO generations (id, organization_id, model, request_type, api_type, response_mode, request, created_at)
     VALUES ($1, $2, 'm', 'text', 'chat', 'sync', '{}', $3) ON CONFLICT ON CONSTRAINT generations_pkey DO NOTHING`,
    [id, org, at],
  );
const partitionOf = async (id: string): Promise<string[]> =>
  (await t.pool.query(`SELECT tableoid::regclass::text AS p FROM generations WHERE id = $1`, [id])).rows.map((r: { p: string }) => r.p);
const months = async (table: string): Promise<string[]> =>
  (
    await t.pool.query(
      `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass ORDER BY c.relname`,
      [table],
    )
  ).rows.map((r: { relname: string }) => r.relname);
/** The partitions a statement's plan reads. */
async function planned(sql: string, params: unknown[]): Promise<string[]> {
  const { rows } = await t.pool.query(`EXPLAIN (FORMAT JSON) ${sql}`, params);
  const out = new Set<string>();
  const walk = (n: Record<string, unknown>) => {
    if (typeof n['Relation Name'] === 'string') out.add(n['Relation Name'] as string);
    for (const c of (n.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(c);
  };
  walk(rows[0]['QUERY PLAN'][0].Plan);
  return [...out].sort();
}
/**
 * When the partitions' migration ran: the months it made are counted from then, not from this test's clock (the
 * template may have been migrated before a month turned).
 */
async function migratedAt(): Promise<Date> {
  const { rows } = await t.pool.query(`SELECT started_at FROM "_prisma_migrations" WHERE migration_name = '20261204000000_history_partitions'`);
  return rows[0].started_at;
}
/** The 15th of the migration's month, plus `days`: well inside a month the migration made. */
async function inMigratedMonth(days = 0): Promise<Date> {
  const at = await migratedAt();
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 15 + days));
}
const monthName = (d: Date) => `generations_p${d.getUTCFullYear()}${String(d.getUTCMonth() + 1).padStart(2, '0')}`;

describe('monthly partitions', () => {
  it('the migration made its month and the next two, and a default', async () => {
    const now = await migratedAt();
    const parts = await months('generations');
    expect(parts).toContain('generations_default');
    for (let i = 0; i <= 2; i++) expect(parts).toContain(monthName(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + i, 1))));
    expect(await months('ledger_entries')).toContain('ledger_entries_default');
  });

  it('a row of a month with no partition goes to the default; the maintenance job makes its month and moves it there', async () => {
    const at = new Date('2001-03-15T10:00:00Z');
    const id = newId('gen');
    await insertGeneration(id, at);
    expect(await partitionOf(id)).toEqual(['generations_default']);
    const kept = await new HistoryPartitions(t.db, () => at, { retentionDays: 0, contentRetentionDays: 0 }).keep();
    expect(kept.created).toEqual(expect.arrayContaining(['generations_p200103', 'generations_p200106', 'ledger_entries_p200103']));
    expect(await partitionOf(id)).toEqual(['generations_p200103']);
    // Again: nothing to make.
    expect((await new HistoryPartitions(t.db, () => at, { retentionDays: 0, contentRetentionDays: 0 }).keep()).created).toEqual([]);
  });

  it("an id recorded again later (an open replayed) is not recorded twice, in its month or the next", async () => {
    const id = newId('gen');
    const at = new Date();
    await insertGeneration(id, at);
    await insertGeneration(id, new Date(at.getTime() + 1000));
    await insertGeneration(id, new Date(at.getTime() + 6 * 86_400_000));
    expect(await partitionOf(id)).toHaveLength(1);
  });

  it('a read by id reads the months its id names; an id without its time is still found', async () => {
    expect(idTime(`gen_${timedBase62(1_796_000_000_123)}`)).toEqual(new Date(1_796_000_000_123));
    const at = await inMigratedMonth();
    const id = `gen_${timedBase62(at.getTime())}`;
    await insertGeneration(id, at);
    const key = generationKey(id);
    const parts = await planned(`SELECT * FROM generations WHERE id = $1 AND created_at >= $2 AND created_at <= $3`, [key.id, key.createdAt!.gte, key.createdAt!.lte]);
    expect(parts.length).toBeGreaterThanOrEqual(1);
    expect(parts.length).toBeLessThanOrEqual(2);
    expect(parts).not.toContain('generations_default');
    // Without the bound every month is read.
    expect((await planned(`SELECT * FROM generations WHERE id = $1`, [id])).length).toBeGreaterThan(parts.length + 1);
    expect((await generationById(t.db, id, (where) => t.db.generation.findFirst({ where })))?.id).toBe(id);
    // An id of the old form (random, no time) and a row of a clock far off: found in every month.
    const old = `gen_${randomBase62(24)}`;
    await insertGeneration(old, new Date('2001-03-20T00:00:00Z'));
    expect((await generationById(t.db, old, (where) => t.db.generation.findFirst({ where })))?.id).toBe(old);
    expect(await generationById(t.db, `gen_${randomBase62(24)}`, (where) => t.db.generation.findFirst({ where }))).toBeNull();
  });

  it("a listing bounded in time reads only its months", async () => {
    const from = await inMigratedMonth(-12);
    const before = await inMigratedMonth(5);
    const parts = await planned(
      `SELECT id FROM generations WHERE organization_id = $1 AND created_at >= $2 AND created_at < $3 ORDER BY created_at DESC LIMIT 20`,
      [org, from, before],
    );
    expect(parts).toEqual([monthName(from)]);
  });

  it('retention drops whole months of generations past HISTORY_RETENTION_DAYS; the ledger keeps every month', async () => {
    const old = new Date('2001-03-16T00:00:00Z');
    await t.pool.query(
      `INSERT INTO ledger_entries (organization_id, kind, amount, created_at) VALUES ($1, 'topup', 1, $2)`,
      [org, old],
    );
    const ledgerBefore = (await t.pool.query(`SELECT count(*)::int AS n FROM ledger_entries`)).rows[0].n;
    // 400 days after the end of March 2001: March goes, April (ending later) stays.
    const now = new Date(Date.UTC(2001, 3, 1) + 400 * 86_400_000 + 1000);
    const retired = await new HistoryPartitions(t.db, () => now, { retentionDays: 400, contentRetentionDays: 0 }).retire();
    expect(retired).toEqual(['generations_p200103']);
    expect(await months('generations')).toContain('generations_p200104');
    expect((await t.pool.query(`SELECT count(*)::int AS n FROM generations WHERE created_at < '2001-04-01'`)).rows[0].n).toBe(0);
    expect((await t.pool.query(`SELECT count(*)::int AS n FROM ledger_entries`)).rows[0].n).toBe(ledgerBefore);
    expect(await months('ledger_entries')).toContain('ledger_entries_p200103');
    // A month a run detached and died before dropping: the next run drops it.
    await t.pool.query(`ALTER TABLE generations DETACH PARTITION generations_p200104`);
    const later = new Date(Date.UTC(2001, 4, 1) + 400 * 86_400_000 + 1000);
    expect(await new HistoryPartitions(t.db, () => later, { retentionDays: 400, contentRetentionDays: 0 }).retire()).toEqual(['generations_p200104']);
    expect((await t.pool.query(`SELECT to_regclass('generations_p200104') AS r`)).rows[0].r).toBeNull();
  });
});
