import OpenAI from 'openai';
import type { Job } from 'bullmq';
import request from 'supertest';
import { MAINTENANCE_JOBS, maintenanceProcessor } from '../../workers/processors/maintenance.processor';
import { money } from '../../shared/money';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { orgMoney as heldMoney } from '../helpers/fixtures';
import { waitFor } from '../helpers/until';

// Long enough for a call of 300 ms beside busy processes; the calls that must outlive it are held by the provider.
const SYNC_WAIT_MS = 4000;
let s: TestStack;
let org: StackOrg;

beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: String(SYNC_WAIT_MS) }, knobs: { promptTokens: 1000, completionTokens: 500 } });
  org = await s.seed({ balance: '1000' });
});
afterAll(() => s.close());
beforeEach(() => s.fake.setKnobs({ promptTokens: 1000, completionTokens: 500 }));

// gpt-4.1-mini in the stack catalog: 40 RUB per million prompt tokens, 160 per million completion tokens.
const COST = (1000 * 40 + 500 * 160) / 1_000_000; // 0.12 RUB

let keys = 0;
const newKey = () => `idem-${Date.now()}-${++keys}`;
const post = (path: string, body: object, key?: string, auth = org.auth) => {
  const r = request(s.app).post(path).set(auth);
  if (key !== undefined) r.set('Idempotency-Key', key);
  return r.send(body);
};
const upstreamCalls = (path = '/openai/v1/chat/completions') => s.fake.requests.filter((q) => q.path === path).length;
const generationsOf = (organizationId = org.organizationId) => s.t.db.generation.count({ where: { organizationId } });
async function spent(organizationId = org.organizationId) {
  await s.settled(organizationId);
  return heldMoney(s.t.db, organizationId);
}
const ledgerEntries = async (generationId: string) => (await s.settled(org.organizationId), s.t.db.ledgerEntry.count({ where: { generationId, kind: 'charge' } }));
const until = (check: () => Promise<boolean>, ms = 10_000) => waitFor('the condition', check, ms);

