import { Worker, type Job } from 'bullmq';
import request from 'supertest';
import { money } from '../../shared/money';
import { createRedis } from '../../shared/queue/redis';
import { QUEUES } from '../../shared/queue/queue-names';
import type { MediaJobData } from '../../shared/queue/job-catalog';
import { MediaExecutor } from '../../workers/services/media-executor';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { MP4_FILE_SECONDS } from '../../fakes/synth';
import { waitUntil } from '../helpers/until';
import { seedKey } from '../helpers/fixtures';

const ENV = { SYNC_WAIT_MS: '3000', MEDIA_POLL_MS: '30', MEDIA_POLL_MAX_MS: '80' };
let s: TestStack;
let org: StackOrg;

/** An OpenAI image model whose catalog entry supports quality and output_format (the stack's gpt-image-1 supports none). */
const IMAGE_WITH_OPTIONS = 'acme/gpt-image-options';

beforeAll(async () => {
  s = await createTestStack({
    env: ENV,
    catalogOverrides: {
      models: {
        [IMAGE_WITH_OPTIONS]: {
          displayName: 'GPT Image 1 with options',
          type: 'image',
          endpoints: [{ provider: 'openai', upstreamModel: 'gpt-image-1', price: { image: 6 }, supports: ['quality', 'output_format', 'max_images', 'background'], maxImages: 10 }],
        },
      },
    },
  });
  org = await s.seed({ balance: '5000' });
});
afterEach(() => s.fake.setKnobs({}));
afterAll(() => s.close());

const media = (body: Record<string, unknown>, auth = org.auth) => request(s.app).post('/v1/media').set(auth).send(body);
const read = (id: string, auth = org.auth) => request(s.app).get(`/v1/media/${id}`).set(auth);
const operate = (id: string, body: Record<string, unknown>) => request(s.app).post(`/v1/media/${id}/operations`).set(org.auth).send(body);
const cancel = (id: string) => request(s.app).post(`/v1/media/${id}/cancel`).set(org.auth).send();

async function account() {
  const o = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
  return { balance: money(o.balance.toString()).toNumber(), reserved: money(o.reserved.toString()).toNumber() };
}

const until = <T>(fn: () => Promise<T | undefined>) => waitUntil(fn, 8_000);

const finished = (id: string) => until(async () => {
  const r = await read(id);
  return ['completed', 'failed', 'cancelled'].includes(r.body.status) ? r : undefined;
});

const predictionsCreated = (model: string) => s.fake.requests.filter((q) => q.method === 'POST' && q.path === `/replicate/v1/models/${model}/predictions`);

