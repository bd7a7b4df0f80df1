/**
 * Tracing is off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (docs/observability.md): then no OpenTelemetry SDK module is
 * loaded at all (the request path pays one check of an undefined tracer), and requests behave as before.
 */
import request from 'supertest';
import { startTracing } from '../../shared/telemetry/tracing';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';

let s: TestStack;
let org: StackOrg;

beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: '8000' } });
  org = await s.seed();
});
afterAll(() => s.close());

/** Modules of the OpenTelemetry SDK or its exporters that this test file's module registry has loaded. */
const sdkModules = () => Object.keys(require.cache).filter((k) => /[\\/]node_modules[\\/]@opentelemetry[\\/](sdk-|exporter-|otlp-|resources|core)/.test(k));

describe('tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT)', () => {
  it('loads nothing of the OpenTelemetry SDK, and a sync and a streamed chat completion answer as before', async () => {
    expect(s.ctx.tracing).toBeUndefined();
    expect(s.workerDeps.tracing).toBeUndefined();

    const sync = await request(s.app)
      .post('/v1/chat/completions')
      .set(org.auth)
      .set('traceparent', '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01')
      .send({ model: STACK_MODELS.chat, messages: [{ role: 'user', content: 'hello' }] });
    expect(sync.status).toBe(200);
    expect(sync.body.choices[0].message.content).toEqual(expect.any(String));
    expect(sync.headers['x-trace-id']).toEqual(expect.any(String));
    expect(sync.headers.traceparent).toBeUndefined();

    const stream = await request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: STACK_MODELS.chat, stream: true, messages: [{ role: 'user', content: 'stream' }] });
    expect(stream.status).toBe(200);
    expect(stream.text).toContain('data: [DONE]');

    expect(sdkModules()).toEqual([]);

    // The check sees the SDK once something loads it (so an empty list above means something).
    const tracing = startTracing({ endpoint: 'http://127.0.0.1:9', serviceName: 'probe', resourceAttributes: {} });
    expect(sdkModules()).toEqual(expect.arrayContaining([expect.stringMatching(/@opentelemetry[\\/]sdk-trace-base[\\/]/), expect.stringMatching(/@opentelemetry[\\/]exporter-trace-otlp-http[\\/]/)]));
    await tracing!.shutdown();
  });
});
