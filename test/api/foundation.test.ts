import request from 'supertest';
import { signToken } from '../../shared/auth/tokens';
import { Ledger } from '../../shared/billing/ledger';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg, spend, TEST_SECRET } from '../helpers/fixtures';

let h: TestApp;
let org: Awaited<ReturnType<typeof seedOrg>>;
let key: { id: string; key: string };

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0 } });
  org = await seedOrg(h.t.db, { balance: '100.5' });
  key = await seedKey(org.accounts, org.organizationId, { name: 'main' });
});
afterAll(() => h.close());

const bearer = (k: string) => ({ Authorization: `Bearer ${k}` });

describe('errors and authentication', () => {
  it('answers 401 UNAUTHORIZED with a trace id in body and header when there is no Authorization', async () => {
    const res = await request(h.app).get('/v1/key');
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('UNAUTHORIZED');
    expect(res.body.trace_id).toBe(res.headers['x-trace-id']);
    expect(res.body.error.trace_id).toBe(res.body.trace_id);
  });

  it.each([['Basic abc'], ['Bearer'], ['Bearer sy_short'], [`Bearer sy_${'A'.repeat(40)}`], ['Bearer eyJhbGciOiJIUzI1NiJ9.e30.bad']])(
    'answers 401 for %s',
    async (header) => {
      const res = await request(h.app).get('/v2/balance').set('Authorization', header);
      expect(res.status).toBe(401);
      expect(res.body.error.code).toBe('UNAUTHORIZED');
    },
  );

  it('refuses an expired token and one signed with another secret', async () => {
    const expired = signToken({ sub: org.ownerUserId, org: org.organizationId, role: 'owner', exp: Math.floor(Date.now() / 1000) - 1 }, TEST_SECRET);
    const forged = signToken({ sub: org.ownerUserId, org: org.organizationId, role: 'owner', exp: Math.floor(Date.now() / 1000) + 60 }, 'other');
    for (const t of [expired, forged]) expect((await request(h.app).get('/v2/balance').set(bearer(t))).status).toBe(401);
  });

  it('answers 401 api_key_revoked for a revoked key', async () => {
    const k = await seedKey(org.accounts, org.organizationId);
    expect((await request(h.app).get('/v1/key').set(bearer(k.key))).status).toBe(200);
    await org.accounts.revokeKey(k.id);
    const res = await request(h.app).get('/v1/key').set(bearer(k.key));
    expect(res.status).toBe(401);
    expect(res.body.error.code).toBe('api_key_revoked');
    expect(res.body.error.metadata.reason).toBe('key_revoked');
  });

  it('answers 404 NOT_FOUND for unknown routes, with or without auth', async () => {
    for (const r of [request(h.app).get('/v1/nothing'), request(h.app).get('/v1/nothing').set(bearer(key.key))]) {
      const res = await r;
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });

  it('answers 400 for malformed JSON and 413 over the body limit', async () => {
    const bad = await request(h.app).post('/v1/keys').set(bearer(org.ownerToken)).set('Content-Type', 'application/json').send('{"name":');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('BAD_REQUEST');
    const small = await createTestApp({ env: { MAX_BODY_BYTES: '100' } });
    try {
      // Bodies are parsed after authentication: the caller must exist in this app's database.
      const owner = (await seedOrg(small.t.db)).ownerToken;
      const big = await request(small.app).post('/v1/keys').set(bearer(owner)).send({ name: 'x'.repeat(200) });
      expect(big.status).toBe(413);
      expect(big.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    } finally {
      await small.close();
    }
  });

  it('answers 429 with Retry-After past the per-key rate limit, counted in Redis', async () => {
    const k = await seedKey(org.accounts, org.organizationId, { rateLimitPerMinute: 3 });
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await request(h.app).get('/v1/key').set(bearer(k.key))).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
    const res = await request(h.app).get('/v1/key').set(bearer(k.key));
    expect(res.body.error.code).toBe('TOO_MANY_REQUESTS');
    expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
  });

  it('serves /healthz and /readyz without auth', async () => {
    expect((await request(h.app).get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await request(h.app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ database: true, redis: true, workers: true });
  });
});

describe('GET /v1/key', () => {
  it('returns every field of the key info record', async () => {
    const member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'k@example.com', role: 'member' });
    const k = await seedKey(org.accounts, org.organizationId, { userId: member.userId, limit: '10', reset: 'weekly' });
    await spend(new Ledger(h.t.db, undefined, { pool: h.t.pool }), org.organizationId, 'gen_keyinfo_1', { apiKeyId: k.id, bound: '2', cost: '1.25' });
    const res = await request(h.app).get('/v1/key').set(bearer(k.key));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      creator_user_id: member.userId,
      label: `sy_...${k.key.slice(-6)}`,
      limit: 10,
      limit_remaining: 8.75,
      limit_reset: 'weekly',
      usage: 1.25,
      usage_daily: 1.25,
      usage_weekly: 1.25,
      usage_monthly: 1.25,
    });
  });

  it('shows nulls for a key without a limit', async () => {
    const res = await request(h.app).get('/v1/key').set(bearer(key.key));
    expect(res.body).toMatchObject({ limit: null, limit_remaining: null, limit_reset: null, usage: 0 });
    expect(Object.keys(res.body).sort()).toEqual(
      ['creator_user_id', 'label', 'limit', 'limit_remaining', 'limit_reset', 'usage', 'usage_daily', 'usage_monthly', 'usage_weekly'].sort(),
    );
  });

  it('answers 400 to a personal-account token', async () => {
    const res = await request(h.app).get('/v1/key').set(bearer(org.ownerToken));
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
  });
});