describe('x-should-retry (issue 9.8)', () => {
  it('a synchronous call that outlives SYNC_WAIT_MS is sent once by the openai SDK, and the 408 names the generation', async () => {
    s.fake.setKnobs({ holdReplies: true, promptTokens: 1000, completionTokens: 500 });
    const client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1` }); // default maxRetries: 2
    const before = await generationsOf();
    const calls = upstreamCalls();
    const err = await client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'slow' }] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(OpenAI.APIError);
    const e = err as InstanceType<typeof OpenAI.APIError>;
    expect(e.status).toBe(408);
    expect(e.headers?.get('x-should-retry')).toBe('false');
    expect(await generationsOf()).toBe(before + 1); // exactly one request reached us
    const g = await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId }, orderBy: { createdAt: 'desc' } });
    expect(e.message).toContain(g.id);
    expect(e.message).toContain('was cancelled and is not charged');
    expect(e.message).toContain('Idempotency-Key');
    expect((e.error as { metadata: unknown }).metadata).toEqual({ generation_id: g.id, generation_status: 'cancelled' });
    // The provider's call ended (cut by the cancel): no late answer can change the generation now.
    await until(async () => s.fake.requests.filter((q) => q.path === '/openai/v1/chat/completions').at(-1)?.endedAt !== undefined);
    expect(upstreamCalls()).toBe(calls + 1);
    expect((await s.t.db.generation.findFirstOrThrow({ where: { id: g.id } })).status).toBe('cancelled');
  });

  it('says whether a retry can help on every error: no for 400, 401, 402 and 404, yes for 502', async () => {
    const bad = await post('/v1/responses', { model: STACK_MODELS.chat });
    expect([bad.status, bad.headers['x-should-retry']]).toEqual([400, 'false']);
    const unauth = await request(s.app).post('/v1/responses').send({ model: STACK_MODELS.chat, input: 'x' });
    expect([unauth.status, unauth.headers['x-should-retry']]).toEqual([401, 'false']);
    const unknown = await post('/v1/responses', { model: 'acme/nothing', input: 'x' });
    expect([unknown.status, unknown.headers['x-should-retry']]).toEqual([404, 'false']);
    const poor = await s.seed({ balance: '0' });
    const broke = await post('/v1/responses', { model: STACK_MODELS.chat, input: 'x' }, undefined, poor.auth);
    expect([broke.status, broke.headers['x-should-retry']]).toEqual([402, 'false']);
    // a refused reservation gives its Idempotency-Key back: the same key works once the balance is topped up
    const key = newKey();
    expect((await post('/v1/responses', { model: STACK_MODELS.chat, input: 'x' }, key, poor.auth)).status).toBe(402);
    expect(await s.t.db.idempotencyKey.count({ where: { key } })).toBe(0);
    s.fake.setKnobs({ status: 500 });
    const upstream = await post('/v1/responses', { model: STACK_MODELS.chat, input: 'x' });
    expect([upstream.status, upstream.headers['x-should-retry']]).toEqual([502, 'true']);
  });
});

describe('Idempotency-Key (issue 9.16)', () => {
  it('concurrent duplicates make one generation, one upstream call and one charge, and all get the same answer', async () => {
    s.fake.setKnobs({ latencyMs: 300, promptTokens: 1000, completionTokens: 500, text: 'Only once' });
    const key = newKey();
    const before = await spent();
    const calls = upstreamCalls();
    const gens = await generationsOf();
    const replies = await Promise.all(Array.from({ length: 5 }, () => post('/v1/chat/completions', { model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hi' }] }, key)));
    expect(replies.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const ids = new Set(replies.map((r) => r.body.id));
    expect(ids.size).toBe(1);
    expect(replies.map((r) => r.body.choices[0].message.content)).toEqual(Array(5).fill('Only once'));
    expect(replies.map((r) => r.body.usage.cost_rub)).toEqual(Array(5).fill(COST));
    expect(await generationsOf()).toBe(gens + 1);
    expect(upstreamCalls()).toBe(calls + 1);
    const after = await spent();
    expect(before.balance.minus(after.balance).toNumber()).toBeCloseTo(COST, 10);
    expect(after.reserved.isZero()).toBe(true);
    expect(await ledgerEntries([...ids][0])).toBe(1);
  });

  it('a repeat after a 408 waits for the same generation and gets its result, charged once', async () => {
    const knobs = { promptTokens: 1000, completionTokens: 500, text: 'Worth the wait' };
    s.fake.setKnobs({ ...knobs, holdReplies: true });
    const key = newKey();
    const body = { model: STACK_MODELS.chat, input: 'slow one' };
    const before = await spent();
    const first = await post('/v1/responses', body, key);
    expect(first.status).toBe(408);
    expect(first.headers['x-should-retry']).toBe('true'); // a repeat joins the same generation
    const id = first.body.error.metadata.generation_id as string;
    expect(id).toMatch(/^resp_/);
    expect(first.body.error.metadata).toEqual({ generation_id: id, generation_status: 'running' });
    expect(first.body.error.message).toContain(`generation ${id} keeps running`);
    expect(first.body.error.message).toContain(`GET /v1/responses/${id}`);
    expect(first.body.error.message).toContain(`GET /v1/history/generations/${id}`);
    s.fake.setKnobs(knobs);
    const again = await post('/v1/responses', body, key);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id, status: 'completed', output_text: 'Worth the wait' });
    // and once more, after it finished: replayed from the stored result
    const third = await post('/v1/responses', body, key);
    expect(third.body).toMatchObject({ id, status: 'completed', output_text: 'Worth the wait' });
    expect(third.body.usage.cost_rub).toBe(COST);
    // The request lives in generation_contents (one row per generation recorded).
    expect(await s.t.db.generationContent.count({ where: { request: { path: ['body', 'input'], equals: 'slow one' } } })).toBe(1);
    const after = await spent();
    expect(before.balance.minus(after.balance).toNumber()).toBeCloseTo(COST, 10);
    expect(await ledgerEntries(id)).toBe(1);
  });

  it('with an Idempotency-Key the openai SDK may retry a 408: its retries join the same generation and return its answer', async () => {
    s.fake.setKnobs({ latencyMs: SYNC_WAIT_MS + 800, promptTokens: 1000, completionTokens: 500, text: 'Patience pays' });
    const client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 2 });
    const before = await generationsOf();
    const calls = upstreamCalls();
    const c = await client.chat.completions.create({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'sdk retry' }] }, { headers: { 'Idempotency-Key': newKey() } });
    expect(c.choices[0].message.content).toBe('Patience pays');
    expect(await generationsOf()).toBe(before + 1);
    expect(upstreamCalls()).toBe(calls + 1);
    expect(await ledgerEntries(c.id)).toBe(1);
  });

  it('the same key with a different body is 409 CONFLICT; another organization has keys of its own', async () => {
    const key = newKey();
    const ok = await post('/v1/responses', { model: STACK_MODELS.chat, input: 'one' }, key);
    expect(ok.status).toBe(200);
    const other = await post('/v1/responses', { model: STACK_MODELS.chat, input: 'two' }, key);
    expect(other.status).toBe(409);
    expect(other.body.error).toMatchObject({ code: 'CONFLICT', metadata: { generation_id: ok.body.id } });
    expect(other.body.error.message).toContain('different request');
    expect(other.headers['x-should-retry']).toBe('false');
    // the same body on another route is another request too
    const chat = await post('/v1/chat/completions', { model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'one' }] }, key);
    expect(chat.status).toBe(409);
    // field order does not matter
    const reordered = await post('/v1/responses', { input: 'one', model: STACK_MODELS.chat }, key);
    expect(reordered.body.id).toBe(ok.body.id);

    const stranger = await s.seed({ balance: '10' });
    const theirs = await post('/v1/responses', { model: STACK_MODELS.chat, input: 'one' }, key, stranger.auth);
    expect(theirs.status).toBe(200);
    expect(theirs.body.id).not.toBe(ok.body.id);
    expect(await generationsOf(stranger.organizationId)).toBe(1);
  });

  it("keys are per caller: other keys and members of the organization reusing a key get generations of their own, never a 409 or another's id", async () => {
    const key = newKey();
    const body = { model: STACK_MODELS.chat, input: 'private' };
    const second = await org.accounts.createKey({ organizationId: org.organizationId, name: 'second' });
    const member = await org.accounts.createUser({ organizationId: org.organizationId, email: `m-${key}@example.com`, role: 'member' });
    const callers = [
      { name: 'the first key', auth: org.auth },
      { name: 'another key', auth: { Authorization: `Bearer ${second.key}` } },
      { name: 'the owner', auth: { Authorization: `Bearer ${org.ownerToken}` } },
      { name: 'a member', auth: { Authorization: `Bearer ${member.token}` } },
    ];
    const gens = await generationsOf();
    const firsts = [];
    for (const c of callers) {
      s.fake.setKnobs({ promptTokens: 1000, completionTokens: 500, text: `only for ${c.name}` });
      const r = await post('/v1/responses', body, key, c.auth);
      expect([c.name, r.status]).toEqual([c.name, 200]);
      expect(r.body.output_text).toBe(`only for ${c.name}`);
      firsts.push(r);
    }
    const ids = firsts.map((r) => r.body.id as string);
    expect(new Set(ids).size).toBe(callers.length);
    expect(await generationsOf()).toBe(gens + callers.length);
    // A hostile caller that used the key first with another body blocks nobody: the next caller's request runs.
    const squatted = newKey();
    expect((await post('/v1/responses', { model: STACK_MODELS.chat, input: 'squat' }, squatted, callers[3].auth)).status).toBe(200);
    const victim = await post('/v1/responses', body, squatted, callers[0].auth);
    expect(victim.status).toBe(200);
    // Each repeat replays the caller's own generation, and nothing of another's shows in any reply.
    for (const [i, c] of callers.entries()) {
      const again = await post('/v1/responses', body, key, c.auth);
      expect([c.name, again.status, again.body.id, again.body.output_text]).toEqual([c.name, 200, ids[i], `only for ${c.name}`]);
      const foreign = ids.filter((_, j) => j !== i);
      for (const r of [firsts[i], again]) {
        const seen = JSON.stringify(r.body) + JSON.stringify(r.headers);
        for (const id of [...foreign, victim.body.id]) expect(seen).not.toContain(id);
      }
    }
    expect(await generationsOf()).toBe(gens + callers.length + 2);
  });

  it('a replay answers the created timestamps of the first reply and of the stored generation, on every kind', async () => {
    s.fake.setKnobs({ promptTokens: 1000, completionTokens: 500, text: 'Timed', streamChunks: 2 });
    const sse = (text: string) => text.split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)));
    const chatCreated = (r: request.Response) => [...new Set(sse(r.text).map((e) => e.created))];
    const responsesCreated = (r: request.Response) => [...new Set(sse(r.text).filter((e) => e.response).map((e) => e.response.created_at))];
    // [name, send, the reply's creation timestamps]
    const kinds: Array<[string, (key: string) => Promise<request.Response>, (r: request.Response) => unknown[] | object]> = [
      ['responses', (k) => post('/v1/responses', { model: STACK_MODELS.chat, input: 'when' }, k), (r) => [r.body.created_at]],
      ['responses stream', (k) => post('/v1/responses', { model: STACK_MODELS.chat, input: 'when', stream: true }, k), responsesCreated],
      ['chat', (k) => post('/v1/chat/completions', { model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'when' }] }, k), (r) => [r.body.created]],
      ['chat stream', (k) => post('/v1/chat/completions', { model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'when' }], stream: true }, k), chatCreated],
      ['embeddings', (k) => post('/v1/embeddings', { model: STACK_MODELS.embedding, input: 'when' }, k), (r) => r.body],
      ['images v2', (k) => post('/v2/images/generations', { model: STACK_MODELS.image, prompt: 'A clock' }, k), (r) => [r.body.created]],
      ['images v1', (k) => post('/v1/images/generations', { model: STACK_MODELS.image, prompt: 'A clock' }, k), (r) => [r.body.created]],
      ['media', (k) => post('/v1/media', { model: STACK_MODELS.audio, input: { prompt: 'A clock ticking', duration: 7 } }, k), (r) => [r.body.created]],
      ['media async', (k) => post('/v1/media', { model: STACK_MODELS.audio, input: { prompt: 'A clock tocking', duration: 7 }, async: true }, k), (r) => [r.body.created]],
    ];
    const firsts = [];
    for (const [name, send, created] of kinds) {
      const key = newKey();
      const r = await send(key);
      expect([name, r.status < 300]).toEqual([name, true]);
      const stamps = created(r);
      expect([name, Array.isArray(stamps) ? stamps.every((t) => Number.isInteger(t)) : true]).toEqual([name, true]);
      const id = (await s.t.db.idempotencyKey.findFirstOrThrow({ where: { key } })).generationId; // images replies name no id
      firsts.push({ name, send, created, key, stamps, id });
    }
    // The repeats come in a later second than every first reply.
    const latest = Math.max(...firsts.flatMap((f) => (Array.isArray(f.stamps) ? f.stamps : [])));
    await until(async () => Math.floor(Date.now() / 1000) > latest);
    for (const f of firsts) {
      const again = await f.send(f.key);
      expect([f.name, f.created(again)]).toEqual([f.name, f.stamps]);
      const stored = await request(s.app).get(`/v1/history/generations/${f.id}`).set(org.auth);
      expect(stored.status).toBe(200);
      if (Array.isArray(f.stamps)) expect([f.name, Math.floor(Date.parse(stored.body.createdAt) / 1000)]).toEqual([f.name, f.stamps[0]]);
    }
    const resp = firsts.find((f) => f.name === 'responses')!;
    expect((await request(s.app).get(`/v1/responses/${resp.id}`).set(org.auth)).body.created_at).toBe((resp.stamps as number[])[0]);
    const med = firsts.find((f) => f.name === 'media')!;
    expect((await request(s.app).get(`/v1/media/${med.id}`).set(org.auth)).body.created).toBe((med.stamps as number[])[0]);
  });

  it('rejects a malformed key with 400', async () => {
    const r = await post('/v1/responses', { model: STACK_MODELS.chat, input: 'x' }, 'a'.repeat(256));
    expect(r.status).toBe(400);
    expect(r.body.error.details.errors[0].path).toBe('/headers/idempotency-key');
  });

  it('an asynchronous request answers the id of the first one (responses background, media async, media operations)', async () => {
    const key = newKey();
    const a = await post('/v1/responses', { model: STACK_MODELS.chat, input: 'later', background: true }, key);
    const b = await post('/v1/responses', { model: STACK_MODELS.chat, input: 'later', background: true }, key);
    expect(a.body.status).toBe('queued');
    expect(b.body.id).toBe(a.body.id);

    const mkey = newKey();
    const body = { model: STACK_MODELS.audio, input: { prompt: 'A calm melody', duration: 7 }, async: true };
    const m1 = await post('/v1/media', body, mkey);
    const m2 = await post('/v1/media', body, mkey);
    expect(m1.status).toBe(202);
    expect(m2.body.id).toBe(m1.body.id);
    await until(async () => (await s.t.db.generation.findFirstOrThrow({ where: { id: m1.body.id } })).status === 'completed');
    const m3 = await post('/v1/media', body, mkey);
    expect(m3.status).toBe(200);
    expect(m3.body).toMatchObject({ id: m1.body.id, status: 'completed', usage: { cost_rub: 2 } });
    expect(await ledgerEntries(m1.body.id)).toBe(1);

    // media operations: the same extend of the same source is one generation
    const video = await post('/v1/media', { model: STACK_MODELS.video, input: { prompt: 'A wave', duration: 4 }, async: true });
    await until(async () => (await s.t.db.generation.findFirstOrThrow({ where: { id: video.body.id } })).status === 'completed');
    const okey = newKey();
    const extend = { operation: 'extend', params: { prompt: 'Then a storm', duration: 4 }, async: true };
    const o1 = await post(`/v1/media/${video.body.id}/operations`, extend, okey);
    const o2 = await post(`/v1/media/${video.body.id}/operations`, extend, okey);
    expect(o1.status).toBe(202);
    expect(o2.body.id).toBe(o1.body.id);
    expect(await s.t.db.generation.count({ where: { sourceGenerationId: video.body.id } })).toBe(1);
  });

  it('replays images, embeddings and typed questions with the same body', async () => {
    const ikey = newKey();
    const img = { model: STACK_MODELS.image, prompt: 'A kite' };
    const i1 = await post('/v2/images/generations', img, ikey);
    const i2 = await post('/v2/images/generations', img, ikey);
    expect(i1.status).toBe(200);
    expect(i2.body).toEqual(i1.body);

    const ekey = newKey();
    const emb = { model: STACK_MODELS.embedding, input: ['a', 'b'] };
    const e1 = await post('/v1/embeddings', emb, ekey);
    const e2 = await post('/v1/embeddings', emb, ekey);
    expect(e1.status).toBe(200);
    expect(e2.body).toEqual(e1.body);
    expect(await ledgerEntries(e1.body.id)).toBe(1);

    s.fake.setKnobs({ logprobs: [{ Y: -0.1, N: -2.5 }], promptTokens: 100, completionTokens: 1 });
    const qkey = newKey();
    const q = { model: STACK_MODELS.chat, state: { message: 'The sky is blue.' }, questions: { blue: { type: 'noul', instructions: 'Is the sky blue?' } } };
    const q1 = await post('/v1/systemone', q, qkey);
    const q2 = await post('/v1/systemone', q, qkey);
    expect(q1.status).toBe(200);
    expect(q2.body).toEqual(q1.body);
  });

  it('a failed generation that cost nothing frees its key: the repeat runs anew', async () => {
    // `failTimes` fails the next request the fake sees: no generation of an earlier test (the media operation left
    // running above polls the fake) may take it.
    await until(async () => (await s.t.db.generation.count({ where: { organizationId: org.organizationId, status: { in: ['pending', 'processing'] } } })) === 0, 20_000);
    s.fake.setKnobs({ status: 500, failTimes: 1 });
    const key = newKey();
    const body = { model: STACK_MODELS.chat, input: 'flaky' };
    const first = await post('/v1/responses', body, key);
    expect(first.status).toBe(502);
    const second = await post('/v1/responses', body, key);
    expect(second.status).toBe(200);
    expect(second.body.id).not.toBe(first.body.error.metadata?.generation_id);
    const third = await post('/v1/responses', body, key);
    expect(third.body.id).toBe(second.body.id);
  });

  it('a key older than 24 hours is forgotten', async () => {
    const key = newKey();
    const body = { model: STACK_MODELS.chat, input: 'yesterday' };
    const first = await post('/v1/responses', body, key);
    await s.t.db.idempotencyKey.update({ where: { organizationId_caller_key: { organizationId: org.organizationId, caller: org.key.id, key } }, data: { createdAt: new Date(Date.now() - 25 * 3600_000) } });
    const second = await post('/v1/responses', body, key);
    expect(second.status).toBe(200);
    expect(second.body.id).not.toBe(first.body.id);
  });

  it('the maintenance sweep deletes keys past their 24 hours and keeps the others', async () => {
    const old = newKey();
    const fresh = newKey();
    for (const key of [old, fresh]) await post('/v1/responses', { model: STACK_MODELS.chat, input: 'sweep' }, key);
    await s.t.db.idempotencyKey.update({ where: { organizationId_caller_key: { organizationId: org.organizationId, caller: org.key.id, key: old } }, data: { createdAt: new Date(Date.now() - 25 * 3600_000) } });
    const out = await maintenanceProcessor(s.workerDeps)({ name: MAINTENANCE_JOBS.deleteExpiredFiles } as Job);
    // The same sweep runs the sessions' (test/api/session.test.ts).
    expect(out).toMatchObject({ idempotencyKeys: 1, sessions: { sessions: expect.any(Number), links: expect.any(Number) } });
    expect(await s.t.db.idempotencyKey.findMany({ where: { key: { in: [old, fresh] } }, select: { key: true } })).toEqual([{ key: fresh }]);
  });

  it('streams: a repeat of a finished stream replays it as a stream; one still streaming is 409', async () => {
    s.fake.setKnobs({ text: 'Streamed once', streamChunks: 3, chunkDelayMs: 200 });
    const key = newKey();
    const body = { model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'stream' }], stream: true };
    const firstP = post('/v1/chat/completions', body, key).then((r) => r); // supertest sends on then()
    await until(async () => (await s.t.db.idempotencyKey.count({ where: { key } })) === 1);
    const during = await post('/v1/chat/completions', body, key);
    expect(during.status).toBe(409);
    expect(during.body.error.message).toContain('still streaming');
    expect(during.headers['x-should-retry']).toBe('true'); // passes once the first stream has ended
    const first = await firstP;
    const replay = await post('/v1/chat/completions', body, key);
    expect(replay.status).toBe(200);
    expect(replay.headers['content-type']).toContain('text/event-stream');
    const text = (sse: string) =>
      sse
        .split('\n')
        .filter((l) => l.startsWith('data: {'))
        .map((l) => JSON.parse(l.slice(6)).choices?.[0]?.delta?.content ?? '')
        .join('');
    expect(text(first.text)).toBe('Streamed once');
    expect(text(replay.text)).toBe('Streamed once');
    expect(replay.text.trim().endsWith('data: [DONE]')).toBe(true);
    const id = JSON.parse(first.text.split('\n').find((l) => l.startsWith('data: {'))!.slice(6)).id;
    expect(replay.text).toContain(id);
    expect(await ledgerEntries(id)).toBe(1);
  });
});
