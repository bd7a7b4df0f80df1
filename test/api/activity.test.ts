import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { openRow, seedKey, seedOrg } from '../helpers/fixtures';
import { Ledger } from '../../shared/billing/ledger';
import { connectDb } from '../../shared/db/client';
import { money, type Decimal } from '../../shared/money';
import { activityDay, addDays } from '../../shared/billing/periods';

/**
 * GET /v1/activity (decisions.md section 8): items by day x model x endpoint from the totals a trigger keeps as
 * generations end; who sees what; days from 01:00 Moscow time; concurrent settlements into one totals row.
 */
let h: TestApp;
// 10:00 UTC, well inside a Moscow day.
const NOW = new Date('2026-11-20T10:00:00Z');
let org: Awaited<ReturnType<typeof seedOrg>>;
let member: { userId: string; token: string };
let ownerKey: { id: string; key: string };
let memberKey: { id: string; key: string };
let seq = 0;

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0, clock: () => NOW } });
  org = await seedOrg(h.t.db, { balance: '100000' });
  member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'member@activity.test', role: 'member' });
  ownerKey = await seedKey(org.accounts, org.organizationId, { userId: org.ownerUserId, name: 'owner key' });
  memberKey = await seedKey(org.accounts, org.organizationId, { userId: member.userId, name: 'member key' });
});
afterAll(() => h.close());

interface Gen {
  at?: Date;
  apiKeyId?: string | null;
  userId?: string | null;
  model?: string;
  endpoint?: string;
  status?: 'completed' | 'failed' | 'cancelled';
  cost?: string;
  usage?: object;
  routing?: object;
}

/** A generation opened at `at` and ended through the ledger, as the workers end them. */
async function generation(g: Gen, ledger = new Ledger(h.t.db, () => g.at ?? NOW, { pool: h.t.pool })): Promise<string> {
  const id = `gen_act_${++seq}`;
  const opened = await ledger.open({ ...openRow(org.organizationId, id, { apiKeyId: g.apiKeyId ?? null, userId: g.userId ?? null, bound: '10' }), model: g.model ?? 'a/one' });
  expect('granted' in opened).toBe(true);
  const failed = g.status === 'failed';
  const closed = await ledger.close({
    id,
    status: g.status ?? 'completed',
    ...(g.cost !== undefined && { cost: g.cost }),
    model: g.model ?? 'a/one',
    provider: failed ? null : 'prov',
    final_endpoint_slug: failed ? null : (g.endpoint ?? `${g.model ?? 'a/one'}@prov`),
    usage: g.usage ?? { inputTokens: 10, outputTokens: 4, reasoningTokens: 1, cachedTokens: 2 },
    routing: g.routing ?? null,
  });
  expect(closed.applied).toBe(true);
  return id;
}

const get = (auth: string, query = '') => request(h.app).get(`/v1/activity${query}`).set('Authorization', `Bearer ${auth}`);
const total = (items: Array<{ usage: number }>) => items.reduce((s, i) => s.plus(i.usage), money(0));
async function charged(where: string, value: string): Promise<Decimal> {
  const [r] = await h.t.db.$queryRawUnsafe<Array<{ s: string }>>(`SELECT COALESCE(SUM(-amount), 0)::text AS s FROM ledger_entries WHERE kind = 'charge' AND organization_id = $1 AND ${where} = $2`, org.organizationId, value);
  return money(r.s);
}