describe('POST /v1/media, synchronous', () => {
  it('generates a video: data {url, mime_type, duration_seconds, file_id}, usage with cost = video_per_second × seconds + request, warnings for what the model ignores', async () => {
    const before = await account();
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'A wave', duration: 4, aspect_ratio: '16:9', seed: 7, watermark: 'acme' } });
    expect(r.status).toBe(200);
    expect(r.headers['retry-after']).toBeUndefined();
    expect(r.body).toMatchObject({ object: 'media.generation', status: 'completed', model: STACK_MODELS.video });
    expect(r.body.id).toMatch(/^gen_/);
    expect(r.body.completed_at).toBeGreaterThanOrEqual(r.body.created);
    expect(r.body.data).toEqual({ url: expect.stringMatching(/\/v1\/files\/file_/), mime_type: 'video/mp4', file_id: expect.stringMatching(/^file_/), duration_seconds: 4 });
    // veo-3 in the stack: 10 RUB a second + 1 per request.
    expect(r.body.usage).toEqual({ input_units: 0, output_units: 1, duration_seconds: 4, cost_rub: 41, cost: 41 });
    expect(r.body.warnings).toEqual(["Parameter 'watermark' is not supported by google/veo-3 via replicate and was ignored"]);
    expect(r.body.taskId).toBeUndefined();
    expect(predictionsCreated('google/veo-3').at(-1)!.body).toEqual({ input: { prompt: 'A wave', duration: 4, aspect_ratio: '16:9', seed: 7 } });
    expect((await account()).balance).toBeCloseTo(before.balance - 41, 6);
    const file = await fetch(r.body.data.url);
    expect(file.headers.get('content-type')).toBe('video/mp4');
    const stored = await s.t.db.storedFile.findUniqueOrThrow({ where: { id: r.body.data.file_id } });
    expect(stored).toMatchObject({ generationId: r.body.id, source: 'AI_GENERATION', fileType: 'VIDEO' });
  });

  it('bills the duration the provider reports, not the one asked for', async () => {
    s.fake.setKnobs({ mediaDurationSeconds: 6 });
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'A wave', duration: 4 } });
    expect(r.body.data.duration_seconds).toBe(6);
    expect(r.body.usage).toMatchObject({ duration_seconds: 6, cost_rub: 61 });
  });

  it('always puts duration_seconds in a completed video\'s data: the provider\'s, else the request\'s, else the file\'s', async () => {
    s.fake.setKnobs({ replicateNoDuration: true });
    const asked = await media({ model: STACK_MODELS.video, input: { prompt: 'A wave', duration: 4 } });
    expect(asked.body.data).toMatchObject({ mime_type: 'video/mp4', duration_seconds: 4 });
    expect(asked.body.usage).toMatchObject({ duration_seconds: 4, cost_rub: 41 });
    const unasked = await media({ model: STACK_MODELS.video, input: { prompt: 'A wave' } });
    expect(unasked.body.data).toMatchObject({ mime_type: 'video/mp4', duration_seconds: MP4_FILE_SECONDS });
    expect(unasked.body.usage).toMatchObject({ duration_seconds: MP4_FILE_SECONDS, cost_rub: MP4_FILE_SECONDS * 10 + 1 });
    const extended = await operate(unasked.body.id, { operation: 'extend', params: { prompt: 'More' } });
    expect(extended.body.data.duration_seconds).toBe(MP4_FILE_SECONDS);
    const audio = await media({ model: STACK_MODELS.audio, input: { prompt: 'A calm melody' } });
    expect(audio.body.data.duration_seconds).toBeGreaterThan(0);
    s.fake.setKnobs({ mediaDurationSeconds: 7 });
    const reported = await media({ model: STACK_MODELS.video, input: { prompt: 'A wave' } });
    expect(reported.body.data.duration_seconds).toBe(7);
  });

  it('generates audio with its mime type and duration, billed per request', async () => {
    const r = await media({ model: STACK_MODELS.audio, input: { prompt: 'A calm melody', duration: 7 } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ mime_type: 'audio/mpeg', duration_seconds: 7 });
    expect(r.body.usage).toMatchObject({ duration_seconds: 7, cost_rub: 2 });
  });

  it('puts several results in data.items, with data.url the first; images count as input_units', async () => {
    const r = await media({ model: STACK_MODELS.imageHosted, input: { prompt: 'Cats', max_images: 3, images: [{ type: 'url', data: 'https://example.com/ref.png' }] } });
    expect(r.status).toBe(200);
    expect(r.body.data.items).toHaveLength(3);
    expect(r.body.data.url).toBe(r.body.data.items[0].url);
    expect(r.body.data.items.every((i: { mime_type: string }) => i.mime_type === 'image/png')).toBe(true);
    expect(r.body.usage).toMatchObject({ input_units: 1, output_units: 3, cost_rub: 4.5 });
    expect(predictionsCreated('black-forest-labs/flux-schnell').at(-1)!.body).toEqual({ input: { prompt: 'Cats', num_outputs: 3, image: 'https://example.com/ref.png' } });
  });

  it('runs an OpenAI-style image model through its images operation, reporting the input fields it ignores', async () => {
    const r = await media({ model: STACK_MODELS.image, input: { prompt: 'A kite', max_images: 2, aspect_ratio: '1:1' } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'completed', data: { mime_type: 'image/png' }, usage: { output_units: 1, cost_rub: 6.5 } });
    expect([...r.body.warnings].sort()).toEqual([
      "Parameter 'aspect_ratio' is not supported by openai/gpt-image-1 via openai and was ignored",
      "Parameter 'max_images' is not supported by openai/gpt-image-1 via openai and was ignored",
    ]);
    const sent = s.fake.requests.filter((q) => q.path === '/openai/v1/images/generations').at(-1)!.body;
    expect(sent).toEqual({ model: 'gpt-image-1', prompt: 'A kite' });
  });

  it('reports in warnings the values and fields an OpenAI-style image model cannot take, and sends those it can', async () => {
    const r = await media({ model: IMAGE_WITH_OPTIONS, input: { prompt: 'A kite', quality: 'ultra', output_format: 'gif', background: 'transparent' } });
    expect(r.body).toMatchObject({ status: 'completed', data: { mime_type: 'image/png' } });
    expect(r.body.warnings).toEqual([
      `Parameter 'background' is not supported by ${IMAGE_WITH_OPTIONS} via openai and was ignored`,
      `Value "gif" of parameter 'output_format' is not supported by ${IMAGE_WITH_OPTIONS} via openai and was ignored`,
      `Value "ultra" of parameter 'quality' is not supported by ${IMAGE_WITH_OPTIONS} via openai and was ignored`,
    ]);
    expect((await read(r.body.id)).body.warnings).toEqual(r.body.warnings);
    expect(s.fake.requests.filter((q) => q.path === '/openai/v1/images/generations').at(-1)!.body).toEqual({ model: 'gpt-image-1', prompt: 'A kite' });

    const honoured = await media({ model: IMAGE_WITH_OPTIONS, input: { prompt: 'A kite', quality: 'high', output_format: 'webp' } });
    expect(honoured.body).toMatchObject({ status: 'completed', data: { mime_type: 'image/webp' } });
    expect(honoured.body.warnings).toBeUndefined();
    expect(s.fake.requests.filter((q) => q.path === '/openai/v1/images/generations').at(-1)!.body).toEqual({ model: 'gpt-image-1', prompt: 'A kite', quality: 'high', output_format: 'webp' });
  });

  it('reports a failed generation inside the record (200, status failed, error without trace_id) and charges nothing', async () => {
    s.fake.setKnobs({ replicateFail: true, text: 'CUDA out of memory' });
    const before = await account();
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'x' } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('failed');
    expect(r.body.error).toEqual({
      code: 'BAD_GATEWAY',
      message: 'The provider failed the generation: CUDA out of memory',
      metadata: { reason: 'provider_error', raw: 'CUDA out of memory', provider_name: 'replicate' },
    });
    expect(r.body.data).toBeUndefined();
    expect(r.body.usage).toBeUndefined();
    expect(await account()).toEqual(before);
  });

  it('fails with the provider named when the prediction cannot be created', async () => {
    s.fake.setKnobs({ status: 422 });
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'x' } });
    expect(r.body.status).toBe('failed');
    expect(r.body.error).toMatchObject({ code: 'BAD_REQUEST', metadata: { reason: 'provider_error', provider_name: 'replicate' } });
  });
});

