/**
 * DATABASE_READ_URL (spec decisions.md section 9; shared/db/read-routing.ts): history's listings and details and
 * activity read from a real streaming replica (test/scale/helpers/replica.ts: pg_basebackup and a hot standby on
 * another port), a record the replica has not received yet is read from the primary, and a replica that lags or
 * stops costs nothing but freshness: reads fall back to the primary, money (on the primary only) is untouched.
 */
import { Client } from 'pg';
import { connectDb, connectListings, type Db } from '../../shared/db/client';
import { migrate } from '../../shared/db/migrate';
import { Ledger } from '../../shared/billing/ledger';
import { HistoryService, type HistoryListOptions, type HistoryViewer } from '../../shared/services/history.service';
import { ActivityService } from '../../shared/services/activity.service';
import type { Principal } from '../../shared/auth/principal';
import { newId } from '../../shared/ids';
import { money } from '../../shared/money';
import { orgMoney, seedOrg, spend } from '../helpers/fixtures';
import { startReplicaPair, type ReplicaPair } from './helpers/replica';

let pair: ReplicaPair;
let primary: { db: Db; pool: import('pg').Pool };
let replica: Db;
let listings: { primary: import('pg').Pool; replica: import('pg').Pool };
let org: string;
let viewer: HistoryViewer;
const replicaErrors: unknown[] = [];
let history: HistoryService;
let activity: ActivityService;
let owner: Principal;
const page: HistoryListOptions = { page: 1, limit: 100, sortBy: 'createdAt', sortOrder: 'desc' };

async function record(id: string): Promise<void> {
  const c = new Client({ connectionString: pair.primaryUrl('sy') });
  await c.connect();
  try {
    await c.query(
      `INSERT INTO generations (id, organization_id, user_id, model, request_type, api_type, response_mode, status, request, created_at, completed_at)
       VALUES ($1, $2, $3, 'm', 'chat', 'chat_completions', 'sync', 'completed', '{}', now(), now())`,
      [id, org, (viewer as { userId: string }).userId],
    );
  } finally {
    await c.end();
  }
}
const listed = async () => (await history.list(viewer, page)).items.map((i) => i.id);
/** The requests of the organization's activity (every generation here is today's), as `from` reads them. */
const requestsIn = async (from: ActivityService) => (await from.activity(owner, { days: 2 })).reduce((n, i) => n + i.requests, 0);
const requests = () => requestsIn(activity);

beforeAll(async () => {
  pair = await startReplicaPair();
  const admin = new Client({ connectionString: pair.primaryUrl('postgres') });
  await admin.connect();
  await admin.query('CREATE DATABASE sy');
  await admin.end();
  await migrate(pair.primaryUrl('sy'));
  primary = connectDb(pair.primaryUrl('sy'), { max: 8 });
  replica = connectDb(pair.replicaUrl('sy'), { max: 8, timeoutMs: 1000 }).db;
  // History's listings through pools of their own, as the service reads (shared/runtime/bootstrap.ts historyPools).
  listings = { primary: connectListings(pair.primaryUrl('sy'), { max: 3 }), replica: connectListings(pair.replicaUrl('sy'), { max: 3, timeoutMs: 1000 }) };
  const seeded = await seedOrg(primary.db, { balance: '100' });
  org = seeded.organizationId;
  viewer = { kind: 'user', organizationId: org, userId: seeded.ownerUserId, role: 'owner' };
  owner = { kind: 'user', organizationId: org, userId: seeded.ownerUserId, role: 'owner', rateLimitPerMinute: null };
  history = new HistoryService(primary.db, { pool: listings.primary, replica: { db: replica, pool: listings.replica }, onReplicaError: (err) => replicaErrors.push(err) });
  activity = new ActivityService(primary.db, () => new Date(), replica, (err) => replicaErrors.push(err));
}, 120_000);
afterAll(async () => {
  for (const p of [listings?.primary, listings?.replica]) await p?.end().catch(() => undefined);
  await replica?.$disconnect().catch(() => undefined);
  await primary?.db.$disconnect();
  pair?.stop();
});

describe('a streaming replica behind DATABASE_READ_URL', () => {
  it('serves the listings; a record it has not received yet is read from the primary', async () => {
    const first = newId('gen');
    await record(first);
    await pair.caughtUp();
    expect(await listed()).toEqual([first]);
    expect(await requests()).toBe(1);

    // The replica lags: a generation recorded now is not in its listing nor in activity (both came from the
    // replica) ...
    await pair.pauseReplay();
    const fresh = newId('gen');
    await record(fresh);
    expect(await listed()).toEqual([first]);
    expect(await requests()).toBe(1);
    expect(await requestsIn(new ActivityService(primary.db))).toBe(2);
    // ... and its detail, which the replica has not received, comes from the primary.
    expect((await history.get(viewer, fresh)).id).toBe(fresh);
    // A generation that exists nowhere is still 404.
    await expect(history.get(viewer, newId('gen'))).rejects.toMatchObject({ code: 'NOT_FOUND' });
    expect(replicaErrors).toEqual([]);

    await pair.resumeReplay();
    await pair.caughtUp();
    expect(await listed()).toEqual([fresh, first]);
    expect(await requests()).toBe(2);
  });

  it('a replica stopped in the middle of reads: every read answers from the primary, money is untouched', async () => {
    const before = await orgMoney(primary.db, org);
    const ledger = new Ledger(primary.db, () => new Date(), { pool: primary.pool });
    // Listings and settlements at once while the replica stops under them.
    let reading = true;
    const answers: string[][] = [];
    const reader = (async () => {
      while (reading) {
        answers.push(await listed());
        await requests();
      }
    })();
    const spent = (async () => {
      for (let i = 0; i < 5; i++) await spend(ledger, org, newId('gen'), { bound: '1', cost: '0.25' });
    })();
    pair.stopReplica();
    await spent;
    const after = newId('gen');
    await record(after);
    reading = false;
    await reader;
    expect(answers.length).toBeGreaterThan(0);
    // Every read answered; those after the stop from the primary, with what it has.
    expect((await listed())[0]).toBe(after);
    expect((await history.get(viewer, after)).id).toBe(after);
    // Activity too: the stopped replica never saw `after` nor the settled ones; the primary counts them all.
    expect(await requests()).toBe(await requestsIn(new ActivityService(primary.db)));
    expect(await requests()).toBe(3 + 5);
    expect(replicaErrors.length).toBeGreaterThan(0);
    const now = await orgMoney(primary.db, org);
    expect(now.balance.toString()).toBe(before.balance.minus(money('1.25')).toString());
    expect(now.reserved.toString()).toBe(before.reserved.toString());
  });
});
