import { AppError } from '../../shared/errors/app-error';
import { loadConfig } from '../../shared/config/env';
import { queueOfGeneration } from '../../shared/queue/job-catalog';

describe('errors cross processes in one stored form', () => {
  it('toStored → JSON → fromStored gives back the same error', () => {
    const e = AppError.fromReason('all_providers_failed', 'Every provider failed: a (timeout)', { attempts: [{ provider: 'a', reason: 'timeout' }], retry_after_seconds: 7 });
    const stored = JSON.parse(JSON.stringify(e.toStored()));
    expect(stored).toEqual({ code: e.code, status: e.status, message: e.message, metadata: e.metadata });
    const back = AppError.fromStored(stored);
    expect(back).toBeInstanceOf(AppError);
    expect([back.code, back.status, back.message, back.metadata]).toEqual([e.code, e.status, e.message, e.metadata]);
    expect(back.headers).toEqual({ 'Retry-After': '7' });
  });

  it('a code this version does not know becomes BAD_GATEWAY', () => {
    const back = AppError.fromStored({ code: 'SOMETHING_NEW', message: 'from a newer worker' });
    expect([back.code, back.status, back.message]).toEqual(['BAD_GATEWAY', 502, 'from a newer worker']);
  });
});

describe('configuration is parsed in one module', () => {
  it('reads every setting from the given environment', () => {
    const c = loadConfig({ MEDIA_POLL_MS: '30', WORKER_CONCURRENCY_MEDIA: '2', REAPER_EVERY_MS: '1000', S3_BUCKET: 'b', WORKER_METRICS_PORT: '0' }, []);
    expect(c.media.pollMs).toBe(30);
    expect(c.worker.concurrency).toEqual({ media: 2 });
    expect(c.reaper).toEqual({ everyMs: 1000, minAgeMs: 120_000 });
    expect(c.s3).toMatchObject({ bucket: 'b', region: 'us-east-1', forcePathStyle: false });
    expect(c.worker.metricsPort).toBe(0);
  });

  it('traces only when OTEL_EXPORTER_OTLP_ENDPOINT is set, named by OTEL_SERVICE_NAME, with OTEL_RESOURCE_ATTRIBUTES on the resource', () => {
    expect(loadConfig({}, []).tracing).toBeUndefined();
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' }, []).tracing).toEqual({
      endpoint: 'http://collector:4318',
      serviceName: 'switchyard',
      resourceAttributes: { 'deployment.environment.name': 'production' },
    });
    expect(loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example', OTEL_SERVICE_NAME: 'gw' }, ['--demo']).tracing).toEqual({
      endpoint: 'https://otel.example',
      serviceName: 'gw',
      resourceAttributes: { 'deployment.environment.name': 'demo' },
    });
    const given = loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment.name=staging, team=ai%20gateway' }, []);
    expect(given.tracing!.resourceAttributes).toEqual({ 'deployment.environment.name': 'staging', team: 'ai gateway' });
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example', OTEL_RESOURCE_ATTRIBUTES: 'novalue' }, [])).toThrow(/OTEL_RESOURCE_ATTRIBUTES must be key=value pairs/);
  });

  it.each([
    ['MEDIA_POLL_MS', 'soon', /MEDIA_POLL_MS must be a positive integer, got "soon"/],
    ['WORKER_CONCURRENCY_TEXT', '0', /WORKER_CONCURRENCY_TEXT must be a positive integer, got "0"/],
    ['REAPER_MIN_AGE_MS', '-5', /REAPER_MIN_AGE_MS must be a positive integer/],
    ['PORT', '3.5', /PORT must be a non-negative integer, got "3.5"/],
    ['S3_FORCE_PATH_STYLE', 'maybe', /S3_FORCE_PATH_STYLE must be true or false \(or 1\/0, yes\/no\), got "maybe"/],
    ['CALLBACK_ALLOW_PRIVATE', 'on', /CALLBACK_ALLOW_PRIVATE must be true or false/],
    ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318', /OTEL_EXPORTER_OTLP_ENDPOINT must be an http\(s\) URL, got "collector:4318"/],
  ])('%s=%s stops the start with a message naming it', (name, value, message) => {
    expect(() => loadConfig({ S3_BUCKET: 'b', [name]: value }, [])).toThrow(message);
  });

  it.each(['CALLBACK_ALLOW_PRIVATE', 'SWITCHYARD_DEMO', 'S3_FORCE_PATH_STYLE', 'SWITCHYARD_CLUSTER_CHILD'])('%s reads true/false, 1/0 and yes/no (any case) the same way', (name) => {
    const read = (value: string) => {
      const c = loadConfig({ S3_BUCKET: 'b', [name]: value }, []);
      return { CALLBACK_ALLOW_PRIVATE: c.callbackAllowPrivate, SWITCHYARD_DEMO: c.demo, S3_FORCE_PATH_STYLE: c.s3!.forcePathStyle, SWITCHYARD_CLUSTER_CHILD: c.clusterChild }[name];
    };
    expect(['true', '1', 'yes', 'TRUE', 'Yes'].map(read)).toEqual([true, true, true, true, true]);
    expect(['false', '0', 'no', 'False', 'NO', ''].map(read)).toEqual([false, false, false, false, false, false]);
  });

  it('demo mode polls and gathers provider batches at the fake providers\' pace (seconds, not 15 s), unless told otherwise', () => {
    expect(loadConfig({}, []).batches).toMatchObject({ upstreamPollMs: 15_000, upstreamGatherMs: 2_000 });
    expect(loadConfig({}, ['--demo']).batches).toMatchObject({ upstreamPollMs: 1_000, upstreamGatherMs: 500 });
    expect(loadConfig({ BATCH_UPSTREAM_POLL_MS: '15000', BATCH_UPSTREAM_GATHER_MS: '2000' }, ['--demo']).batches).toMatchObject({ upstreamPollMs: 15_000, upstreamGatherMs: 2_000 });
  });

  it('demo mode gives the demo key without changing the environment', () => {
    const env: Record<string, string> = { SWITCHYARD_DEMO: '1' };
    const c = loadConfig(env, []);
    expect(c.providerKeys.DEMO_PROVIDER_KEY).toBe('demo');
    expect(env).toEqual({ SWITCHYARD_DEMO: '1' });
    expect(Object.isFrozen(c.providerKeys)).toBe(true);
  });
});

describe('the queue of a generation', () => {
  it.each([
    [{ apiType: 'chat_completions', requestType: 'text', routing: null }, 'text'],
    [{ apiType: 'systemone', requestType: 'text', routing: {} }, 'text'],
    [{ apiType: 'embeddings', requestType: 'embeddings', routing: null }, 'embeddings'],
    [{ apiType: 'images', requestType: 'image', routing: null }, 'image'],
    [{ apiType: 'media', requestType: 'image', routing: null }, 'image'],
    [{ apiType: 'media', requestType: 'video', routing: null }, 'media'],
    [{ apiType: 'media', requestType: 'image', routing: { queue: 'media' } }, 'media'],
  ])('%o → %s', (g, queue) => {
    expect(queueOfGeneration(g)).toBe(queue);
  });
});
