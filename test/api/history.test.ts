import request from 'supertest';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg } from '../helpers/fixtures';
import type { Prisma } from '../../shared/db/generated/client';
import type { Catalog } from '../../shared/catalog/catalog.types';
import { ajv } from '../../shared/schemas/ajv';
import { historyDetailSchema, historyPageSchema } from '../../shared/schemas/history.schema';

let h: TestApp;
let org: Awaited<ReturnType<typeof seedOrg>>;
let other: Awaited<ReturnType<typeof seedOrg>>;
let admin: { userId: string; token: string };
let member: { userId: string; token: string };
let member2: { userId: string; token: string };
let ownerKey: { id: string; key: string };
let memberKey: { id: string; key: string };
let member2Key: { id: string; key: string };
let otherKey: { id: string; key: string };

const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000);
const bearer = (t: string) => ({ Authorization: `Bearer ${t}` });
const ids = (res: request.Response) => (res.body.items as Array<{ id: string }>).map((i) => i.id);

/** A generation row as the gateway and workers record it (user_id is the key's member for key requests). */
function gen(id: string, minutes: number, over: Partial<Prisma.GenerationCreateManyInput>): Prisma.GenerationCreateManyInput {
  return {
    id,
    organizationId: org.organizationId,
    model: 'openai/gpt-4.1-mini',
    unifiedModelId: 'openai/gpt-4.1-mini',
    requestType: 'chat',
    apiType: 'responses',
    responseMode: 'sync',
    status: 'completed',
    request: { input: 'hi' },
    createdAt: at(minutes),
    ...over,
  };
}

beforeAll(async () => {
  // A catalog with the model the rows name: a listing shows its display name.
  const catalog = { providers: {}, models: { 'openai/gpt-4.1-mini': { displayName: 'GPT-4.1 mini', type: 'chat', endpoints: [] } } } as unknown as Catalog;
  h = await createTestApp({ catalog, deps: { authCacheMs: 0 } });
  org = await seedOrg(h.t.db);
  other = await seedOrg(h.t.db);
  admin = await org.accounts.createUser({ organizationId: org.organizationId, email: 'admin@acme.test', role: 'admin' });
  member = await org.accounts.createUser({ organizationId: org.organizationId, email: 'member@acme.test', role: 'member' });
  member2 = await org.accounts.createUser({ organizationId: org.organizationId, email: 'member2@acme.test', role: 'member' });
  ownerKey = await seedKey(org.accounts, org.organizationId, { userId: org.ownerUserId, name: 'production' });
  memberKey = await seedKey(org.accounts, org.organizationId, { userId: member.userId, name: 'member key' });
  member2Key = await seedKey(org.accounts, org.organizationId, { userId: member2.userId, name: 'member2 key' });
  otherKey = await seedKey(other.accounts, other.organizationId, { name: 'elsewhere' });
  const owner = org.ownerUserId;
  await h.t.db.generation.createMany({
    data: [
      gen('gen_01', 1, {
        apiKeyId: ownerKey.id,
        userId: owner,
        provider: 'acme',
        finalEndpointSlug: 'acme',
        finishReason: 'stop',
        clientCost: '1.2345678',
        usage: { inputTokens: 10, outputTokens: 5, cachedTokens: 2, reasoningTokens: 1 },
        generationTimeMs: 1500,
        latencyMs: 300,
        queueTimeMs: 12,
        attemptsCount: 2,
        routing: { candidates: [{ provider: 'acme' }, { provider: 'beta', dropped: 'price_above_max' }] },
        warnings: ['temperature is not supported and was ignored'],
        completedAt: at(1.5),
      }),
      gen('gen_02', 2, { apiKeyId: ownerKey.id, userId: owner, requestType: 'embedding', apiType: 'embeddings', clientCost: '0.5', usage: { inputTokens: 7, outputTokens: 0 } }),
      gen('gen_03', 3, {
        apiKeyId: ownerKey.id,
        userId: owner,
        requestType: 'image',
        apiType: 'images',
        status: 'failed',
        error: { code: 'BAD_GATEWAY', message: 'upstream said no' },
      }),
      gen('gen_04', 4, { apiKeyId: ownerKey.id, userId: owner, requestType: 'video', apiType: 'media', responseMode: 'async', status: 'processing' }),
      gen('gen_05', 5, { apiKeyId: ownerKey.id, userId: owner, requestType: 'audio', apiType: 'media', status: 'cancelled', isCancelled: true }),
      // Recorded as the service records it: the model asked for not stored again when it is the model shown.
      gen('gen_06', 6, { apiKeyId: memberKey.id, userId: member.userId, unifiedModelId: null, clientCost: '3', provider: 'acme', usage: { inputTokens: 100, outputTokens: 50 } }),
      gen('gen_07', 7, { apiKeyId: null, userId: member.userId, status: 'pending' }),
      gen('gen_08', 8, { apiKeyId: null, userId: owner, requestType: 'upscale', apiType: 'media', clientCost: '2', usage: { durationSeconds: 4 } }),
      // A model the catalog has no more (and a fallback's model shown): the display name is the asked model's id.
      gen('gen_09', 9, { apiKeyId: member2Key.id, userId: member2.userId, model: 'acme/painter-2', unifiedModelId: 'acme/painter-1', requestType: 'image', apiType: 'images', clientCost: '0.1' }),
      gen('gen_x1', 10, { organizationId: other.organizationId, apiKeyId: otherKey.id, clientCost: '9' }),
    ],
  });
});
afterAll(() => h.close());