describe('a video longer than asked (reservation = the endpoint\'s longest output, maxDurationSeconds 10)', () => {
  const overrun = async () => s.workerDeps.metrics.mediaUncharged.total({ provider: 'replicate' }).toNumber();

  it('reserves the longest output, not the asked duration, and charges usage × price within it', async () => {
    s.fake.setKnobs({ mediaDurationSeconds: 8, replicateSteps: 3 });
    const before = await account();
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'A wave', duration: 5 }, async: true });
    const reservation = await s.t.db.reservation.findUniqueOrThrow({ where: { generationId: r.body.id } });
    expect(money(reservation.amount.toString()).toNumber()).toBe(101); // 10 s × 10 + 1, not 5 s × 10 + 1
    const done = await finished(r.body.id);
    expect(done.body).toMatchObject({ status: 'completed', data: { duration_seconds: 8 }, usage: { duration_seconds: 8, cost_rub: 81, cost: 81 } });
    expect((await account()).balance).toBeCloseTo(before.balance - 81, 6);
    const row = await s.t.db.generation.findFirstOrThrow({ where: { id: r.body.id } });
    expect((row.routing as Record<string, unknown>).overrun).toBeUndefined();
  });

  it('a provider beyond even that is charged the bound; the difference goes to the metric and the generation\'s routing.overrun', async () => {
    s.fake.setKnobs({ mediaDurationSeconds: 20 });
    const before = await account();
    const metricBefore = await overrun();
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'A wave', duration: 5 } });
    expect(r.body).toMatchObject({ status: 'completed', data: { duration_seconds: 20 }, usage: { duration_seconds: 20, cost_rub: 101 } });
    expect((await account()).balance).toBeCloseTo(before.balance - 101, 6);
    expect((await account()).reserved).toBe(0);
    const row = await s.t.db.generation.findFirstOrThrow({ where: { id: r.body.id } });
    expect((row.routing as Record<string, unknown>).overrun).toEqual({
      uncharged_rub: '100.000000',
      priced_rub: '201.000000',
      charged_rub: '101.000000',
      duration_seconds: 20,
      max_duration_seconds: 10,
    });
    expect(money(row.clientCost.toString()).toNumber()).toBe(101);
    expect((await overrun()) - metricBefore).toBe(100);
    const charge = await s.t.db.ledgerEntry.findFirstOrThrow({ where: { generationId: r.body.id, kind: 'charge' } });
    expect(money(charge.amount.toString()).abs().toNumber()).toBe(101);
  });
});