describe('GET /v1/activity', () => {
  beforeAll(async () => {
    await generation({ apiKeyId: ownerKey.id, userId: org.ownerUserId, cost: '0.25' });
    await generation({ apiKeyId: ownerKey.id, userId: org.ownerUserId, cost: '0.5', model: 'b/two', endpoint: 'b/two@other' });
    await generation({ apiKeyId: memberKey.id, userId: member.userId, cost: '1.125' });
    await generation({ userId: member.userId, cost: '0.0001234567' });
    // A failure is counted (free) under the last endpoint tried.
    await generation({ apiKeyId: ownerKey.id, userId: org.ownerUserId, status: 'failed', routing: { attempts: [{ provider: 'x', endpoint: 'a/one@x' }, { provider: 'y', endpoint: 'a/one@y' }] } });
    await generation({ apiKeyId: memberKey.id, userId: member.userId, status: 'cancelled', cost: '0.01' });
    // Yesterday, and the moments either side of 01:00 Moscow time (22:00 UTC).
    await generation({ at: new Date('2026-11-19T21:59:59.999Z'), apiKeyId: ownerKey.id, userId: org.ownerUserId, cost: '2' });
    await generation({ at: new Date('2026-11-19T22:00:00.000Z'), apiKeyId: ownerKey.id, userId: org.ownerUserId, cost: '3' });
    // Past the 30-day window, inside 90 days.
    await generation({ at: new Date('2026-10-01T10:00:00Z'), apiKeyId: ownerKey.id, userId: org.ownerUserId, cost: '7' });
  });

  it('answers one item per day x model x endpoint, newest day first, as OpenRouter does, in RUB', async () => {
    const res = await get(org.ownerToken);
    expect(res.status).toBe(200);
    expect(res.body.data).toEqual([
      { date: '2026-11-20', model: 'a/one', provider_name: 'prov', endpoint_id: 'a/one@prov', usage: 4.385123, requests: 5, prompt_tokens: 50, completion_tokens: 20, reasoning_tokens: 5, cached_tokens: 10 },
      { date: '2026-11-20', model: 'b/two', provider_name: 'prov', endpoint_id: 'b/two@other', usage: 0.5, requests: 1, prompt_tokens: 10, completion_tokens: 4, reasoning_tokens: 1, cached_tokens: 2 },
      { date: '2026-11-20', model: 'a/one', provider_name: 'y', endpoint_id: 'a/one@y', usage: 0, requests: 1, prompt_tokens: 10, completion_tokens: 4, reasoning_tokens: 1, cached_tokens: 2 },
      { date: '2026-11-19', model: 'a/one', provider_name: 'prov', endpoint_id: 'a/one@prov', usage: 2, requests: 1, prompt_tokens: 10, completion_tokens: 4, reasoning_tokens: 1, cached_tokens: 2 },
    ]);
    // 22:00 UTC is 01:00 in Moscow: the generation of that moment is today's.
    expect(activityDay(new Date('2026-11-19T22:00:00Z'))).toBe('2026-11-20');
  });

  it('days and date choose the window; a date outside it is a 400', async () => {
    expect((await get(org.ownerToken, '?days=90')).body.data.map((i: { date: string }) => i.date)).toContain('2026-10-01');
    expect((await get(org.ownerToken, '?days=1')).body.data.map((i: { date: string }) => i.date)).toEqual(['2026-11-20', '2026-11-20', '2026-11-20']);
    const one = await get(org.ownerToken, '?date=2026-11-19');
    expect(one.body.data).toHaveLength(1);
    expect(one.body.data[0].usage).toBe(2);
    for (const q of ['?date=2026-10-01', '?date=2026-11-21', '?days=0', '?days=91', '?date=2026-02-30', '?date=yesterday', '?other=1']) {
      const res = await get(org.ownerToken, q);
      expect([q, res.status, res.body.error?.metadata?.reason]).toEqual([q, 400, 'validation_failed']);
    }
  });

  it('summed over any period, usage equals the ledger\'s charges, by key and by member', async () => {
    const all = (await get(org.ownerToken, '?days=90')).body.data;
    expect(total(all).toFixed(6)).toBe((await charged('organization_id', org.organizationId)).toFixed(6));
    const byKey = (await get(org.ownerToken, `?days=90&api_key_id=${ownerKey.id}`)).body.data;
    expect(total(byKey).toFixed(6)).toBe((await charged('api_key_id', ownerKey.id)).toFixed(6));
    const byMember = (await get(org.ownerToken, `?days=90&user_id=${member.userId}`)).body.data;
    expect(total(byMember).toFixed(6)).toBe((await charged('user_id', member.userId)).toFixed(6));
    expect(byMember.reduce((n: number, i: { requests: number }) => n + i.requests, 0)).toBe(3);
  });

  it('an API key sees its own activity; a member its own and its keys\'; owner and admin the organization\'s', async () => {
    const byKey = await get(memberKey.key);
    expect(total(byKey.body.data).toNumber()).toBe(1.135);
    expect((await get(memberKey.key, `?api_key_id=${ownerKey.id}`)).status).toBe(403);
    expect((await get(memberKey.key, `?user_id=${org.ownerUserId}`)).status).toBe(403);
    const asMember = await get(member.token);
    // Its own key's and its key-less requests (1.1351234567 RUB, shown to 6 places).
    expect(total(asMember.body.data).toNumber()).toBe(1.135123);
    expect((await get(member.token, `?user_id=${org.ownerUserId}`)).status).toBe(403);
    expect((await get(member.token, `?api_key_id=${ownerKey.id}`)).status).toBe(403);
    expect(total((await get(member.token, `?api_key_id=${memberKey.id}`)).body.data).toNumber()).toBe(1.135);
  });

  it('another organization\'s keys and members are 404, and its activity is never seen', async () => {
    const other = await seedOrg(h.t.db);
    expect((await get(other.ownerToken)).body.data).toEqual([]);
    expect((await get(other.ownerToken, `?api_key_id=${ownerKey.id}`)).status).toBe(404);
    expect((await get(other.ownerToken, `?user_id=${member.userId}`)).status).toBe(404);
  });

  it('reads the totals, never the history: the same answer with the generations gone', async () => {
    const before = (await get(org.ownerToken, '?days=90')).body.data;
    await h.t.db.$executeRaw`ALTER TABLE generations DISABLE TRIGGER generations_activity_update`;
    try {
      await h.t.db.$executeRaw`UPDATE generations SET client_cost = 1000 WHERE organization_id = ${org.organizationId}`;
    } finally {
      await h.t.db.$executeRaw`ALTER TABLE generations ENABLE TRIGGER generations_activity_update`;
    }
    expect((await get(org.ownerToken, '?days=90')).body.data).toEqual(before);
  });
});