describe('balances', () => {
  let org: Awaited<ReturnType<typeof seedOrg>>;
  let key: { id: string; key: string };
  beforeAll(async () => {
    org = await seedOrg(h.t.db, { balance: '100.5' });
    key = await seedKey(org.accounts, org.organizationId);
  });

  it('GET /v2/balance answers decimal strings with key and member views', async () => {
    const res = await request(h.app).get('/v2/balance').set(bearer(key.key));
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ amount: '100.500000', available: '100.500000', reserved: '0.000000', spent: '0.000000', currency: 'RUB', key: null, member: null });
    expect(new Date(res.body.updatedAt).toString()).not.toBe('Invalid Date');
  });

  it('GET /v1/balance is deprecated, points at v2, and shows a member limit remainder as amount', async () => {
    const plain = await request(h.app).get('/v1/balance').set(bearer(key.key));
    expect(plain.headers.deprecation).toBe('true');
    expect(plain.headers.link).toBe('</v2/balance>; rel="successor-version"');
    expect(plain.body).toMatchObject({ amount: '100.500000', reservedAmount: '0.000000', spentAmount: '0.000000' });

    const member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'lim@example.com', role: 'member', limit: '7', reset: 'daily' });
    const mk = await seedKey(org.accounts, org.organizationId, { userId: member.userId, limit: '5', reset: 'monthly' });
    const res = await request(h.app).get('/v1/balance').set(bearer(mk.key));
    expect(res.body.amount).toBe('7.000000');
    expect(res.body.available).toBe('5.000000');
    expect(res.body).not.toHaveProperty('reservedAmount');
    expect(res.body).not.toHaveProperty('spentAmount');
    const v2 = await request(h.app).get('/v2/balance').set(bearer(mk.key));
    expect(v2.body.amount).toBe(plain.body.amount);
    expect(v2.body.key).toEqual({ limit: '5.000000', limitRemaining: '5.000000', limitReset: 'monthly' });
    expect(v2.body.member).toEqual({ limit: '7.000000', limitRemaining: '7.000000', limitReset: 'daily' });
  });
});

describe('/v1/keys', () => {
  it('lets owner and admin manage every key, a member only its own, and refuses API keys', async () => {
    const admin = await org.accounts.createUser({ organizationId: org.organizationId, email: 'a@example.com', role: 'admin' });
    const m1 = await org.accounts.createUser({ organizationId: org.organizationId, email: 'm1@example.com', role: 'member' });
    const m2 = await org.accounts.createUser({ organizationId: org.organizationId, email: 'm2@example.com', role: 'member' });

    const created = await request(h.app).post('/v1/keys').set(bearer(m1.token)).send({ name: 'mine', limit: 3, limit_reset: 'daily', allowed_models: ['a/b'] });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatch(/^sy_[A-Za-z0-9]{40}$/);
    expect(created.body).toMatchObject({ name: 'mine', limit: 3, limit_reset: 'daily', user_id: m1.userId, creator_user_id: m1.userId, allowed_models: ['a/b'] });

    const m1List = await request(h.app).get('/v1/keys').set(bearer(m1.token));
    expect(m1List.body.data.map((k: { id: string }) => k.id)).toEqual([created.body.id]);
    expect(JSON.stringify(m1List.body)).not.toContain(created.body.key);
    const adminList = await request(h.app).get('/v1/keys').set(bearer(admin.token));
    expect(adminList.body.data.length).toBeGreaterThan(3);

    expect((await request(h.app).patch(`/v1/keys/${created.body.id}`).set(bearer(m2.token)).send({ name: 'x' })).status).toBe(403);
    expect((await request(h.app).post('/v1/keys').set(bearer(m2.token)).send({ user_id: m1.userId })).status).toBe(403);
    const patched = await request(h.app).patch(`/v1/keys/${created.body.id}`).set(bearer(admin.token)).send({ name: 'renamed', limit: 4 });
    expect(patched.body).toMatchObject({ name: 'renamed', limit: 4, limit_reset: 'daily' });

    expect((await request(h.app).get('/v1/keys').set(bearer(key.key))).status).toBe(403);
    expect((await request(h.app).delete(`/v1/keys/${created.body.id}`).set(bearer(m2.token))).status).toBe(403);
    const del = await request(h.app).delete(`/v1/keys/${created.body.id}`).set(bearer(m1.token));
    expect(del.body).toMatchObject({ id: created.body.id, revoked: true });
    expect((await request(h.app).get('/v1/key').set(bearer(created.body.key))).body.error.code).toBe('api_key_revoked');
    expect((await request(h.app).delete('/v1/keys/key_nope').set(bearer(admin.token))).status).toBe(404);
  });

  it('validates bodies with ajv details', async () => {
    const res = await request(h.app).post('/v1/keys').set(bearer(org.ownerToken)).send({ limit: -1, limit_reset: 'hourly', bogus: 1 });
    expect(res.status).toBe(400);
    expect(res.body.error.metadata.reason).toBe('validation_failed');
    const paths = res.body.error.details.errors.map((e: { path: string }) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['/limit', '/limit_reset', '/bogus']));
  });
});