describe('POST /v1/media, asynchronous, and the states a poller sees', () => {
  it('async: true answers the pending record at once (202, Retry-After 5), then processing, then completed', async () => {
    s.fake.setKnobs({ replicateSteps: 6 });
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'slow' }, async: true });
    expect(r.status).toBe(202);
    expect(r.headers['retry-after']).toBe('5');
    expect(r.body).toMatchObject({ object: 'media.generation', status: 'pending', model: STACK_MODELS.video, taskId: r.body.id });
    expect(r.body.completed_at).toBeUndefined();
    const seen = new Set<string>();
    const done = await until(async () => {
      const g = await read(r.body.id);
      seen.add(g.body.status);
      if (g.body.status === 'processing') expect(g.headers['retry-after']).toBe('5');
      return g.body.status === 'completed' ? g : undefined;
    });
    expect(seen.has('processing')).toBe(true);
    expect(done.body.data.url).toBeDefined();
    // One prediction for the whole life of the generation, polled until done.
    const polls = s.fake.requests.filter((q) => q.method === 'GET' && q.path.startsWith('/replicate/v1/predictions/'));
    expect(polls.length).toBeGreaterThanOrEqual(7);
  });

  it('GET /v2/media/{id} answers the same record; an unknown id or another key is 404', async () => {
    const r = await media({ model: STACK_MODELS.audio, input: { prompt: 'x' } });
    const v2 = await request(s.app).get(`/v2/media/${r.body.id}`).set(org.auth);
    expect(v2.body).toEqual(r.body);
    expect((await read('gen_doesnotexist')).status).toBe(404);
    const other = await s.seed();
    expect((await read(r.body.id, other.auth)).status).toBe(404);
  });
});

describe('text in a media reply (interface.md: `content`, the text a model returns instead of or with its file)', () => {
  it('keeps the text that comes with a file in content, next to data; billed as without it', async () => {
    s.fake.setKnobs({ replicateText: 'Here are your cats' });
    const before = await account();
    const r = await media({ model: STACK_MODELS.imageHosted, input: { prompt: 'Cats', max_images: 2 } });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'completed', content: 'Here are your cats', usage: { output_units: 2, cost_rub: 3 } });
    expect(r.body.data.items).toHaveLength(2);
    expect((await read(r.body.id)).body.content).toBe('Here are your cats');
    await s.settled(org.organizationId);
    expect((await account()).balance).toBeCloseTo(before.balance - 3, 6);
  });

  it('completes a text-only answer with content and no file, charged the request price alone (no seconds produced)', async () => {
    s.fake.setKnobs({ replicateText: 'I cannot film that, but here is a description.', replicateTextOnly: true });
    const before = await account();
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'A wave', duration: 4 }, async: true });
    const done = await finished(r.body.id);
    expect(done.body).toMatchObject({ status: 'completed', model: STACK_MODELS.video, content: 'I cannot film that, but here is a description.' });
    expect(done.body.error).toBeUndefined();
    expect(done.body.data).toBeUndefined();
    // veo-3 in the stack: 1 RUB a request + 10 a second; no video came back.
    expect(done.body.usage).toEqual({ input_units: 0, output_units: 0, cost_rub: 1, cost: 1 });
    expect(await s.t.db.storedFile.count({ where: { generationId: r.body.id } })).toBe(0);
    await s.settled(org.organizationId);
    expect(await account()).toEqual({ balance: expect.closeTo(before.balance - 1, 6), reserved: before.reserved });
    const history = await request(s.app).get(`/v1/history/generations/${r.body.id}`).set(org.auth);
    expect(history.body).toMatchObject({ status: 'completed', clientCost: '1.000000', unifiedModelId: STACK_MODELS.video });
    // A source without a file cannot be operated on.
    expect((await operate(r.body.id, { operation: 'upscale_1080p' })).status).toBe(409);
  });
});