describe('a member\'s activity', () => {
  // Its totals by day x model x endpoint, as activity_totals holds them summed over its keys and its key-less requests.
  const overKeys = (userId: string) => h.t.db.$queryRaw<Array<{ usage: string }>>`
    SELECT day::text AS day, model, provider, endpoint, SUM(usage)::text AS usage, SUM(requests)::text AS requests,
           SUM(prompt_tokens)::text AS p, SUM(completion_tokens)::text AS c, SUM(reasoning_tokens)::text AS r, SUM(cached_tokens)::text AS k
      FROM activity_totals WHERE organization_id = ${org.organizationId} AND user_id = ${userId} GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`;
  const ownTotals = (userId: string) => h.t.db.$queryRaw<Array<{ usage: string }>>`
    SELECT day::text AS day, model, provider, endpoint, usage::text AS usage, requests::text AS requests,
           prompt_tokens::text AS p, completion_tokens::text AS c, reasoning_tokens::text AS r, cached_tokens::text AS k
      FROM activity_member_totals WHERE organization_id = ${org.organizationId} AND user_id = ${userId} ORDER BY 1, 2, 3, 4`;
  let second: { userId: string; token: string };
  let keys: Array<{ id: string; key: string }>;

  beforeAll(async () => {
    second = await org.accounts.createUser({ organizationId: org.organizationId, email: 'second@activity.test', role: 'member' });
    keys = [await seedKey(org.accounts, org.organizationId, { userId: second.userId }), await seedKey(org.accounts, org.organizationId, { userId: second.userId })];
    // Two keys into one item, a failure, a key-less request (its personal-account token or session), yesterday's; and
    // another member's request into the same item.
    await generation({ apiKeyId: keys[0].id, userId: second.userId, cost: '0.3', model: 'm/two', endpoint: 'm/two@p' });
    await generation({ apiKeyId: keys[1].id, userId: second.userId, cost: '0.7000000001', model: 'm/two', endpoint: 'm/two@p' });
    await generation({ apiKeyId: keys[1].id, userId: second.userId, status: 'failed', model: 'm/two', routing: { attempts: [{ provider: 'p', endpoint: 'm/two@q' }] } });
    await generation({ userId: second.userId, cost: '0.05', model: 'm/two', endpoint: 'm/two@p' });
    await generation({ at: new Date('2026-11-19T12:00:00Z'), apiKeyId: keys[0].id, userId: second.userId, cost: '0.125', model: 'm/two', endpoint: 'm/two@p' });
    await generation({ apiKeyId: memberKey.id, userId: member.userId, cost: '9', model: 'm/two', endpoint: 'm/two@p' });
  });

  it('is read from activity_member_totals, which equals the sum over its keys and its key-less requests', async () => {
    const own = (await get(second.token)).body.data;
    expect(own.map((i: { date: string; endpoint_id: string; usage: number; requests: number }) => [i.date, i.endpoint_id, i.usage, i.requests])).toEqual([
      ['2026-11-20', 'm/two@p', 1.05, 3],
      ['2026-11-20', 'm/two@q', 0, 1],
      ['2026-11-19', 'm/two@p', 0.125, 1],
    ]);
    expect((await get(org.ownerToken, `?user_id=${second.userId}`)).body.data).toEqual(own);
    expect(await ownTotals(second.userId)).toEqual(await overKeys(second.userId));
    expect((await ownTotals(second.userId)).reduce((s, r) => s.plus(r.usage), money(0)).equals(await charged('user_id', second.userId))).toBe(true);
    // The detailed rows changed under it: the member's read does not move (a key's does), so it never sums them.
    const byKey = total((await get(org.ownerToken, `?api_key_id=${keys[0].id}`)).body.data);
    await h.t.db.$executeRaw`UPDATE activity_totals SET usage = usage + 1000 WHERE user_id = ${second.userId}`;
    try {
      expect((await get(second.token)).body.data).toEqual(own);
      expect((await get(org.ownerToken, `?user_id=${second.userId}`)).body.data).toEqual(own);
      expect(total((await get(org.ownerToken, `?api_key_id=${keys[0].id}`)).body.data).toNumber()).toBe(byKey.plus(2000).toNumber());
    } finally {
      await h.t.db.$executeRaw`UPDATE activity_totals SET usage = usage - 1000 WHERE user_id = ${second.userId}`;
    }
  });

  it('keeps what a revoked or changed key spent, and what it settles after, once', async () => {
    const before = total((await get(second.token)).body.data);
    const ledger = new Ledger(h.t.db, () => NOW, { pool: h.t.pool });
    // Opened by the key, which is then revoked while it runs; the other key renamed.
    const id = `gen_act_${++seq}`;
    expect('granted' in (await ledger.open({ ...openRow(org.organizationId, id, { apiKeyId: keys[1].id, userId: second.userId, bound: '10' }), model: 'm/two' }))).toBe(true);
    await org.accounts.revokeKey(keys[1].id);
    await org.accounts.updateKey(keys[0].id, { name: 'renamed' });
    expect(total((await get(second.token)).body.data).equals(before)).toBe(true);
    expect((await ledger.close({ id, status: 'completed', cost: '0.2', model: 'm/two', provider: 'prov', final_endpoint_slug: 'm/two@p', usage: { inputTokens: 1 } })).applied).toBe(true);
    expect(total((await get(second.token)).body.data).equals(before.plus('0.2'))).toBe(true);
    expect(await ownTotals(second.userId)).toEqual(await overKeys(second.userId));
    expect((await ownTotals(second.userId)).reduce((s, r) => s.plus(r.usage), money(0)).equals(await charged('user_id', second.userId))).toBe(true);
    // The other member's totals are its own.
    expect(await ownTotals(member.userId)).toEqual(await overKeys(member.userId));
  });
});

