import OpenAI from 'openai';
import request from 'supertest';
import { money } from '../../shared/money';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitUntil } from '../helpers/until';

let s: TestStack;
let org: StackOrg;
let client: OpenAI;

beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: '5000', MEDIA_POLL_MS: '30', MEDIA_POLL_MAX_MS: '100' } });
  org = await s.seed({ balance: '1000' });
  client = new OpenAI({ apiKey: org.key.key, baseURL: `${s.url}/v1`, maxRetries: 0 });
});
afterEach(() => s.fake.setKnobs({}));
afterAll(() => s.close());

const gen = (body: Record<string, unknown>, path = '/v2/images/generations') => request(s.app).post(path).set(org.auth).send(body);
const money6 = (v: unknown) => money(v as string).toNumber();

async function account(organizationId = org.organizationId) {
  const o = await s.t.db.organization.findUniqueOrThrow({ where: { id: organizationId } });
  return { balance: money6(o.balance), reserved: money6(o.reserved), spent: money6(o.spent) };
}

const upstreamImageCalls = () => s.fake.requests.filter((r) => r.path === '/openai/v1/images/generations');

const until = <T>(fn: () => Promise<T | undefined>) => waitUntil(fn, 8_000, 50);

describe('the official openai SDK at the v1 root', () => {
  it('images.generate answers our own file URLs, charges price.image × n + request, and the file serves PNG bytes', async () => {
    const before = await account();
    const r = await client.images.generate({ model: STACK_MODELS.image, prompt: 'A lighthouse at dusk', n: 2, size: '1024x1024' });
    expect(r.data).toHaveLength(2);
    for (const d of r.data ?? []) {
      expect(d.url).toMatch(new RegExp(`^${s.url}/v1/files/file_[A-Za-z0-9]+/content\\?exp=\\d+&sig=`));
      expect(d.b64_json).toBeUndefined();
    }
    // gpt-image-1 in the stack: 6 RUB per image + 0.5 per request.
    const usage = r.usage as unknown as Record<string, number>;
    expect(usage).toMatchObject({ input_units: 0, output_units: 2, cost_rub: 12.5, cost: 12.5 });
    expect(usage.output_tokens).toBeGreaterThan(0);
    const after = await account();
    expect(before.balance - after.balance).toBeCloseTo(12.5, 6);
    expect(after.reserved).toBe(0);

    const file = await fetch(r.data![0].url!);
    expect(file.status).toBe(200);
    expect(file.headers.get('content-type')).toBe('image/png');
    expect((await file.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });

  it('images.generate with response_format b64_json answers the stored bytes as base64 and no url', async () => {
    const r = await client.images.generate({ model: STACK_MODELS.image, prompt: 'A red square', n: 2, response_format: 'b64_json' });
    expect(r.data).toHaveLength(2);
    for (const d of r.data ?? []) {
      expect(d.b64_json).toEqual(expect.any(String));
      expect(d.b64_json!.length).toBeGreaterThan(0);
      expect(d.url).toBeUndefined();
      expect(Object.keys(d)).not.toContain('url');
    }
    const files = await s.t.db.storedFile.findMany({ where: { organizationId: org.organizationId }, orderBy: { createdAt: 'desc' }, take: 2 });
    const stored = Buffer.from(await (await fetch(s.ctx.files.fileUrl(files[0].id))).arrayBuffer());
    expect(r.data!.some((d) => Buffer.from(d.b64_json!, 'base64').equals(stored))).toBe(true);
  });

  it('POST /v1/images/generations and /v2/images/generations answer alike', async () => {
    const v1 = await gen({ model: STACK_MODELS.image, prompt: 'x' }, '/v1/images/generations');
    const v2 = await gen({ model: STACK_MODELS.image, prompt: 'x' });
    expect(v1.status).toBe(200);
    expect(v2.status).toBe(200);
    expect(Object.keys(v1.body).sort()).toEqual(Object.keys(v2.body).sort());
  });
});

describe('request fields per model generation', () => {
  it('sends the legacy model its own fields (quality hd, style) and asks for base64; auto values are left to the provider', async () => {
    const r = await gen({ model: STACK_MODELS.imageLegacy, prompt: 'A fox', quality: 'hd', style: 'natural', size: '1792x1024', user: 'u-1' });
    expect(r.status).toBe(200);
    expect(r.body.data[0].revised_prompt).toBe('A fox');
    expect(r.body.usage.cost_rub).toBe(4);
    const sent = upstreamImageCalls().at(-1)!.body as Record<string, unknown>;
    expect(sent).toEqual({ model: 'dall-e-3', prompt: 'A fox', n: 1, size: '1792x1024', quality: 'hd', style: 'natural', response_format: 'b64_json', user: 'u-1' });
  });

  it('sends a newer model output_format, background and output_compression; defaults (auto) are not sent', async () => {
    const r = await gen({ model: STACK_MODELS.image, prompt: 'A logo', output_format: 'webp', background: 'transparent', output_compression: 50, quality: 'high' });
    expect(r.status).toBe(200);
    const sent = upstreamImageCalls().at(-1)!.body as Record<string, unknown>;
    expect(sent).toEqual({ model: 'gpt-image-1', prompt: 'A logo', n: 1, quality: 'high', background: 'transparent', output_format: 'webp', output_compression: 50 });
    const file = await s.t.db.storedFile.findFirstOrThrow({ where: { id: /file_[A-Za-z0-9]+/.exec(r.body.data[0].url)![0] } });
    expect(file).toMatchObject({ mimeType: 'image/webp', source: 'AI_GENERATION', storagePolicy: 'TEMP_GENERATION', fileType: 'IMAGE' });
  });

  it.each([
    ['n above 10', { model: STACK_MODELS.image, prompt: 'x', n: 11 }, '/n'],
    ['n below 1', { model: STACK_MODELS.image, prompt: 'x', n: 0 }, '/n'],
    ['n not an integer', { model: STACK_MODELS.image, prompt: 'x', n: 1.5 }, '/n'],
    ['n above 1 on the legacy model', { model: STACK_MODELS.imageLegacy, prompt: 'x', n: 2 }, '/n'],
    ['n above the maxImages of the catalog entry', { model: STACK_MODELS.imageHosted, prompt: 'x', n: 5 }, '/n'],
    ['prompt over 32000 characters', { model: STACK_MODELS.image, prompt: 'x'.repeat(32001) }, '/prompt'],
    ['prompt over 4000 characters on the legacy model', { model: STACK_MODELS.imageLegacy, prompt: 'x'.repeat(4001) }, '/prompt'],
    ['an empty prompt', { model: STACK_MODELS.image, prompt: '' }, '/prompt'],
    ['no prompt', { model: STACK_MODELS.image }, '/prompt'],
    ['no model', { prompt: 'x' }, '/model'],
    ['an unknown size', { model: STACK_MODELS.image, prompt: 'x', size: '100x100' }, '/size'],
    ['an unknown quality', { model: STACK_MODELS.image, prompt: 'x', quality: 'ultra' }, '/quality'],
    ['hd on a newer model', { model: STACK_MODELS.image, prompt: 'x', quality: 'hd' }, '/quality'],
    ['high on the legacy model', { model: STACK_MODELS.imageLegacy, prompt: 'x', quality: 'high' }, '/quality'],
    ['style on a newer model', { model: STACK_MODELS.image, prompt: 'x', style: 'vivid' }, '/style'],
    ['an unknown style', { model: STACK_MODELS.imageLegacy, prompt: 'x', style: 'pastel' }, '/style'],
    ['output_format on the legacy model', { model: STACK_MODELS.imageLegacy, prompt: 'x', output_format: 'png' }, '/output_format'],
    ['an unknown output_format', { model: STACK_MODELS.image, prompt: 'x', output_format: 'gif' }, '/output_format'],
    ['background on the legacy model', { model: STACK_MODELS.imageLegacy, prompt: 'x', background: 'transparent' }, '/background'],
    ['a transparent jpeg', { model: STACK_MODELS.image, prompt: 'x', background: 'transparent', output_format: 'jpeg' }, '/background'],
    ['output_compression above 100', { model: STACK_MODELS.image, prompt: 'x', output_compression: 101 }, '/output_compression'],
    ['output_compression below 0', { model: STACK_MODELS.image, prompt: 'x', output_compression: -1 }, '/output_compression'],
    ['output_compression on the legacy model', { model: STACK_MODELS.imageLegacy, prompt: 'x', output_compression: 50 }, '/output_compression'],
    ['an unknown response_format', { model: STACK_MODELS.image, prompt: 'x', response_format: 'xml' }, '/response_format'],
    ['an unknown field', { model: STACK_MODELS.image, prompt: 'x', colour: 'red' }, '/colour'],
    ['a bad routing object', { model: STACK_MODELS.image, prompt: 'x', provider: { sort: 'fastest' } }, '/provider/sort'],
  ])('refuses %s with 400 naming the field', async (_what, body, path) => {
    const calls = upstreamImageCalls().length;
    const r = await gen(body);
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('BAD_REQUEST');
    expect(r.body.error.details.errors.map((e: { path: string }) => e.path)).toContain(path);
    expect(upstreamImageCalls().length).toBe(calls);
  });

  it('answers 404 for an unknown model and for a model that is not an image model', async () => {
    for (const model of ['nobody/nothing', STACK_MODELS.chat]) {
      const r = await gen({ model, prompt: 'x' });
      expect(r.status).toBe(404);
      expect(r.body.error.metadata.reason).toBe('model_not_found');
    }
  });

  it('treats null optional fields as absent', async () => {
    const r = await gen({ model: STACK_MODELS.image, prompt: 'x', style: null, n: null, user: null });
    expect(r.status).toBe(200);
  });
});

describe('a size the model does not offer (interface.md lists every size for every model)', () => {
  it('is sent as the nearest size the model offers, with a warning; a hosted model takes it as its aspect ratio', async () => {
    const last = async () => {
      await s.settled(org.organizationId);
      return s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId }, orderBy: { createdAt: 'desc' } });
    };
    const cases = [
      [STACK_MODELS.image, '1792x1024', '1536x1024'],
      [STACK_MODELS.image, '512x512', '1024x1024'],
      [STACK_MODELS.imageLegacy, '1024x1536', '1024x1792'],
    ] as const;
    for (const [model, size, sent] of cases) {
      const r = await gen({ model, prompt: 'x', size });
      expect(r.status).toBe(200);
      expect(upstreamImageCalls().at(-1)!.body).toMatchObject({ size: sent });
      expect((await last()).warnings).toEqual([`Value "${size}" of parameter 'size' is not offered by ${model} via openai: "${sent}" was used instead`]);
    }
    const offered = await gen({ model: STACK_MODELS.image, prompt: 'x', size: '1536x1024' });
    expect(upstreamImageCalls().at(-1)!.body).toMatchObject({ size: '1536x1024' });
    expect(offered.status).toBe(200);
    expect((await last()).warnings ?? []).toEqual([]);

    const hosted = await gen({ model: STACK_MODELS.imageHosted, prompt: 'x', size: '1792x1024' });
    expect(hosted.status).toBe(200);
    const creates = s.fake.requests.filter((q) => q.method === 'POST' && q.path === '/replicate/v1/models/black-forest-labs/flux-schnell/predictions');
    expect(creates.at(-1)!.body).toMatchObject({ input: { aspect_ratio: '16:9' } });
  });
});