describe('POST /v1/media validation', () => {
  it.each([
    ['no model', { input: { prompt: 'x' } }, '/model'],
    ['no input', { model: STACK_MODELS.video }, '/input'],
    ['input not an object', { model: STACK_MODELS.video, input: 'x' }, '/input'],
    ['no prompt for a video model', { model: STACK_MODELS.video, input: { aspect_ratio: '16:9' } }, '/input/prompt'],
    ['a seed that is not an integer', { model: STACK_MODELS.video, input: { prompt: 'x', seed: 'x' } }, '/input/seed'],
    ['an image without data', { model: STACK_MODELS.video, input: { prompt: 'x', images: [{ type: 'url' }] } }, '/input/images/0/data'],
    ['an image of an unknown type', { model: STACK_MODELS.video, input: { prompt: 'x', images: [{ type: 'file', data: 'x' }] } }, '/input/images/0/type'],
    ['an image URL that is not http(s)', { model: STACK_MODELS.video, input: { prompt: 'x', images: [{ type: 'url', data: 'ftp://x/y.png' }] } }, '/input/images/0/data'],
    ['strength above 1', { model: STACK_MODELS.video, input: { prompt: 'x', strength: 2 } }, '/input/strength'],
    ['max_images above 10', { model: STACK_MODELS.imageHosted, input: { prompt: 'x', max_images: 11 } }, '/input/max_images'],
    ['max_images above the model maximum', { model: STACK_MODELS.imageHosted, input: { prompt: 'x', max_images: 5 } }, '/input/max_images'],
    ['isEnhance not a boolean', { model: STACK_MODELS.video, input: { prompt: 'x', isEnhance: 'yes' } }, '/input/isEnhance'],
    ['font_inputs without text', { model: STACK_MODELS.video, input: { prompt: 'x', font_inputs: [{ font_url: 'https://x/f.ttf' }] } }, '/input/font_inputs/0/text'],
    ['a callBackUrl that is not a URL', { model: STACK_MODELS.video, input: { prompt: 'x', callBackUrl: 'not a url' } }, '/input/callBackUrl'],
    ['a callBackUrl with another scheme', { model: STACK_MODELS.video, input: { prompt: 'x', callBackUrl: 'ftp://example.com/hook' } }, '/input/callBackUrl'],
    ['a callBackUrl to a private address', { model: STACK_MODELS.video, input: { prompt: 'x', callBackUrl: 'http://127.0.0.1:9/hook' } }, '/input/callBackUrl'],
    ['async not a boolean', { model: STACK_MODELS.video, input: { prompt: 'x' }, async: 'yes' }, '/async'],
    ['an unknown field', { model: STACK_MODELS.video, input: { prompt: 'x' }, speed: 2 }, '/speed'],
  ])('refuses %s with 400 naming the field', async (_what, body, path) => {
    const r = await media(body);
    expect(r.status).toBe(400);
    expect(r.body.error.details.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('answers 404 for a chat model', async () => {
    expect((await media({ model: STACK_MODELS.chat, input: { prompt: 'x' } })).status).toBe(404);
  });

  it('excludes endpoints lacking a field when provider.require_parameters is true', async () => {
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'x', watermark: 'acme' }, provider: { require_parameters: true } });
    expect(r.status).toBe(400);
    expect(r.body.error.metadata.reason).toBe('parameters_unsupported');
  });
});

