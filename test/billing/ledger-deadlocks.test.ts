import { Ledger, type OpenRow } from '../../shared/billing/ledger';
import { HistoryPartitions } from '../../shared/db/partitions';
import { newId } from '../../shared/ids';
import { createTestDb, type TestDb } from '../helpers/test-db';
import { seedKey, seedOrg } from '../helpers/fixtures';
import { waitFor } from '../helpers/until';

/**
 * Money calls never fail for a deadlock. CI once saw a request answer 500 'deadlock detected' from a ledger group commit at a
 * process's start: its first keep-partitions run (shared/db/partitions.ts) attached a month (which locks the default
 * partition whole, then organizations for the month's foreign key) while the first requests settled (organizations
 * first, then every partition of generations). The partition functions now lock in the ledger's order (the migration
 * partition_lock_order), and a money call chosen as a deadlock's victim anyway is run again (Ledger's `sql`).
 */
let t: TestDb;
beforeAll(async () => {
  t = await createTestDb();
});
afterAll(() => t.drop());

const DAY_MS = 86_400_000;
const openRow = (organizationId: string, id: string, apiKeyId?: string): OpenRow => ({
  id,
  organization_id: organizationId,
  api_key_id: apiKeyId,
  bound: '1',
  minimum: '1',
  model: 'm',
  unified_model_id: 'm',
  request_type: 'chat',
  api_type: 'chat_completions',
  response_mode: 'sync',
  request: { input: 'x'.repeat(50) },
});

it('settlements beside the maintenance job making and retiring partitions: every open and close succeeds, the money adds up', async () => {
  const { organizationId } = await seedOrg(t.db, { balance: '100000' });
  // Four processes' ledgers, each with its batch in flight at once.
  const ledgers = Array.from({ length: 4 }, () => new Ledger(t.db, () => new Date(), { pool: t.pool }));
  let ddlDone = false;
  const errors: string[] = [];
  const generation = async (ledger: Ledger) => {
    const id = newId('gen');
    try {
      await ledger.open(openRow(organizationId, id));
      await ledger.close({ id, status: 'completed', cost: '0.5', result: { output: 'y' } });
    } catch (e) {
      errors.push((e as Error).message);
    }
  };
  const traffic = ledgers.map(async (ledger) => {
    let rounds = 0;
    while (!ddlDone || rounds < 20) {
      await Promise.all(Array.from({ length: 8 }, () => generation(ledger)));
      rounds++;
    }
    return rounds * 8;
  });
  const now = Date.now();
  try {
    for (let r = 1; r <= 12; r++) {
      // A first run's work: content days made ahead and retired (CONTENT_RETENTION_DAYS 30, the clock a day on each time)...
      await new HistoryPartitions(t.db, () => new Date(now + r * DAY_MS), { retentionDays: 0, contentRetentionDays: 30 }).keep();
      // ...a month made ahead of both partitioned tables (as MONTHS_AHEAD makes one on a fresh database)...
      for (const table of ['generations', 'ledger_entries']) {
        await t.pool.query(`SELECT sy_partition_ensure($1, now() + make_interval(months => $2::int))`, [table, 3 + r]);
      }
      // ...and a month past HISTORY_RETENTION_DAYS detached and dropped.
      await t.pool.query(`SELECT sy_partition_ensure('generations', $1)`, [new Date(Date.UTC(2001, r, 1))]);
      await new HistoryPartitions(t.db, () => new Date(Date.UTC(2001, r + 1, 2)), { retentionDays: 1, contentRetentionDays: 0 }).retire();
    }
  } finally {
    ddlDone = true;
  }
  const count = (await Promise.all(traffic)).reduce((a, b) => a + b, 0);
  expect(errors).toEqual([]);
  const { rows } = await t.pool.query(`SELECT balance::text, reserved::text, spent::text FROM organizations WHERE id = $1`, [organizationId]);
  expect(rows[0]).toEqual({ balance: (100000 - count * 0.5).toFixed(10), reserved: '0.0000000000', spent: (count * 0.5).toFixed(10) });
}, 120_000);

it("a money call chosen as a deadlock's victim is run again and succeeds, once", async () => {
  const { organizationId, accounts } = await seedOrg(t.db, { balance: '10' });
  const key = await seedKey(accounts, organizationId);
  const ledger = new Ledger(t.db, () => new Date(), { pool: t.pool });
  // Another transaction holds the key's row, then waits for the organization's row, which the open holds by then
  // (organizations before api_keys): a cycle. Its deadlock_timeout is longer than the open's (1 s by default), so the
  // open's backend finds the deadlock and the open is the victim.
  const other = await t.pool.connect();
  try {
    await other.query(`SET deadlock_timeout = '30s'`);
    const otherPid = (await other.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
    await other.query('BEGIN');
    await other.query('SELECT 1 FROM api_keys WHERE id = $1 FOR UPDATE', [key.id]);
    const id = newId('gen');
    const opened = ledger.open(openRow(organizationId, id, key.id));
    await waitFor('the open to wait for the key held', async () =>
      (await t.pool.query(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))`, [otherPid])).rows[0].n > 0,
    );
    const otherDone = other.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [organizationId]);
    // The victim's rollback frees the organization: the other transaction gets it and commits; then the open again.
    await otherDone;
    await other.query('COMMIT');
    await expect(opened).resolves.toMatchObject({ granted: expect.anything() });
    const { rows } = await t.pool.query(`SELECT reserved::text FROM organizations WHERE id = $1`, [organizationId]);
    expect(rows[0].reserved).toBe('1.0000000000');
    expect((await t.pool.query(`SELECT count(*)::int AS n FROM generations WHERE id = $1`, [id])).rows[0].n).toBe(1);
  } finally {
    other.release();
  }
}, 30_000);