describe('images through a hosted model (Replicate predictions)', () => {
  it('creates one prediction, polls it, stores every output and charges per image', async () => {
    s.fake.setKnobs({ replicateSteps: 2 });
    const before = await account();
    const r = await gen({ model: STACK_MODELS.imageHosted, prompt: 'Mountains', n: 3, size: '1536x1024', output_format: 'png' });
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(3);
    expect(new Set(r.body.data.map((d: { url: string }) => d.url)).size).toBe(3);
    expect(r.body.usage).toMatchObject({ output_units: 3, cost_rub: 4.5 });
    const creates = s.fake.requests.filter((q) => q.method === 'POST' && q.path === '/replicate/v1/models/black-forest-labs/flux-schnell/predictions');
    expect(creates.at(-1)!.body).toEqual({ input: { prompt: 'Mountains', num_outputs: 3, aspect_ratio: '3:2', output_format: 'png' } });
    expect((await account()).balance).toBeCloseTo(before.balance - 4.5, 6);
  });
});

describe('the synchronous wait (SYNC_WAIT_MS)', () => {
  it('answers 202 with the pending body past the wait; the job goes on and GET /v1/media/{id} shows it completed', async () => {
    // Held inside its provider call past the wait (5 s here: a hosted model's polls and stored outputs fit in it on a
    // busy machine), let go once its pending record has been read.
    s.fake.setKnobs({ holdReplies: true });
    const r = await gen({ model: STACK_MODELS.image, prompt: 'slow' });
    expect(r.status).toBe(202);
    expect(Object.keys(r.body).sort()).toEqual(['created', 'id', 'model', 'status', 'taskId']);
    expect(r.body).toMatchObject({ status: 'pending', model: STACK_MODELS.image, taskId: r.body.id });
    expect(r.headers['retry-after']).toBe('3');
    const polled = await request(s.app).get(`/v1/media/${r.body.id}`).set(org.auth);
    expect(polled.status).toBe(200);
    expect(['pending', 'processing']).toContain(polled.body.status);
    expect(polled.headers['retry-after']).toBe('3');
    s.fake.setKnobs({});
    const done = await until(async () => {
      const g = await request(s.app).get(`/v1/media/${r.body.id}`).set(org.auth);
      return g.body.status === 'completed' ? g : undefined;
    });
    expect(done.headers['retry-after']).toBeUndefined();
    expect(done.body).toMatchObject({ object: 'media.generation', model: STACK_MODELS.image, usage: { output_units: 1, cost_rub: 6.5 } });
    expect(done.body.data.url).toMatch(/\/v1\/files\/file_/);
  });
});