describe('POST /v1/media/{id}/operations', () => {
  let video: { id: string; data: { url: string } };
  beforeAll(async () => {
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'A beach', duration: 5 } });
    video = r.body;
  });

  it('extend with async: true answers a new pending generation whose model is the literal pending, then completes on the same model', async () => {
    const r = await operate(video.id, { operation: 'extend', params: { prompt: 'Then a storm', seeds: 42, duration: 6 }, async: true });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ object: 'media.generation', status: 'pending', model: 'pending' });
    expect(r.body.id).not.toBe(video.id);
    const done = await finished(r.body.id);
    expect(done.body).toMatchObject({ status: 'completed', model: STACK_MODELS.video, usage: { duration_seconds: 6, cost_rub: 61 } });
    expect(predictionsCreated('google/veo-3').at(-1)!.body).toEqual({ input: { prompt: 'Then a storm', video: expect.stringContaining(`${video.data.url.split('?')[0]}?exp=`), seed: 42, duration: 6 } });
    const row = await s.t.db.generation.findFirstOrThrow({ where: { id: r.body.id } });
    expect(row.sourceGenerationId).toBe(video.id);
  });

  it('an extend that fails or is cancelled names the model it ran on, not the literal pending', async () => {
    s.fake.setKnobs({ replicateFail: true });
    const failed = await operate(video.id, { operation: 'extend', params: { prompt: 'A storm' }, async: true });
    expect(failed.body).toMatchObject({ status: 'pending', model: 'pending' });
    expect((await finished(failed.body.id)).body).toMatchObject({ status: 'failed', model: STACK_MODELS.video });

    s.fake.setKnobs({ replicateSteps: 1000 });
    const running = await operate(video.id, { operation: 'extend', params: { prompt: 'A storm' }, async: true });
    expect(running.body).toMatchObject({ status: 'pending', model: 'pending' });
    expect((await cancel(running.body.id)).body).toMatchObject({ status: 'cancelled', model: STACK_MODELS.video });
    expect((await read(running.body.id)).body).toMatchObject({ status: 'cancelled', model: STACK_MODELS.video });
    const listed = await request(s.app).get('/v1/history/generations?limit=2').set(org.auth);
    expect(listed.body.items.map((i: { id: string; model: string }) => [i.id, i.model])).toEqual([
      [running.body.id, STACK_MODELS.video],
      [failed.body.id, STACK_MODELS.video],
    ]);
  });

  it("refuses an extend (403, uncharged, nothing sent) to a key no longer allowed the source's model", async () => {
    const k = await seedKey(org.accounts, org.organizationId, { models: [STACK_MODELS.video], name: 'video only' });
    const auth = { Authorization: `Bearer ${k.key}` };
    const own = await media({ model: STACK_MODELS.video, input: { prompt: 'A beach', duration: 5 } }, auth);
    expect(own.body.status).toBe('completed');
    await request(s.app).patch(`/v1/keys/${k.id}`).set({ Authorization: `Bearer ${org.ownerToken}` }).send({ allowed_models: [STACK_MODELS.imageHosted] }).expect(200);
    const sent = predictionsCreated('google/veo-3').length;
    const before = await account();
    const r = await request(s.app).post(`/v1/media/${own.body.id}/operations`).set(auth).send({ operation: 'extend', params: { prompt: 'More' } });
    expect(r.status).toBe(403);
    expect(r.body.error.message).toContain(STACK_MODELS.video);
    expect(predictionsCreated('google/veo-3')).toHaveLength(sent);
    expect(await account()).toEqual(before);
  });

  it('extend without async waits for the result', async () => {
    const r = await operate(video.id, { operation: 'extend', params: { prompt: 'More' } });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe('completed');
  });

  it.each([
    ['upscale_1080p', '1080p'],
    ['upscale_4k', '4k'],
  ])('%s answers completed with data.url, run on the upscale model and billed by its price', async (operation, target) => {
    const r = await operate(video.id, { operation });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: 'completed', model: STACK_MODELS.upscale });
    expect(r.body.data.url).toMatch(/\/v1\/files\/file_/);
    expect(predictionsCreated('topazlabs/video-upscale').at(-1)!.body).toEqual({ input: { video: expect.stringContaining(`${video.data.url.split('?')[0]}?exp=`), target_resolution: target } });
    // topaz in the stack: 2 RUB a second + 0.5 per request; the fake reports the source's 5 s.
    expect(r.body.usage.cost_rub).toBe(10.5);
  });

  it.each([
    ['no operation', {}, '/operation'],
    ['an unknown operation', { operation: 'rewind' }, '/operation'],
    ['extend without params', { operation: 'extend' }, '/params'],
    ['extend without a prompt', { operation: 'extend', params: {} }, '/params/prompt'],
    ['extend shorter than 3 s', { operation: 'extend', params: { prompt: 'x', duration: 2 } }, '/params/duration'],
    ['extend longer than 10 s', { operation: 'extend', params: { prompt: 'x', duration: 11 } }, '/params/duration'],
    ['seeds not a number', { operation: 'extend', params: { prompt: 'x', seeds: 'x' } }, '/params/seeds'],
    ['unknown params', { operation: 'upscale_4k', params: { factor: 2 } }, '/params/factor'],
    ['async not a boolean', { operation: 'upscale_4k', async: 1 }, '/async'],
  ])('refuses %s with 400 naming the field', async (_what, body, path) => {
    const r = await operate(video.id, body);
    expect(r.status).toBe(400);
    expect(r.body.error.details.errors.map((e: { path: string }) => e.path)).toContain(path);
  });

  it('refuses an operation the source model does not offer with 400', async () => {
    const audio = await media({ model: STACK_MODELS.audio, input: { prompt: 'x' } });
    const r = await operate(audio.body.id, { operation: 'upscale_4k' });
    expect(r.status).toBe(400);
    expect(r.body.error.details.errors[0]).toMatchObject({ path: '/operation' });
  });

  it('answers the source as processing, uncharged, while it is still being prepared (interface rule 4)', async () => {
    s.fake.setKnobs({ replicateSteps: 1000 });
    const src = await media({ model: STACK_MODELS.video, input: { prompt: 'x' }, async: true });
    const before = await account();
    const count = await s.t.db.generation.count();
    const r = await operate(src.body.id, { operation: 'upscale_1080p' });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ id: src.body.id, object: 'media.generation', status: 'processing' });
    expect(await s.t.db.generation.count()).toBe(count);
    expect(await account()).toEqual(before);
    expect((await cancel(src.body.id)).status).toBe(200);
  });

  it('answers 409 for a source that failed, and 404 for one of another key', async () => {
    s.fake.setKnobs({ replicateFail: true });
    const failed = await media({ model: STACK_MODELS.video, input: { prompt: 'x' } });
    s.fake.setKnobs({});
    expect((await operate(failed.body.id, { operation: 'upscale_4k' })).status).toBe(409);
    const other = await s.seed();
    const r = await request(s.app).post(`/v1/media/${video.id}/operations`).set(other.auth).send({ operation: 'upscale_4k' });
    expect(r.status).toBe(404);
  });
});

