import request from 'supertest';
import { Ledger } from '../../shared/billing/ledger';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg, spend } from '../helpers/fixtures';

/** Issue 10 (items 5, 6, 10, 11) and 9.9: each test performs the attack or the report that failed. */
let h: TestApp;
let org: Awaited<ReturnType<typeof seedOrg>>;

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0 } });
  org = await seedOrg(h.t.db, { balance: '100' });
});
afterAll(() => h.close());

const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });

describe('limit_remaining of `never` limits (10.5)', () => {
  it('a key and a member with limit 4.2 never, after spending 4.2, report 0 remaining in /v1/key, /v2/balance and /v1/balance', async () => {
    const member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'never@example.com', role: 'member', limit: '4.2', reset: 'never' });
    const k = await seedKey(org.accounts, org.organizationId, { userId: member.userId, limit: '4.2', reset: 'never' });
    await spend(new Ledger(h.t.db, undefined, { pool: h.t.pool }), org.organizationId, 'gen_never_1', { apiKeyId: k.id, userId: member.userId, bound: '4.2', cost: '4.2' });

    const info = await request(h.app).get('/v1/key').set(bearer(k.key));
    expect(info.body).toMatchObject({ limit: 4.2, limit_remaining: 0, limit_reset: 'never', usage: 4.2 });
    const v2 = await request(h.app).get('/v2/balance').set(bearer(k.key));
    expect(v2.body.key).toEqual({ limit: '4.200000', limitRemaining: '0.000000', limitReset: 'never' });
    expect(v2.body.member).toEqual({ limit: '4.200000', limitRemaining: '0.000000', limitReset: 'never' });
    expect(v2.body.available).toBe('0.000000');
    const v1 = await request(h.app).get('/v1/balance').set(bearer(k.key));
    expect(v1.body.amount).toBe('0.000000');
    const listed = (await request(h.app).get('/v1/keys').set(bearer(org.ownerToken))).body.data.find((x: { id: string }) => x.id === k.id);
    expect(listed.limit_remaining).toBe(0);
  });

  it('a part-spent never limit reports the rest', async () => {
    const k = await seedKey(org.accounts, org.organizationId, { limit: '4.2', reset: 'never' });
    await spend(new Ledger(h.t.db, undefined, { pool: h.t.pool }), org.organizationId, 'gen_never_2', { apiKeyId: k.id, bound: '2', cost: '1.2' });
    expect((await request(h.app).get('/v1/key').set(bearer(k.key))).body.limit_remaining).toBe(3);
  });
});

describe('malformed input is a 400 in our envelope, even unauthenticated (10.6)', () => {
  const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
  const deepObject = (n: number) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);

  it.each([
    ['arrays 5,000 deep', deep(5000)],
    ['arrays 100,000 deep', deep(100_000)],
    ['objects 20,000 deep', deepObject(20_000)],
  ])('JSON nested %s', async (_name, body) => {
    for (const auth of [undefined, org.ownerToken]) {
      const req = request(h.app).post('/v1/chat/completions').set('Content-Type', 'application/json');
      if (auth) req.set(bearer(auth));
      const res = await req.send(body);
      expect(res.status).toBe(auth ? 400 : 401);
      expect(res.body.error.code).toBe(auth ? 'BAD_REQUEST' : 'UNAUTHORIZED');
    }
  });

  it.each(['/v1/media/%ff', '/v1/media/%E0%A4%A', '/v1/history/generations/%c0%af', '/v1/storage/files/%', '/nowhere/%ff'])('a bad percent-escape in the path: %s', async (path) => {
    for (const auth of [undefined, org.ownerToken]) {
      const req = request(h.app).get(path);
      if (auth) req.set(bearer(auth));
      const res = await req;
      expect([path, res.status]).toEqual([path, 400]);
      expect(res.body.error.code).toBe('BAD_REQUEST');
      expect(res.body.trace_id).toBeDefined();
    }
  });

  it.each([
    ['a lone high surrogate in a value', '{"model":"x","messages":[{"role":"user","content":"\\ud800"}]}'],
    ['a lone low surrogate in a value', '{"model":"x","messages":[{"role":"user","content":"a\\udc00b"}]}'],
    ['a lone surrogate in a key', '{"model":"x","messages":[{"role":"user","content":"hi"}],"metadata":{"\\ud800":"v"}}'],
  ])('%s', async (_name, body) => {
    const k = await seedKey(org.accounts, org.organizationId);
    const res = await request(h.app).post('/v1/chat/completions').set(bearer(k.key)).set('Content-Type', 'application/json').send(body);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(JSON.stringify(res.body.error.details)).toMatch(/surrogate/);
  });

  it('a surrogate pair (an emoji) is fine', async () => {
    const k = await seedKey(org.accounts, org.organizationId, { models: ['nobody/none'] });
    const res = await request(h.app).post('/v1/chat/completions').set(bearer(k.key)).set('Content-Type', 'application/json').send('{"model":"x/y","messages":[{"role":"user","content":"\\ud83d\\ude00"}]}');
    expect(res.status).toBe(403); // reached the model check, past the input checks
  });
});