const list = (token: string, query = '') => request(h.app).get(`/v1/history/generations${query}`).set(bearer(token));
const detail = (token: string, id: string) => request(h.app).get(`/v1/history/generations/${id}`).set(bearer(token));

describe('GET /v1/history/generations: visibility', () => {
  it('under an API key lists only that key generations, newest first, without apiKeyName', async () => {
    const res = await list(ownerKey.key);
    expect(res.status).toBe(200);
    expect(ids(res)).toEqual(['gen_05', 'gen_04', 'gen_03', 'gen_02', 'gen_01']);
    expect(res.body.meta).toEqual({ page: 1, limit: 20, total: 5, totalPages: 1 });
    expect(res.body.items[4]).toEqual({
      id: 'gen_01',
      model: 'openai/gpt-4.1-mini',
      modelDisplayName: 'GPT-4.1 mini',
      requestType: 'chat',
      provider: 'acme',
      status: 'completed',
      cost: '1.234568',
      usage: { prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 },
      generationTimeMs: 1500,
      createdAt: at(1).toISOString(),
      apiKeyShort: ownerKey.key.slice(-6),
    });
  });

  it('shows running as pending and cancelled as failed; usage null without token counts', async () => {
    const res = await list(ownerKey.key);
    const byId = Object.fromEntries((res.body.items as Array<{ id: string; status: string; usage: unknown; cost: string }>).map((i) => [i.id, i]));
    expect(byId.gen_04.status).toBe('pending');
    expect(byId.gen_05.status).toBe('failed');
    expect(byId.gen_03).toMatchObject({ status: 'failed', usage: null, cost: '0.000000', provider: null });
    expect(byId.gen_02.usage).toEqual({ prompt_tokens: 7, completion_tokens: 0, total_tokens: 7 });
  });

  it('under a key refuses apiKeyId and withoutApiKey with 400 naming the field', async () => {
    for (const [q, path] of [
      [`?apiKeyId=${ownerKey.id}`, '/apiKeyId'],
      ['?withoutApiKey=true', '/withoutApiKey'],
    ]) {
      const res = await list(ownerKey.key, q);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('BAD_REQUEST');
      expect(res.body.error.details.errors.map((e: { path: string }) => e.path)).toEqual([path]);
    }
  });

  it('owner and admin see the whole organization with apiKeyName; key-less items have null key fields', async () => {
    for (const token of [org.ownerToken, admin.token]) {
      const res = await list(token);
      expect(ids(res)).toEqual(['gen_09', 'gen_08', 'gen_07', 'gen_06', 'gen_05', 'gen_04', 'gen_03', 'gen_02', 'gen_01']);
      expect(res.body.meta.total).toBe(9);
      const items = res.body.items as Array<Record<string, unknown>>;
      expect(items[3]).toMatchObject({ id: 'gen_06', apiKeyName: 'member key', apiKeyShort: memberKey.key.slice(-6) });
      expect(items[1]).toMatchObject({ id: 'gen_08', apiKeyName: null, apiKeyShort: null, usage: null });
      expect(Object.keys(items[8])).toEqual([
        'id', 'model', 'modelDisplayName', 'requestType', 'provider', 'status', 'cost', 'usage', 'generationTimeMs', 'createdAt', 'apiKeyName', 'apiKeyShort',
      ]);
    }
  });

  it('names each model once: the display name of the model asked for from the catalog (its id once the catalog has it no more)', async () => {
    const items = (await list(org.ownerToken)).body.items as Array<{ id: string; model: string; modelDisplayName: string }>;
    const names = Object.fromEntries(items.map((i) => [i.id, [i.model, i.modelDisplayName]]));
    expect(names.gen_06).toEqual(['openai/gpt-4.1-mini', 'GPT-4.1 mini']);
    expect(names.gen_01).toEqual(['openai/gpt-4.1-mini', 'GPT-4.1 mini']);
    expect(names.gen_09).toEqual(['acme/painter-2', 'acme/painter-1']);
    const detail = async (id: string) => (await request(h.app).get(`/v1/history/generations/${id}`).set(bearer(org.ownerToken))).body.unifiedModelId as string;
    expect([await detail('gen_06'), await detail('gen_09')]).toEqual(['openai/gpt-4.1-mini', 'acme/painter-1']);
  });

  it('a member sees the generations of its own keys and its own key-less ones only', async () => {
    expect(ids(await list(member.token))).toEqual(['gen_07', 'gen_06']);
    expect(ids(await list(member2.token))).toEqual(['gen_09']);
    expect(ids(await list(member.token, `?apiKeyId=${memberKey.id}`))).toEqual(['gen_06']);
    expect(ids(await list(member.token, `?apiKeyId=${ownerKey.id}`))).toEqual([]);
    expect(ids(await list(member.token, '?withoutApiKey=true'))).toEqual(['gen_07']);
    expect(ids(await list(member.token, '?withoutApiKey=false'))).toEqual(['gen_07', 'gen_06']);
  });

  it('filters by apiKeyId and withoutApiKey under an owner token; another organization key shows nothing', async () => {
    expect(ids(await list(org.ownerToken, `?apiKeyId=${ownerKey.id}`))).toEqual(['gen_05', 'gen_04', 'gen_03', 'gen_02', 'gen_01']);
    expect(ids(await list(org.ownerToken, '?withoutApiKey=true'))).toEqual(['gen_08', 'gen_07']);
    const foreign = await list(org.ownerToken, `?apiKeyId=${otherKey.id}`);
    expect(foreign.status).toBe(200);
    expect(foreign.body).toEqual({ items: [], meta: { page: 1, limit: 20, total: 0, totalPages: 0 } });
    const both = await list(org.ownerToken, `?apiKeyId=${ownerKey.id}&withoutApiKey=true`);
    expect(both.status).toBe(400);
    expect(both.body.error.details.errors[0].path).toBe('/withoutApiKey');
  });

  it('a member with many keys still sees all of them', async () => {
    const m = await org.accounts.createUser({ organizationId: org.organizationId, email: 'many@acme.test', role: 'member' });
    const keys = [];
    for (let i = 0; i < 33; i++) keys.push(await seedKey(org.accounts, org.organizationId, { userId: m.userId, name: `k${i}` }));
    await h.t.db.generation.createMany({
      data: [gen('gen_m1', 20, { apiKeyId: keys[0].id, userId: m.userId }), gen('gen_m2', 21, { apiKeyId: keys[32].id, userId: m.userId })],
    });
    const res = await list(m.token, '?sortBy=clientCost');
    expect(ids(res)).toEqual(['gen_m2', 'gen_m1']);
    expect(res.body.meta.total).toBe(2);
    await h.t.db.generation.deleteMany({ where: { id: { in: ['gen_m1', 'gen_m2'] } } });
  });

  it('answers 401 without credentials', async () => {
    expect((await request(h.app).get('/v1/history/generations')).status).toBe(401);
  });
});