describe('POST /v1/media/{id}/cancel', () => {
  it('cancels a running generation: cancelled record, upstream prediction cancelled, reservation released, nothing charged', async () => {
    s.fake.setKnobs({ replicateSteps: 1000 });
    const before = await account();
    const r = await media({ model: STACK_MODELS.video, input: { prompt: 'x' }, async: true });
    await until(async () => ((await read(r.body.id)).body.status === 'processing' ? true : undefined));
    const c = await cancel(r.body.id);
    expect(c.status).toBe(200);
    expect(c.body).toMatchObject({ id: r.body.id, status: 'cancelled' });
    expect(c.body.completed_at).toBeDefined();
    await until(async () => (s.fake.requests.some((q) => q.method === 'POST' && /\/replicate\/v1\/predictions\/[^/]+\/cancel$/.test(q.path)) ? true : undefined));
    expect(await account()).toEqual(before);
    const reservation = await s.t.db.reservation.findUniqueOrThrow({ where: { generationId: r.body.id } });
    expect(reservation.status).toBe('released');
    expect((await read(r.body.id)).body.status).toBe('cancelled');
  });

  it('answers 409 CONFLICT not_cancellable for a finished generation, and 404 for an unknown one', async () => {
    const r = await media({ model: STACK_MODELS.audio, input: { prompt: 'x' } });
    const c = await cancel(r.body.id);
    expect(c.status).toBe(409);
    expect(c.body.error).toMatchObject({ code: 'CONFLICT', metadata: { reason: 'not_cancellable' } });
    expect((await cancel('gen_unknown')).status).toBe(404);
  });
});

