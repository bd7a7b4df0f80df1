/**
 * OpenTelemetry traces (docs/observability.md): with OTEL_EXPORTER_OTLP_ENDPOINT set, one trace per generation from
 * the HTTP request (child of the caller's `traceparent`) through the queue wait, each provider attempt (GenAI semantic
 * conventions) and the settlement (our cost), exported over OTLP/HTTP to a real receiver. The API and the workers
 * have tracers of their own, as separate processes do: the worker's spans join the trace only through the job.
 */
import request from 'supertest';
import fs from 'node:fs';
import path from 'node:path';
import { money } from '../../shared/money';
import { INIT_SCRIPT } from '../../api/openapi/reference-page';
import { startOtlpCollector, type OtlpCollector, type ReceivedSpan } from '../../fakes/otlp-collector';
import { incoming, traceOf } from '../helpers/traces';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitFor } from '../helpers/until';

const SERVER = 2;
const CLIENT = 3;
const ERROR = 2;

let collector: OtlpCollector;
let s: TestStack;
let org: StackOrg;

beforeAll(async () => {
  collector = await startOtlpCollector();
  s = await createTestStack({
    env: { SYNC_WAIT_MS: '8000', OTEL_EXPORTER_OTLP_ENDPOINT: collector.url, OTEL_SERVICE_NAME: 'switchyard-test', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=ci' },
    catalogOverrides: (url) => {
      const openai = { kind: 'openai', baseUrl: `${url}/openai/v1`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 5000 };
      const chat = (provider: string) => ({ provider, upstreamModel: 'gpt-4.1-mini', price: { prompt: 40, completion: 160 }, supports: [] });
      return { providers: { 'fb-a': openai, 'fb-b': openai }, models: { 'acme/fallback': { displayName: 'Fallback pair', type: 'chat', endpoints: [chat('fb-a'), chat('fb-b')] } } };
    },
  });
  org = await s.seed();
});
afterAll(async () => {
  await s.close();
  await collector.close();
});
beforeEach(() => s.fake.reset());

const trace = (traceId: string, until: (spans: ReceivedSpan[]) => boolean) => traceOf(s, collector, traceId, until);

const named = (spans: ReceivedSpan[], name: string) => spans.filter((x) => x.name === name);
const hasAll = (n: number) => (spans: ReceivedSpan[]) => named(spans, 'switchyard.settle').length === 1 && spans.filter((x) => x.kind === CLIENT).length === n && spans.some((x) => x.kind === SERVER);

/** The request span, child of the caller's span, and the queue wait and settlement spans under it. */
function expectRequestTrace(spans: ReceivedSpan[], caller: ReturnType<typeof incoming>, generationId: string) {
  const root = spans.filter((x) => x.kind === SERVER);
  expect(root).toHaveLength(1);
  const req = root[0]!;
  expect(req.parentSpanId).toBe(caller.spanId);
  expect(req.name).toBe('POST /v1/chat/completions');
  expect(req.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.route': '/v1/chat/completions', 'http.response.status_code': 200 });
  expect(req.service).toBe('switchyard-test');

  const wait = named(spans, 'switchyard.queue_wait');
  expect(wait).toHaveLength(1);
  expect(wait[0]!.parentSpanId).toBe(req.spanId);
  expect(wait[0]!.attributes).toMatchObject({ 'switchyard.generation_id': generationId, 'messaging.destination.name': 'text' });
  expect(BigInt(wait[0]!.endTimeUnixNano)).toBeGreaterThanOrEqual(BigInt(wait[0]!.startTimeUnixNano));

  const settle = named(spans, 'switchyard.settle');
  expect(settle).toHaveLength(1);
  expect(settle[0]!.parentSpanId).toBe(req.spanId);
  return { req, settle: settle[0]! };
}

async function chargedCost(generationId: string): Promise<number> {
  await s.settled(org.organizationId);
  const g = await s.t.db.generation.findFirstOrThrow({ where: { id: generationId } });
  return money(g.clientCost).toNumber();
}

describe('OpenTelemetry traces (OTEL_EXPORTER_OTLP_ENDPOINT set)', () => {
  it('a sync chat completion is one trace under the caller traceparent: request, queue wait, provider attempt with gen_ai attributes, settlement with the cost', async () => {
    const caller = incoming();
    const res = await request(s.app)
      .post('/v1/chat/completions')
      .set(org.auth)
      .set('traceparent', caller.header)
      .send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hello there' }] });
    expect(res.status).toBe(200);

    const spans = await trace(caller.traceId, hasAll(1));
    const { req, settle } = expectRequestTrace(spans, caller, res.body.id);
    const attempts = spans.filter((x) => x.kind === CLIENT);
    expect(attempts).toHaveLength(1);
    expect(attempts[0]!.name).toBe('chat gpt-4.1-mini');
    expect(attempts[0]!.parentSpanId).toBe(req.spanId);
    expect(attempts[0]!.status.code).not.toBe(ERROR);
    expect(attempts[0]!.attributes).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'gpt-4.1-mini',
      'gen_ai.response.model': expect.any(String),
      'gen_ai.usage.input_tokens': res.body.usage.prompt_tokens,
      'gen_ai.usage.output_tokens': res.body.usage.completion_tokens,
      'switchyard.model': STACK_MODELS.chat,
      'switchyard.generation_id': res.body.id,
    });
    const cost = await chargedCost(res.body.id);
    expect(cost).toBeGreaterThan(0);
    expect(settle.attributes).toMatchObject({ 'switchyard.status': 'completed', 'switchyard.generation_id': res.body.id });
    expect(settle.attributes['switchyard.cost_rub']).toBeCloseTo(cost, 10);
  });

  it('a streamed chat completion is traced the same way', async () => {
    const caller = incoming();
    const res = await request(s.app)
      .post('/v1/chat/completions')
      .set(org.auth)
      .set('traceparent', caller.header)
      .send({ model: STACK_MODELS.chat, stream: true, stream_options: { include_usage: true }, messages: [{ role: 'user', content: 'stream it' }] })
      .buffer(true)
      .parse((r, cb) => {
        let text = '';
        r.on('data', (c: Buffer) => (text += c.toString('utf8')));
        r.on('end', () => cb(null, text));
      });
    expect(res.status).toBe(200);
    const events = (res.body as string).split('\n').filter((l) => l.startsWith('data: {')).map((l) => JSON.parse(l.slice(6)) as { id: string; usage?: { prompt_tokens: number; completion_tokens: number } });
    const id = events[0]!.id;
    const usage = events.find((e) => e.usage)?.usage;

    const spans = await trace(caller.traceId, hasAll(1));
    const { settle } = expectRequestTrace(spans, caller, id);
    const attempt = spans.find((x) => x.kind === CLIENT)!;
    expect(attempt.attributes).toMatchObject({ 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'gpt-4.1-mini', 'gen_ai.usage.output_tokens': expect.any(Number) });
    if (usage) expect(attempt.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': usage.prompt_tokens, 'gen_ai.usage.output_tokens': usage.completion_tokens });
    expect(settle.attributes['switchyard.cost_rub']).toBeCloseTo(await chargedCost(id), 10);
  });

  it('a first attempt that fails and a fallback that answers are two attempt spans, the first with error status', async () => {
    s.fake.setKnobs({ status: 500, failTimes: 1 });
    const caller = incoming();
    const res = await request(s.app)
      .post('/v1/chat/completions')
      .set(org.auth)
      .set('traceparent', caller.header)
      .send({ model: 'acme/fallback', messages: [{ role: 'user', content: 'fall back' }] });
    expect(res.status).toBe(200);

    const spans = await trace(caller.traceId, hasAll(2));
    const { req } = expectRequestTrace(spans, caller, res.body.id);
    const attempts = spans.filter((x) => x.kind === CLIENT).sort((a, b) => (BigInt(a.startTimeUnixNano) < BigInt(b.startTimeUnixNano) ? -1 : 1));
    expect(attempts).toHaveLength(2);
    expect(attempts.map((a) => a.parentSpanId)).toEqual([req.spanId, req.spanId]);
    expect(attempts.map((a) => a.attributes['switchyard.endpoint'])).toEqual([expect.stringContaining('fb-a'), expect.stringContaining('fb-b')]);
    expect(attempts[0]!.status.code).toBe(ERROR);
    expect(attempts[0]!.attributes).toMatchObject({ 'error.type': 'provider_error', 'http.response.status_code': 500 });
    expect(attempts[1]!.status.code).not.toBe(ERROR);
    expect(attempts[1]!.attributes['gen_ai.usage.output_tokens']).toBe(res.body.usage.completion_tokens);
  });

  it('a generation that fails ends under a settle span too: status failed, cost 0, error status with its code', async () => {
    s.fake.setKnobs({ status: 500, failTimes: 2 });
    const caller = incoming();
    const res = await request(s.app)
      .post('/v1/chat/completions')
      .set(org.auth)
      .set('traceparent', caller.header)
      .send({ model: 'acme/fallback', messages: [{ role: 'user', content: 'fail twice' }] });
    expect(res.status).toBe(502);

    const spans = await trace(caller.traceId, (x) => named(x, 'switchyard.settle').length === 1 && x.filter((y) => y.kind === CLIENT).length === 2);
    const settle = named(spans, 'switchyard.settle')[0]!;
    expect(settle.status.code).toBe(ERROR);
    expect(settle.attributes).toMatchObject({ 'switchyard.status': 'failed', 'switchyard.cost_rub': 0, 'error.type': 'BAD_GATEWAY' });
  });

  it('a request without a traceparent starts a trace of its own', async () => {
    const res = await request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'no parent' }] });
    expect(res.status).toBe(200);
    let spans: ReceivedSpan[] = [];
    await waitFor('the request span of the settled trace', async () => {
      await Promise.all([s.ctx.tracing?.flush(), s.workerDeps.tracing?.flush()]);
      const settle = collector.spans.find((x) => x.name === 'switchyard.settle' && x.attributes['switchyard.generation_id'] === res.body.id);
      spans = settle ? collector.spans.filter((x) => x.traceId === settle.traceId) : [];
      return spans.some((x) => x.kind === SERVER);
    }, 15_000, 100);
    const req = spans.find((x) => x.kind === SERVER);
    expect(req).toBeDefined();
    expect(req!.parentSpanId).toBeUndefined();
  });

  it('traces the API only: no span for the dashboard, the reference, health checks, scrapes or favicon.ico', async () => {
    const outside = ['/admin', '/admin/api/queues', '/docs', `/docs/assets/${INIT_SCRIPT}`, '/openapi.json', '/favicon.ico', '/healthz', '/readyz', '/metrics'];
    const callers = outside.map(() => incoming());
    for (const [i, p] of outside.entries()) await request(s.app).get(p).set('traceparent', callers[i].header);
    // An API request after them: once its span has arrived, any span of the requests before it has too (spans are
    // exported in the order they end).
    const api = incoming();
    expect((await request(s.app).get('/v1/models').set(org.auth).set('traceparent', api.header)).status).toBe(200);
    const spans = await trace(api.traceId, (x) => x.some((k) => k.kind === SERVER));
    expect(spans.map((x) => x.name)).toEqual(['GET /v1/models']);
    // The API's other version is traced too.
    const v2 = incoming();
    await request(s.app).post('/v2/images/generations').set(org.auth).set('traceparent', v2.header).send({});
    expect((await trace(v2.traceId, (x) => x.some((k) => k.kind === SERVER))).filter((x) => x.kind === SERVER).map((x) => x.name)).toEqual(['POST /v2/images/generations']);
    expect(collector.spans.filter((x) => callers.some((c) => c.traceId === x.traceId)).map((x) => x.name)).toEqual([]);
  });

  it("carries the service's version, the deployment and the process on the resource", async () => {
    const caller = incoming();
    await request(s.app).get('/v1/models').set(org.auth).set('traceparent', caller.header);
    const [span] = await trace(caller.traceId, (x) => x.length > 0);
    const version = (JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
    expect(span!.resource).toMatchObject({ 'service.name': 'switchyard-test', 'service.version': version, 'deployment.environment.name': 'ci' });
    expect(span!.resource['service.instance.id']).toMatch(new RegExp(`:${process.pid}$`));
  });

  it('an image generation: its attempt span carries the tokens the provider counted, its settle span the usage and the cost', async () => {
    const caller = incoming();
    const res = await request(s.app).post('/v1/images/generations').set(org.auth).set('traceparent', caller.header).send({ model: STACK_MODELS.image, prompt: 'a lighthouse' });
    expect(res.status).toBe(200);
    const spans = await trace(caller.traceId, hasAll(1));
    const attempt = spans.find((x) => x.kind === CLIENT)!;
    expect(attempt.attributes).toMatchObject({ 'gen_ai.operation.name': 'generate_content', 'gen_ai.request.model': 'gpt-image-1' });
    expect(attempt.attributes['gen_ai.usage.input_tokens']).toEqual(expect.any(Number));
    expect(attempt.attributes['gen_ai.usage.output_tokens']).toEqual(expect.any(Number));
    const settle = named(spans, 'switchyard.settle')[0]!;
    const generationId = settle.attributes['switchyard.generation_id'] as string;
    expect(settle.attributes['switchyard.cost_rub']).toBe(await chargedCost(generationId));
    expect(settle.attributes['switchyard.cost_rub']).toBeGreaterThan(0);
    expect(settle.attributes).toMatchObject({
      'switchyard.usage.output_units': 1,
      'gen_ai.usage.input_tokens': attempt.attributes['gen_ai.usage.input_tokens'],
      'gen_ai.usage.output_tokens': attempt.attributes['gen_ai.usage.output_tokens'],
    });
  });
});