describe('GET /v1/history/generations: filters, sorting, paging', () => {
  it.each([
    ['completed', ['gen_09', 'gen_08', 'gen_06', 'gen_02', 'gen_01']],
    ['failed', ['gen_05', 'gen_03']],
    ['pending', ['gen_07', 'gen_04']],
    ['processing', ['gen_04']],
    ['cancelled', ['gen_05']],
  ])('status=%s', async (status, expected) => {
    const res = await list(org.ownerToken, `?status=${status}`);
    expect(ids(res)).toEqual(expected);
    expect(res.body.meta.total).toBe(expected.length);
  });

  it('status filters under a key and a member combine with the scope', async () => {
    expect(ids(await list(ownerKey.key, '?status=failed'))).toEqual(['gen_05', 'gen_03']);
    expect(ids(await list(member.token, '?status=pending'))).toEqual(['gen_07']);
  });

  it.each([
    ['chat', ['gen_07', 'gen_06', 'gen_01']],
    ['embedding', ['gen_02']],
    ['image', ['gen_09', 'gen_03']],
    ['video', ['gen_04']],
    ['audio', ['gen_05']],
    ['upscale', ['gen_08']],
  ])('requestType=%s', async (type, expected) => {
    expect(ids(await list(org.ownerToken, `?requestType=${type}`))).toEqual(expected);
  });

  it('dateFrom and dateTo bound the period, both inclusive; a date-only dateTo covers its day', async () => {
    const iso = (m: number) => encodeURIComponent(at(m).toISOString());
    expect(ids(await list(org.ownerToken, `?dateFrom=${iso(7)}`))).toEqual(['gen_09', 'gen_08', 'gen_07']);
    expect(ids(await list(org.ownerToken, `?dateTo=${iso(2)}`))).toEqual(['gen_02', 'gen_01']);
    expect(ids(await list(org.ownerToken, `?dateFrom=${iso(3)}&dateTo=${iso(4)}`))).toEqual(['gen_04', 'gen_03']);
    // 10:05 UTC is 13:05 at +03:00.
    expect(ids(await list(org.ownerToken, `?dateFrom=${encodeURIComponent('2026-03-01T13:05:00+03:00')}&dateTo=2026-03-01T10:06:00Z`))).toEqual([
      'gen_06',
      'gen_05',
    ]);
    expect((await list(org.ownerToken, '?dateTo=2026-03-01')).body.meta.total).toBe(9);
    expect((await list(org.ownerToken, '?dateFrom=2026-03-02')).body.meta.total).toBe(0);
    expect((await list(org.ownerToken, '?dateTo=2026-02-28')).body.meta.total).toBe(0);
  });

  it.each([
    ['dateFrom=yesterday', '/dateFrom'],
    ['dateFrom=2026-02-30', '/dateFrom'],
    ['dateTo=2026-03-01T25:00:00Z', '/dateTo'],
    ['dateTo=1700000000', '/dateTo'],
    ['dateFrom=2026-03-02&dateTo=2026-03-01T00:00:00Z', '/dateTo'],
  ])('a bad period (%s) is 400 naming the field', async (q, path) => {
    const res = await list(org.ownerToken, `?${q}`);
    expect(res.status).toBe(400);
    expect(res.body.error.details.errors.map((e: { path: string }) => e.path)).toEqual([path]);
  });

  it('sorts by clientCost, ties by creation time, both orders', async () => {
    const desc = ids(await list(org.ownerToken, '?sortBy=clientCost'));
    expect(desc).toEqual(['gen_06', 'gen_08', 'gen_01', 'gen_02', 'gen_09', 'gen_07', 'gen_05', 'gen_04', 'gen_03']);
    expect(ids(await list(org.ownerToken, '?sortBy=clientCost&sortOrder=asc'))).toEqual([...desc].reverse());
    expect(ids(await list(ownerKey.key, '?sortBy=clientCost'))).toEqual(['gen_01', 'gen_02', 'gen_05', 'gen_04', 'gen_03']);
    expect(ids(await list(member.token, '?sortBy=clientCost&sortOrder=asc'))).toEqual(['gen_07', 'gen_06']);
  });

  it('sorts by createdAt ascending', async () => {
    expect(ids(await list(ownerKey.key, '?sortOrder=asc'))).toEqual(['gen_01', 'gen_02', 'gen_03', 'gen_04', 'gen_05']);
    expect(ids(await list(org.ownerToken, '?sortBy=createdAt&sortOrder=asc&limit=3&page=2'))).toEqual(['gen_04', 'gen_05', 'gen_06']);
  });

  it('pages with page and limit and reports page, limit, total, totalPages', async () => {
    const p2 = await list(org.ownerToken, '?limit=2&page=2');
    expect(ids(p2)).toEqual(['gen_07', 'gen_06']);
    expect(p2.body.meta).toEqual({ page: 2, limit: 2, total: 9, totalPages: 5 });
    const last = await list(org.ownerToken, '?limit=2&page=5');
    expect(ids(last)).toEqual(['gen_01']);
    const past = await list(org.ownerToken, '?limit=2&page=6');
    expect(past.body).toEqual({ items: [], meta: { page: 6, limit: 2, total: 9, totalPages: 5 } });
    const failedPage = await list(org.ownerToken, '?status=failed&limit=1&page=2');
    expect(ids(failedPage)).toEqual(['gen_03']);
    expect(failedPage.body.meta).toEqual({ page: 2, limit: 1, total: 2, totalPages: 2 });
    expect((await list(org.ownerToken, '?limit=100')).body.meta.limit).toBe(100);
    const deep = await list(org.ownerToken, '?limit=100&page=101');
    expect(deep.body).toEqual({ items: [], meta: { page: 101, limit: 100, total: 9, totalPages: 1 } });
  });

  it.each([
    ['page=0', '/page'],
    ['page=1.5', '/page'],
    ['page=abc', '/page'],
    ['page=10000001', '/page'],
    ['limit=0', '/limit'],
    ['limit=101', '/limit'],
    ['limit=', '/limit'],
    ['status=done', '/status'],
    ['status=completed&status=failed', '/status'],
    ['requestType=text', '/requestType'],
    ['sortBy=cost', '/sortBy'],
    ['sortOrder=up', '/sortOrder'],
    ['withoutApiKey=maybe', '/withoutApiKey'],
    ['apiKeyId=', '/apiKeyId'],
    ['foo=1', '/foo'],
  ])('refuses %s with 400 and the field path', async (q, path) => {
    const res = await list(org.ownerToken, `?${q}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('BAD_REQUEST');
    expect(res.body.error.metadata.reason).toBe('validation_failed');
    expect(res.body.error.details.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('estimates total past 10,000 matches and says so in X-Total-Is-Estimate', async () => {
    const big = await seedOrg(h.t.db);
    const k = await seedKey(big.accounts, big.organizationId);
    await h.t.db.$executeRaw`
      INSERT INTO generations (id, organization_id, api_key_id, model, request_type, api_type,
        response_mode, status, request, client_cost, created_at)
      SELECT 'gen_big_' || i, ${big.organizationId}, ${k.id}, 'm', 'chat', 'responses', 'sync', 'pending', '{}'::jsonb,
        (i % 100)::numeric / 10, ${new Date(T0)}::timestamptz + i * interval '1 second'
      FROM generate_series(1, 10050) i`;
    // Ended by one update, as the service ends them: the activity totals add them up once (an insert of ended rows adds
    // each one by one to the same totals row).
    await h.t.db.$executeRaw`UPDATE generations SET status = 'completed' WHERE organization_id = ${big.organizationId} AND id LIKE 'gen_big_%'`;
    await h.t.db.$executeRawUnsafe('ANALYZE generations');
    const res = await list(k.key, '?limit=100&page=3');
    expect(res.status).toBe(200);
    expect(res.headers['x-total-is-estimate']).toBe('true');
    expect(res.body.items).toHaveLength(100);
    expect(res.body.items[0].id).toBe('gen_big_9850');
    expect(res.body.meta.total).toBeGreaterThan(10_000);
    expect(res.body.meta.totalPages).toBe(Math.ceil(res.body.meta.total / 100));
    const deep = await list(k.key, '?limit=100&page=101');
    expect(deep.body.items).toHaveLength(50);
    expect(deep.body.items[0].id).toBe('gen_big_50');
    const small = await list(k.key, '?status=failed');
    expect(small.headers['x-total-is-estimate']).toBeUndefined();
    expect(small.body.meta.total).toBe(0);
  });
});

describe('GET /v1/history/generations/{id}', () => {
  it('returns every field of the detail record', async () => {
    const res = await detail(ownerKey.key, 'gen_01');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: 'gen_01',
      organizationId: org.organizationId,
      apiKeyId: ownerKey.id,
      unifiedModelId: 'openai/gpt-4.1-mini',
      requestType: 'chat',
      apiType: 'responses',
      responseMode: 'sync',
      status: 'completed',
      finishReason: 'stop',
      finalEndpointSlug: 'acme',
      serviceTier: null,
      usage: {
        prompt_tokens: 10,
        completion_tokens: 5,
        total_tokens: 15,
        prompt_tokens_details: { cached_tokens: 2 },
        completion_tokens_details: { reasoning_tokens: 1 },
      },
      clientCost: '1.234568',
      generationTimeMs: 1500,
      latencyMs: 300,
      queueTimeMs: 12,
      isCancelled: false,
      createdAt: at(1).toISOString(),
      completedAt: at(1.5).toISOString(),
      attemptsCount: 2,
      routing: { candidates: [{ provider: 'acme' }, { provider: 'beta', dropped: 'price_above_max' }] },
      warnings: ['temperature is not supported and was ignored'],
      error: null,
    });
  });

  it('shows a cancelled generation as failed with isCancelled, a running one as pending, media units in usage', async () => {
    expect((await detail(org.ownerToken, 'gen_05')).body).toMatchObject({ status: 'failed', isCancelled: true, usage: null, completedAt: null, warnings: [] });
    expect((await detail(org.ownerToken, 'gen_04')).body).toMatchObject({ status: 'pending', responseMode: 'async', isCancelled: false });
    expect((await detail(org.ownerToken, 'gen_03')).body.error).toEqual({ code: 'BAD_GATEWAY', message: 'upstream said no' });
    expect((await detail(org.ownerToken, 'gen_08')).body).toMatchObject({ apiKeyId: null, usage: { duration_seconds: 4 }, clientCost: '2.000000' });
  });

  it('replies match the schemas of the OpenAPI document', async () => {
    const page = ajv.compile(historyPageSchema);
    const one = ajv.compile(historyDetailSchema);
    for (const token of [org.ownerToken, ownerKey.key, member.token]) {
      const res = await list(token);
      expect({ valid: page(res.body), errors: page.errors ?? null }).toEqual({ valid: true, errors: null });
      for (const item of res.body.items as Array<{ id: string }>) {
        const d = await detail(token, item.id);
        expect({ valid: one(d.body), errors: one.errors ?? null }).toEqual({ valid: true, errors: null });
      }
    }
  });

  it('answers 404 for generations outside the viewer reach', async () => {
    const cases: Array<[string, string, number]> = [
      [ownerKey.key, 'gen_01', 200],
      [memberKey.key, 'gen_01', 404],
      [ownerKey.key, 'gen_06', 404],
      [member.token, 'gen_06', 200],
      [member.token, 'gen_07', 200],
      [member.token, 'gen_01', 404],
      [member.token, 'gen_08', 404],
      [member.token, 'gen_09', 404],
      [admin.token, 'gen_09', 200],
      [org.ownerToken, 'gen_x1', 404],
      [otherKey.key, 'gen_x1', 200],
      [org.ownerToken, 'gen_nope', 404],
    ];
    for (const [token, id, status] of cases) {
      const res = await detail(token, id);
      expect({ token: token.slice(0, 12), id, status: res.status }).toEqual({ token: token.slice(0, 12), id, status });
      if (status === 404) expect(res.body.error.code).toBe('NOT_FOUND');
    }
  });
});