describe('authentication comes first (10.11)', () => {
  it('an unauthenticated body is not parsed: malformed JSON and a large body answer 401, not 400', async () => {
    const bad = await request(h.app).post('/v1/chat/completions').set('Content-Type', 'application/json').send('{not json');
    expect(bad.status).toBe(401);
    expect(bad.body.error.code).toBe('UNAUTHORIZED');
    const big = `{"model":"x","messages":[{"role":"user","content":"${'a'.repeat(4 * 1024 * 1024)}"}]}`;
    const res = await request(h.app).post('/v1/responses').set('Content-Type', 'application/json').set(bearer('sy_' + 'x'.repeat(40))).send(big);
    expect(res.status).toBe(401);
    // An authenticated caller's malformed JSON is still a 400.
    const k = await seedKey(org.accounts, org.organizationId);
    expect((await request(h.app).post('/v1/chat/completions').set(bearer(k.key)).set('Content-Type', 'application/json').send('{not json')).status).toBe(400);
  });

  it('accepts the Bearer scheme in any case (RFC 9110: schemes are case-insensitive)', async () => {
    const k = await seedKey(org.accounts, org.organizationId);
    for (const scheme of ['bearer', 'BEARER', 'Bearer', 'bEaReR']) {
      const res = await request(h.app).get('/v1/key').set('Authorization', `${scheme} ${k.key}`);
      expect([scheme, res.status]).toEqual([scheme, 200]);
    }
    expect((await request(h.app).get('/v1/key').set('Authorization', `Basic ${k.key}`)).status).toBe(401);
  });
});

describe('rate limits (9.9, 10.10)', () => {
  // 50 s into a minute: the window (minute-aligned) ends in 10 s.
  const now = new Date(Date.UTC(2030, 0, 1, 12, 0, 50));
  let fixed: TestApp;
  let forg: Awaited<ReturnType<typeof seedOrg>>;
  beforeAll(async () => {
    fixed = await createTestApp({ deps: { authCacheMs: 0, clock: () => now } });
    forg = await seedOrg(fixed.t.db, { balance: '10', clock: () => now });
  });
  afterAll(() => fixed.close());

  it('Retry-After on 429 is the real time until a request passes (the window is minute-aligned), not 60 s', async () => {
    const k = await seedKey(forg.accounts, forg.organizationId, { rateLimitPerMinute: 2 });
    for (let i = 0; i < 2; i++) expect((await request(fixed.app).get('/v1/key').set(bearer(k.key))).status).toBe(200);
    const res = await request(fixed.app).get('/v1/key').set(bearer(k.key));
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBe('10');
  });

  it('GET /v1/files/{id}/content counts against the key rate limit (with Authorization)', async () => {
    const k = await seedKey(forg.accounts, forg.organizationId, { rateLimitPerMinute: 3 });
    const up = await request(fixed.app).post('/v1/storage/files').set(bearer(k.key)).set('Content-Type', 'image/png').send(Buffer.alloc(64, 1));
    expect(up.status).toBe(201);
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await request(fixed.app).get(`/v1/files/${up.body.id}/content`).set(bearer(k.key))).status);
    expect(statuses).toEqual([200, 200, 429, 429]); // the upload was the first request of the minute
    const limited = await request(fixed.app).get(`/v1/files/${up.body.id}/content`).set(bearer(k.key));
    expect(limited.body.error.code).toBe('TOO_MANY_REQUESTS');
    expect(limited.headers['retry-after']).toBe('10');
    // No or a bad credential is still 401.
    expect((await request(fixed.app).get(`/v1/files/${up.body.id}/content`)).status).toBe(401);
  });
});

describe('signed file URLs expire (10.11)', () => {
  let now = new Date('2031-05-05T10:00:00Z');
  let app: TestApp;
  let owner: string;
  beforeAll(async () => {
    app = await createTestApp({ env: { FILE_URL_TTL_SECONDS: '60' }, deps: { authCacheMs: 0, clock: () => now } });
    owner = (await seedOrg(app.t.db, { clock: () => now })).ownerToken;
  });
  afterAll(() => app.close());

  it('a URL carries its expiry (FILE_URL_TTL_SECONDS), works until then, then answers 403 in our envelope; a forged expiry is 404', async () => {
    const up = await request(app.app).post('/v1/storage/files').set(bearer(owner)).set('Content-Type', 'image/png').send(Buffer.alloc(32, 7));
    const url = new URL(up.body.url);
    expect(Number(url.searchParams.get('exp'))).toBe(now.getTime() / 1000 + 60);
    const path = `${url.pathname}${url.search}`;
    expect((await request(app.app).get(path)).status).toBe(200);

    now = new Date(now.getTime() + 61_000);
    const expired = await request(app.app).get(path);
    expect(expired.status).toBe(403);
    expect(expired.body.error.code).toBe('FORBIDDEN');
    expect(expired.body.error.message).toMatch(/expired/);
    expect(expired.body.trace_id).toBe(expired.headers['x-trace-id']);

    // Moving the expiry forward breaks the signature; a URL without one (the old, eternal form) is refused too.
    const forged = path.replace(/exp=\d+/, `exp=${Math.floor(now.getTime() / 1000) + 3600}`);
    expect((await request(app.app).get(forged)).status).toBe(404);
    expect((await request(app.app).get(path.replace(/exp=\d+&/, ''))).status).toBe(404);

    // Reading the record again signs a fresh URL.
    const again = await request(app.app).get(`/v1/storage/files/${up.body.id}`).set(bearer(owner));
    const fresh = new URL(again.body.url);
    expect((await request(app.app).get(`${fresh.pathname}${fresh.search}`)).status).toBe(200);
  });
});