describe('a second stack: a short SYNC_WAIT_MS and a media worker that can crash', () => {
  let stack: TestStack;
  let o: StackOrg;
  let worker: Worker<MediaJobData>;
  let executor: MediaExecutor;
  let connection: ReturnType<typeof createRedis>;
  let crashNext = false;
  let crashed = false;

  beforeAll(async () => {
    const env = { ...ENV, SYNC_WAIT_MS: '300' };
    connection = createRedis(TEST_REDIS_URL, { patient: true });
    // Every queue but media is served by the stack; media by this worker, which can die once on demand.
    stack = await createTestStack({ env, queues: [QUEUES.image, QUEUES.callbacks] });
    o = await stack.seed();
    executor = new MediaExecutor(stack.workerDeps, stack.workerDeps.config.media);
    worker = new Worker<MediaJobData>(
      QUEUES.media,
      async (job: Job<MediaJobData>, token?: string) => {
        if (crashNext) {
          crashNext = false;
          // Dies right after the step is saved, before re-scheduling itself (as a killed worker would).
          job.moveToDelayed = async () => {
            crashed = true;
            throw new Error('worker crashed');
          };
        }
        return executor.run(job, token);
      },
      { connection, prefix: stack.workerDeps.config.queuePrefix },
    );
  });
  afterAll(async () => {
    await worker.close();
    await executor.close();
    connection.disconnect();
    await stack.close();
  });

  const poll = (id: string) =>
    until(async () => {
      const g = await request(stack.app).get(`/v1/media/${id}`).set(o.auth);
      return g.body.status === 'completed' ? g : undefined;
    });

  it('turns a synchronous call into the pending record past SYNC_WAIT_MS, and the job goes on', async () => {
    stack.fake.setKnobs({ latencyMs: 400 });
    const r = await request(stack.app).post('/v1/media').set(o.auth).send({ model: STACK_MODELS.video, input: { prompt: 'x' } });
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ status: expect.stringMatching(/^(pending|processing)$/), taskId: r.body.id });
    const done = await poll(r.body.id);
    expect(done.body.usage.cost_rub).toBe(51); // 5 s (the fake's default) × 10 + 1
    stack.fake.setKnobs({});
  });

  it('a retry after a crash resumes polling the same prediction instead of creating a second one; charged once', async () => {
    stack.fake.setKnobs({ replicateSteps: 2 });
    const creates = () => stack.fake.requests.filter((q) => q.method === 'POST' && q.path.endsWith('/predictions')).length;
    const createdBefore = creates();
    crashNext = true;
    const r = await request(stack.app).post('/v1/media').set(o.auth).send({ model: STACK_MODELS.video, input: { prompt: 'x' }, async: true });
    // The failed attempt waits out its back-off (2 s); promote it so the test need not.
    const job = await until(async () => {
      const j = await stack.ctx.queues.media.getJob(r.body.id);
      return crashed && j && (await j.getState()) === 'delayed' && j.attemptsMade === 1 ? j : undefined;
    });
    expect(job.data.step?.taskId).toBeDefined();
    await job.promote();
    const done = await poll(r.body.id);
    expect(done.body.usage.cost_rub).toBe(51);
    expect(creates() - createdBefore).toBe(1);
    const ledger = await stack.t.db.ledgerEntry.findMany({ where: { generationId: r.body.id } });
    expect(ledger.map((e) => e.kind).sort()).toEqual(['charge', 'reserve']);
  });
});
