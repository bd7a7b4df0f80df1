/**
 * OpenTelemetry traces beyond a completed call (docs/observability.md): a failed or cancelled generation ends under a
 * `switchyard.settle` span too (its status, cost 0, a failure's code as `error.type`); an asynchronous media task's polls
 * are client spans with the task's status; each callback delivery attempt is a client span naming only the receiver's
 * host. Against a real OTLP receiver, as test/api/tracing.test.ts.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { startOtlpCollector, type OtlpCollector, type ReceivedSpan } from '../../fakes/otlp-collector';
import { incoming, traceOf } from '../helpers/traces';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitFor } from '../helpers/until';

const CLIENT = 3;
const ERROR = 2;

let collector: OtlpCollector;
let s: TestStack;
let org: StackOrg;
let receiver: Server;
let hook: string;
let receiverStatus = 204;

beforeAll(async () => {
  receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(receiverStatus).end());
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
  collector = await startOtlpCollector();
  s = await createTestStack({
    env: {
      SYNC_WAIT_MS: '8000',
      OTEL_EXPORTER_OTLP_ENDPOINT: collector.url,
      CALLBACK_ALLOW_PRIVATE: 'true',
      CALLBACK_BACKOFF_MS: '50',
      MEDIA_POLL_MS: '30',
      MEDIA_POLL_MAX_MS: '80',
    },
  });
  org = await s.seed();
});
afterAll(async () => {
  await s.close();
  await collector.close();
  receiver.closeAllConnections();
  await new Promise((r) => receiver.close(r));
});
afterEach(() => {
  s.fake.setKnobs({});
  receiverStatus = 204;
});

const trace = (traceId: string, until: (spans: ReceivedSpan[]) => boolean) => traceOf(s, collector, traceId, until);

const named = (spans: ReceivedSpan[], name: string) => spans.filter((x) => x.name === name);

describe('traces of endings other than a completion, media polls and callbacks', () => {
  it('a generation that fails ends under a settle span: status failed, error status with its code, cost 0', async () => {
    s.fake.setKnobs({ status: 500 });
    const caller = incoming();
    const res = await request(s.app).post('/v1/chat/completions').set(org.auth).set('traceparent', caller.header).send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'fail' }] });
    expect(res.status).toBe(502);
    const spans = await trace(caller.traceId, (x) => named(x, 'switchyard.settle').length === 1);
    const [settle] = named(spans, 'switchyard.settle');
    expect(settle).toBeDefined();
    expect(settle!.attributes).toMatchObject({ 'switchyard.status': 'failed', 'switchyard.cost_rub': 0, 'error.type': res.body.error.code });
    expect(settle!.status.code).toBe(ERROR);
  });

  it('a stream cut mid-way is settled under the settle span: status failed, the cost of what was produced', async () => {
    s.fake.setKnobs({ failMidStream: true, streamChunks: 8, chunkDelayMs: 5 });
    const caller = incoming();
    const res = await request(s.app).post('/v1/chat/completions').set(org.auth).set('traceparent', caller.header).send({ model: STACK_MODELS.chat, stream: true, messages: [{ role: 'user', content: 'cut me' }] });
    expect(res.text).toContain('error');
    const spans = await trace(caller.traceId, (x) => named(x, 'switchyard.settle').length === 1);
    const [settle] = named(spans, 'switchyard.settle');
    expect(settle).toBeDefined();
    expect(settle!.attributes['switchyard.status']).toBe('failed');
    expect(settle!.attributes['switchyard.cost_rub']).toBeGreaterThan(0);
    expect(settle!.status.code).toBe(ERROR);
  });

  it('a background response cancelled while its provider call runs ends under a settle span: status cancelled, cost 0', async () => {
    s.fake.setKnobs({ holdReplies: true });
    const caller = incoming();
    const created = await request(s.app).post('/v1/responses').set(org.auth).set('traceparent', caller.header).send({ model: STACK_MODELS.chat, input: 'cancel me', background: true });
    expect(created.status).toBe(200);
    // Wait until a worker holds it (the provider call is under way), then cancel.
    await waitFor('the provider call', () => s.fake.requests.length > 0);
    const cancelled = await request(s.app).post(`/v1/responses/${created.body.id}/cancel`).set(org.auth);
    s.fake.setKnobs({});
    expect(cancelled.body.status).toBe('cancelled');
    const spans = await trace(caller.traceId, (x) => named(x, 'switchyard.settle').length === 1);
    const [settle] = named(spans, 'switchyard.settle');
    expect(settle).toBeDefined();
    expect(settle!.attributes).toMatchObject({ 'switchyard.status': 'cancelled', 'switchyard.cost_rub': 0, 'switchyard.generation_id': created.body.id });
    expect(settle!.status.code).not.toBe(ERROR);
  });

  it('an async media task: each poll is a client span with the task status; the ending is settled; each callback attempt is a span with the receiver host only', async () => {
    s.fake.setKnobs({ replicateSteps: 3 });
    receiverStatus = 500; // the first delivery fails and is retried
    const caller = incoming();
    const r = await request(s.app)
      .post('/v1/media')
      .set(org.auth)
      .set('traceparent', caller.header)
      .send({ model: STACK_MODELS.audio, input: { prompt: 'x', callBackUrl: `${hook}/secret-path?token=abc` }, async: true });
    expect(r.status).toBe(202);
    const failedOnce = await trace(caller.traceId, (x) => named(x, 'switchyard.callback').length >= 1);
    expect(named(failedOnce, 'switchyard.callback')[0]!.status.code).toBe(ERROR);
    receiverStatus = 204;
    const spans = await trace(caller.traceId, (x) => named(x, 'switchyard.callback').some((c) => c.attributes['http.response.status_code'] === 204));

    const polls = named(spans, 'switchyard.media_poll');
    expect(polls.length).toBeGreaterThanOrEqual(2);
    expect(polls.every((p) => p.kind === CLIENT && p.attributes['switchyard.generation_id'] === r.body.id && typeof p.attributes['switchyard.task_id'] === 'string')).toBe(true);
    expect(polls.map((p) => p.attributes['switchyard.task_status'])).toContain('succeeded');
    expect(polls.some((p) => p.attributes['switchyard.task_status'] === 'processing' || p.attributes['switchyard.task_status'] === 'pending')).toBe(true);

    const settle = named(spans, 'switchyard.settle');
    expect(settle).toHaveLength(1);
    const record = await request(s.app).get(`/v1/media/${r.body.id}`).set(org.auth);
    expect(record.body.status).toBe('completed');
    expect(settle[0]!.attributes).toMatchObject({ 'switchyard.status': 'completed' });
    expect(settle[0]!.attributes['switchyard.cost_rub']).toBe(record.body.usage.cost_rub);
    // The usage the record shows, on the settle span: the media's units and seconds.
    expect(settle[0]!.attributes).toMatchObject({
      'switchyard.usage.input_units': record.body.usage.input_units,
      'switchyard.usage.output_units': record.body.usage.output_units,
      'switchyard.usage.duration_seconds': record.body.usage.duration_seconds,
    });

    const deliveries = named(spans, 'switchyard.callback').sort((a, b) => Number(a.attributes['switchyard.attempt']) - Number(b.attributes['switchyard.attempt']));
    expect(deliveries.length).toBeGreaterThanOrEqual(2);
    expect(deliveries[0]!.attributes).toMatchObject({ 'http.response.status_code': 500, 'server.address': '127.0.0.1', 'switchyard.attempt': 1 });
    expect(deliveries.at(-1)!.attributes).toMatchObject({ 'http.response.status_code': 204, 'switchyard.status': 'completed' });
    expect(JSON.stringify(deliveries.map((d) => d.attributes))).not.toContain('token=abc');
    expect(JSON.stringify(deliveries.map((d) => d.attributes))).not.toContain('secret-path');
  });
});