describe('concurrent settlements', () => {
  // The ledger locks each close's organization row before the trigger runs, so these settlements reach the totals one
  // organization at a time whatever the trigger does; what this proves is that none fails and no kopeck is lost.
  it('two processes settling into the same totals rows at once neither deadlock nor lose a kopeck', async () => {
    const second = connectDb(h.t.url, { max: 10 });
    const ledgers = [new Ledger(h.t.db, () => NOW, { pool: h.t.pool }), new Ledger(second.db, () => NOW, { pool: second.pool })];
    try {
      // The owner's key, the member's, the member's key-less requests and the organization's user-less ones.
      const keys = [ownerKey.id, memberKey.id, null, null];
      const users = [org.ownerUserId, member.userId, member.userId, null];
      const ids = Array.from({ length: 160 }, (_, i) => `gen_hot_${i}`);
      await Promise.all(ids.map((id, i) => ledgers[i % 2].open({ ...openRow(org.organizationId, id, { apiKeyId: keys[i % 4], userId: users[i % 4], bound: '1' }), model: `hot/${i % 2}` })));
      const before = (await get(org.ownerToken, '?days=1')).body.data;
      // Every close at once, through both ledgers: each batches what it has into one statement, in no particular order.
      const closes = await Promise.allSettled(
        ids.map((id, i) =>
          ledgers[(i * 7) % 2].close({ id, status: 'completed', cost: '0.0100000001', model: `hot/${i % 2}`, provider: 'p', final_endpoint_slug: `hot/${i % 2}@p`, usage: { inputTokens: 1, outputTokens: 1 } }),
        ),
      );
      expect(closes.filter((c) => c.status === 'rejected')).toEqual([]);
      const after = (await get(org.ownerToken, '?days=1')).body.data;
      const hot = (items: Array<{ model: string; usage: number; requests: number }>) => items.filter((i) => i.model.startsWith('hot/'));
      expect(before.filter((i: { model: string }) => i.model.startsWith('hot/'))).toEqual([]);
      expect(hot(after).map((i) => [i.model, i.requests])).toEqual([
        ['hot/0', 80],
        ['hot/1', 80],
      ]);
      const [sum] = await h.t.db.$queryRaw<Array<{ s: string }>>`SELECT SUM(usage)::text AS s FROM activity_totals WHERE model LIKE 'hot/%'`;
      expect(sum.s).toBe('1.6000000160');
      // The organization's totals agree with the detailed ones, row for row.
      const disagree = await h.t.db.$queryRaw<unknown[]>`
        SELECT organization_id, day, model, provider, endpoint, SUM(usage) AS usage, SUM(requests) AS requests, SUM(prompt_tokens) AS p,
               SUM(completion_tokens) AS c, SUM(reasoning_tokens) AS r, SUM(cached_tokens) AS k FROM activity_totals GROUP BY 1, 2, 3, 4, 5
        EXCEPT
        SELECT organization_id, day, model, provider, endpoint, usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens FROM activity_org_totals`;
      expect(disagree).toEqual([]);
      // And the members' totals, row for row.
      const members = `SELECT organization_id, day, model, provider, endpoint, user_id, SUM(usage) AS usage, SUM(requests) AS requests, SUM(prompt_tokens) AS p,
               SUM(completion_tokens) AS c, SUM(reasoning_tokens) AS r, SUM(cached_tokens) AS k FROM activity_totals WHERE user_id <> '' GROUP BY 1, 2, 3, 4, 5, 6`;
      const own = `SELECT organization_id, day, model, provider, endpoint, user_id, usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens FROM activity_member_totals`;
      expect(await h.t.db.$queryRawUnsafe<unknown[]>(`(${members}) EXCEPT (${own})`)).toEqual([]);
      expect(await h.t.db.$queryRawUnsafe<unknown[]>(`(${own}) EXCEPT (${members})`)).toEqual([]);
      expect((await get(member.token, '?days=1')).body.data.filter((i: { model: string }) => i.model.startsWith('hot/')).map((i: { requests: number }) => i.requests)).toEqual([40, 40]);
    } finally {
      await second.db.$disconnect();
    }
  });
});

describe('the activity day', () => {
  it('is the same in TypeScript and in SQL, either side of 01:00 Moscow time', async () => {
    for (const at of ['2026-11-19T21:59:59.999Z', '2026-11-19T22:00:00.000Z', '2026-12-31T21:59:59.999Z', '2026-12-31T22:00:00.000Z', '2027-03-01T00:00:00Z']) {
      const [r] = await h.t.db.$queryRaw<Array<{ d: string }>>`SELECT sy_activity_day(${new Date(at)}::timestamptz)::text AS d`;
      expect([at, r.d]).toEqual([at, activityDay(new Date(at))]);
    }
    expect(addDays('2026-03-01', -1)).toBe('2026-02-28');
  });
});