describe('failures and money', () => {
  it('a provider failure answers 502 with the provider named; the record is failed without trace_id; nothing is charged', async () => {
    s.fake.setKnobs({ status: 500 });
    const before = await account();
    const r = await gen({ model: STACK_MODELS.image, prompt: 'x' });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ code: 'BAD_GATEWAY', metadata: { reason: 'all_providers_failed', provider_name: 'openai' } });
    const after = await account();
    expect(after).toEqual(before);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId }, orderBy: { createdAt: 'desc' } });
    const rec = await request(s.app).get(`/v1/media/${g.id}`).set(org.auth);
    expect(rec.body.status).toBe('failed');
    expect(rec.body.error).toMatchObject({ code: 'BAD_GATEWAY', metadata: { provider_name: 'openai' } });
    expect(typeof rec.body.error.metadata.raw).toBe('string');
    expect(rec.body.error.trace_id).toBeUndefined();
    expect(rec.body.usage).toBeUndefined();
    // Recorded as every generation kind records its attempts.
    expect((g.routing as { attempts: unknown[] }).attempts).toEqual([expect.objectContaining({ provider: 'openai', reason: 'provider_error', status: 500 })]);
  });

  it('answers 402 when the balance does not cover price × n, without calling the provider', async () => {
    const poor = await s.seed({ balance: '10' });
    const calls = upstreamImageCalls().length;
    const r = await request(s.app).post('/v2/images/generations').set(poor.auth).send({ model: STACK_MODELS.image, prompt: 'x', n: 2 });
    expect(r.status).toBe(402);
    expect(r.body.error.metadata.reason).toBe('balance_insufficient');
    expect(upstreamImageCalls().length).toBe(calls);
  });

  it('keeps the ledger in step: every charge is a ledger entry and nothing stays reserved', async () => {
    const a = await account();
    const charges = await s.t.db.ledgerEntry.findMany({ where: { organizationId: org.organizationId, kind: 'charge' } });
    const charged = charges.reduce((sum, e) => sum.plus(money(e.amount.toString()).neg()), money(0));
    expect(charged.toNumber()).toBeCloseTo(a.spent, 6);
    expect(a.reserved).toBe(0);
  });

  it('shows a generation only to the key that made it', async () => {
    const r = await gen({ model: STACK_MODELS.image, prompt: 'x' });
    expect(r.status).toBe(200);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { organizationId: org.organizationId }, orderBy: { createdAt: 'desc' } });
    const other = await s.seed();
    const sibling = await org.accounts.createKey({ organizationId: org.organizationId, name: 'sibling' });
    for (const auth of [other.auth, { Authorization: `Bearer ${sibling.key}` }]) {
      const res = await request(s.app).get(`/v1/media/${g.id}`).set(auth);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    // The organization's owner (personal-account token) sees it.
    expect((await request(s.app).get(`/v2/media/${g.id}`).set({ Authorization: `Bearer ${org.ownerToken}` })).status).toBe(200);
  });
});
