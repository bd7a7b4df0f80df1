import { addJob } from '../../shared/queue/claims';
import express from 'express';
import request from 'supertest';
import { Queue, Worker, type Job } from 'bullmq';
import { createTestApp, type TestApp } from '../helpers/test-app';
import { seedKey, seedOrg } from '../helpers/fixtures';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { createRedis } from '../../shared/queue/redis';
import { createMetrics, instrumentWorker } from '../../shared/metrics/metrics';
import { startMetricsServer } from '../../shared/metrics/metrics-server';
import { telemetryMiddleware } from '../../api/middleware/metrics';
import { QUEUE_NAMES, QUEUES } from '../../shared/queue/queue-names';
import { serveWorkerMetrics } from '../../workers/main';
import { listen } from '../../shared/runtime/bootstrap';
import { createLogger } from '../../shared/logger';
import { sendCut } from '../helpers/cut-request';
import { pause, waitUntil } from '../helpers/until';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Prometheus text → samples (enough of the format for our own output). */
function parse(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]] = l[2];
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

function value(samples: Sample[], name: string, labels: Record<string, string> = {}): number | undefined {
  return samples.find((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))?.value;
}

let h: TestApp;
let org: Awaited<ReturnType<typeof seedOrg>>;
let key: { id: string; key: string };

beforeAll(async () => {
  h = await createTestApp({ deps: { authCacheMs: 0 } });
  org = await seedOrg(h.t.db);
  key = await seedKey(org.accounts, org.organizationId);
});
afterAll(() => h.close());

const scrape = async (app = h.app) => {
  const res = await request(app).get('/metrics');
  expect(res.status).toBe(200);
  expect(res.headers['content-type']).toMatch(/^text\/plain/);
  return parse(res.text);
};

describe('GET /metrics', () => {
  it('counts requests by method, route pattern (never the raw URL) and status', async () => {
    const owner = { Authorization: `Bearer ${org.ownerToken}` };
    await request(h.app).get('/healthz').expect(200);
    await request(h.app).get('/healthz').expect(200);
    await request(h.app).patch(`/v1/keys/${key.id}`).set(owner).send({ name: 'renamed' }).expect(200);
    await request(h.app).patch('/v1/keys/key_does_not_exist').set(owner).send({ name: 'x' }).expect(404);
    await request(h.app).get('/v1/key').expect(401);
    await request(h.app).get('/no/such/route/123').expect(404);

    const s = await scrape();
    const requests = 'switchyard_http_requests_total';
    expect(value(s, requests, { method: 'GET', route: '/healthz', status: '200' })).toBe(2);
    expect(value(s, requests, { method: 'PATCH', route: '/v1/keys/:id', status: '200' })).toBe(1);
    // An error raised inside a route (404 of the handler, 401 of the guard) still carries the route pattern.
    expect(value(s, requests, { method: 'PATCH', route: '/v1/keys/:id', status: '404' })).toBe(1);
    expect(value(s, requests, { method: 'GET', route: '/v1/key', status: '401' })).toBe(1);
    expect(value(s, requests, { method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
    const routes = new Set(s.filter((x) => x.name === requests).map((x) => x.labels.route));
    for (const r of routes) expect(r).not.toMatch(/key_|no\/such/);

    expect(value(s, 'switchyard_http_request_duration_seconds_count', { method: 'GET', route: '/healthz', status: '200' })).toBe(2);
    expect(value(s, 'switchyard_http_request_duration_seconds_bucket', { route: '/healthz', le: '+Inf' })).toBe(2);
  });

  it('reports queue depth for every queue and state, read from Redis at scrape time', async () => {
    await h.app.locals.ctx.queues.media.add('probe', { n: 1 });
    await h.app.locals.ctx.queues.media.add('probe', { n: 2 }, { delay: 60_000 });
    await h.app.locals.ctx.queues.image.add('probe', { n: 3 }, { priority: 5 });
    const s = await scrape();
    for (const queue of QUEUE_NAMES) {
      for (const state of ['waiting', 'active', 'delayed', 'failed']) expect(value(s, 'switchyard_queue_jobs', { queue, state })).toBeDefined();
    }
    expect(value(s, 'switchyard_queue_jobs', { queue: 'media', state: 'waiting' })).toBe(1);
    expect(value(s, 'switchyard_queue_jobs', { queue: 'media', state: 'delayed' })).toBe(1);
    // Prioritized jobs are waiting too (BullMQ keeps them in a set of their own).
    expect(value(s, 'switchyard_queue_jobs', { queue: 'image', state: 'waiting' })).toBe(1);
    expect(value(s, 'switchyard_queue_jobs', { queue: 'text', state: 'waiting' })).toBe(0);
  });

  it('reports the jobs waiting per queue and class (fair queues: background in the band above every interactive priority)', async () => {
    const q = h.app.locals.ctx.queues.embeddings;
    await addJob(q, { n: 1 }, { jobId: 'fair-1' }, undefined, { organizationId: 'org_a', workClass: 'interactive' });
    await addJob(q, { n: 2 }, { jobId: 'fair-2' }, undefined, { organizationId: 'org_a', workClass: 'interactive' });
    await addJob(q, { n: 3 }, { jobId: 'fair-3' }, undefined, { organizationId: 'org_a', workClass: 'background' });
    const s = await scrape();
    expect(value(s, 'switchyard_queue_waiting', { queue: 'embeddings', class: 'interactive' })).toBe(2);
    expect(value(s, 'switchyard_queue_waiting', { queue: 'embeddings', class: 'background' })).toBe(1);
    expect(value(s, 'switchyard_queue_waiting', { queue: 'text', class: 'background' })).toBe(0);
  });

  it('exposes job, provider and money series, recorded through the metric handles', async () => {
    const m = h.app.locals.ctx.metrics;
    m.providerAttempts.inc({ provider: 'acme', outcome: 'ok' });
    m.providerAttempts.inc({ provider: 'acme', outcome: 'timeout' });
    m.moneyReserved.inc({}, '1.5');
    m.moneyCharged.inc({ model: 'm' }, '0.25');
    m.jobDuration.observe({ queue: 'text', outcome: 'completed' }, 0.3);
    const s = await scrape();
    expect(value(s, 'switchyard_provider_attempts_total', { provider: 'acme', outcome: 'ok' })).toBe(1);
    expect(value(s, 'switchyard_provider_attempts_total', { provider: 'acme', outcome: 'timeout' })).toBe(1);
    expect(value(s, 'switchyard_money_reserved_rub_total')).toBe(1.5);
    expect(value(s, 'switchyard_money_charged_rub_total', { model: 'm' })).toBe(0.25);
    expect(value(s, 'switchyard_job_duration_seconds_count', { queue: 'text', outcome: 'completed' })).toBe(1);
  });

  it('keeps each app in its own registry', async () => {
    const other = await createTestApp();
    try {
      const s = await scrape(other.app);
      expect(value(s, 'switchyard_http_requests_total', { route: '/healthz' })).toBeUndefined();
      expect(value(s, 'switchyard_money_charged_rub_total') ?? 0).toBe(0); // by model: no series before a charge
    } finally {
      await other.close();
    }
  });

  it('needs "Bearer $METRICS_TOKEN" when METRICS_TOKEN is set', async () => {
    const locked = await createTestApp({ env: { METRICS_TOKEN: 'scrape-me' } });
    try {
      for (const auth of [undefined, 'Bearer wrong', 'scrape-me', `Bearer ${org.ownerToken}`]) {
        const req = request(locked.app).get('/metrics');
        const res = await (auth ? req.set('Authorization', auth) : req);
        expect(res.status).toBe(401);
        expect(res.body.error.code).toBe('UNAUTHORIZED');
        expect(res.body.trace_id).toBe(res.headers['x-trace-id']);
      }
      const ok = await request(locked.app).get('/metrics').set('Authorization', 'Bearer scrape-me');
      expect(ok.status).toBe(200);
      expect(ok.text).toContain('switchyard_http_requests_total');
    } finally {
      await locked.close();
    }
  });
});

describe('a client that closes the connection mid-body', () => {
  // Its doing, not ours: counted and logged as 499 (nginx's "client closed request"), never as a 5xx, so no key
  // holder can trip 5xx alerts by cutting bodies short.
  let cut: TestApp;
  let server: Awaited<ReturnType<typeof listen>>;
  let auth: string;
  const logger = createLogger({ silent: true });
  const logged: Array<{ level: string; message: string; meta: Record<string, unknown> }> = [];
  for (const level of ['error', 'warn', 'info'] as const) {
    jest.spyOn(logger, level).mockImplementation(((message: string, meta: Record<string, unknown>) => {
      logged.push({ level, message, meta });
      return logger;
    }) as never);
  }

  beforeAll(async () => {
    cut = await createTestApp({ deps: { authCacheMs: 0, logger } });
    const o = await seedOrg(cut.t.db);
    auth = `Bearer ${(await seedKey(o.accounts, o.organizationId)).key}`;
    server = await listen(cut.app, 0);
  });
  afterAll(async () => {
    await server?.close();
    await cut?.close();
  });

  const JSON_CUT = '{"model":"m","input":"cut he';
  const MULTIPART_CUT = '--XX\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\npng-by';
  // Left once the server reads the body (its reader resumes the request stream). Left at once: before the body is
  // read (authentication is still looking the key up), so the reader finds the request already gone.
  const bodyRead = () => new Promise<void>((resolve) => server.server.once('request', (req: import('node:http').IncomingMessage) => req.once('resume', resolve)));
  it.each([
    ['a JSON body (POST /v1/responses)', '/v1/responses', 'application/json', JSON_CUT, true],
    ['a raw upload', '/v1/storage/files', 'image/png', Buffer.alloc(600, 1), true],
    ['a multipart upload', '/v1/storage/files', 'multipart/form-data; boundary=XX', MULTIPART_CUT, true],
    ['a JSON body, left before it is read,', '/v1/responses', 'application/json', JSON_CUT, false],
    ['a raw upload, left before it is read,', '/v1/storage/files', 'image/png', Buffer.alloc(600, 1), false],
    ['a multipart upload, left before it is read,', '/v1/storage/files', 'multipart/form-data; boundary=XX', MULTIPART_CUT, false],
  ])('%s: counted as 499, logged as 499, no 5xx; the app serves on', async (_what, route, type, body, whileRead) => {
    const count = (s: Sample[], status: string) => value(s, 'switchyard_http_requests_total', { method: 'POST', route, status }) ?? 0;
    const before = await scrape(cut.app);
    logged.length = 0;
    await sendCut(server.port, { path: route, headers: { Authorization: auth, 'Content-Type': type, 'Content-Length': '2000' }, body, reading: whileRead ? bodyRead() : undefined });
    const after = await waitUntil(async () => {
      const s = await scrape(cut.app);
      return count(s, '499') > count(before, '499') ? s : undefined;
    });
    expect(count(after, '499') - count(before, '499')).toBe(1);
    const fivexx = (s: Sample[]) => s.filter((x) => x.name === 'switchyard_http_requests_total' && x.labels.status.startsWith('5')).reduce((n, x) => n + x.value, 0);
    expect(fivexx(after)).toBe(fivexx(before));
    // The log line comes from the error handler once the body reader gives up: wait for it, then nothing else.
    await waitUntil(async () => (logged.length > 0 ? true : undefined));
    expect(logged).toEqual([{ level: 'info', message: 'client closed request', meta: expect.objectContaining({ status: 499, method: 'POST', path: route }) }]);
    const ok = await fetch(`http://127.0.0.1:${server.port}/v1/storage/files`, { method: 'POST', headers: { Authorization: auth, 'Content-Type': 'image/png' }, body: 'fine' });
    expect(ok.status).toBe(201);
  });
});

describe('route labels', () => {
  it('keep the mount path of a router mounted on a path, also when the route fails', async () => {
    const metrics = createMetrics();
    const app = express();
    app.use(telemetryMiddleware(metrics, app, undefined));
    const r = express.Router();
    r.get('/things/:id', (req, res) => {
      if (req.params.id === 'bad') throw new Error('boom');
      res.json({ ok: true });
    });
    app.use('/v9', r);
    app.use((_err: unknown, _req: express.Request, res: express.Response, _next: express.NextFunction) => {
      res.status(500).end();
    });
    await request(app).get('/v9/things/1').expect(200);
    await request(app).get('/v9/things/bad').expect(500);
    const s = parse(await metrics.registry.metrics());
    expect(value(s, 'switchyard_http_requests_total', { route: '/v9/things/:id', status: '200' })).toBe(1);
    expect(value(s, 'switchyard_http_requests_total', { route: '/v9/things/:id', status: '500' })).toBe(1);
  });
});

describe('worker-side metrics', () => {
  it('records job durations by queue and outcome, served by the worker metrics server', async () => {
    const metrics = createMetrics();
    const connection = createRedis(TEST_REDIS_URL, { patient: true, name: 'test-metrics-worker' });
    const prefix = `${h.prefix.slice(0, -1)}-w}`;
    const queue = new Queue('metrics-probe', { connection, prefix });
    const worker = new Worker(
      'metrics-probe',
      async (job) => {
        await pause(20); // pacing: a job that lasts, so its recorded duration shows its unit (seconds)
        if (job.data.fail) throw new Error('no');
      },
      { connection, prefix, autorun: true },
    );
    instrumentWorker(worker, metrics);
    metrics.trackQueues([queue]);
    const server = await startMetricsServer(metrics.registry, 0, { token: 'w-token', host: '127.0.0.1' });
    try {
      let ok: Job | undefined;
      const settled = new Promise<void>((resolve) => {
        let n = 0;
        const done = () => ++n === 2 && resolve();
        worker.on('completed', (job) => ((ok = job), done()));
        worker.on('failed', done);
      });
      await queue.add('ok', { fail: false });
      await queue.add('bad', { fail: true }, { attempts: 1 });
      await settled;

      const url = `http://127.0.0.1:${server.port}/metrics`;
      expect((await fetch(url)).status).toBe(401);
      const res = await fetch(url, { headers: { Authorization: 'Bearer w-token' } });
      expect(res.status).toBe(200);
      const s = parse(await res.text());
      expect(value(s, 'switchyard_job_duration_seconds_count', { queue: 'metrics-probe', outcome: 'completed' })).toBe(1);
      expect(value(s, 'switchyard_job_duration_seconds_count', { queue: 'metrics-probe', outcome: 'failed' })).toBe(1);
      // The job's own run, start to finish, in seconds.
      expect(value(s, 'switchyard_job_duration_seconds_sum', { queue: 'metrics-probe', outcome: 'completed' })).toBeCloseTo((ok!.finishedOn! - ok!.processedOn!) / 1000, 6);
      expect(ok!.finishedOn! - ok!.processedOn!).toBeGreaterThan(0);
      expect(value(s, 'switchyard_queue_jobs', { queue: 'metrics-probe', state: 'failed' })).toBe(1);
      expect((await fetch(`http://127.0.0.1:${server.port}/other`)).status).toBe(404);
    } finally {
      await server.close();
      await worker.close();
      await queue.obliterate({ force: true });
      await queue.close();
      connection.disconnect();
    }
  });

  it("a worker-only process's /metrics reports the depth of every queue (what an autoscaler scraping workers scales on)", async () => {
    const redis = createRedis(TEST_REDIS_URL, { name: 'test-worker-depth' });
    const prefix = `${h.prefix.slice(0, -1)}-depth}`;
    const closers: Array<() => unknown> = [];
    const metrics = createMetrics();
    const rt = {
      redis,
      metrics,
      config: { ...h.config, queuePrefix: prefix, metricsToken: undefined, worker: { ...h.config.worker, metricsPort: 0 } },
      logger: { warn: () => undefined },
      onClose: (fn: () => unknown) => void closers.unshift(fn),
    } as unknown as Parameters<typeof serveWorkerMetrics>[0];
    const text = new Queue(QUEUES.text, { connection: redis, prefix });
    try {
      await text.add('waiting', { n: 1 });
      await text.add('waiting', { n: 2 });
      const server = await serveWorkerMetrics(rt, '127.0.0.1');
      const s = parse(await (await fetch(`http://127.0.0.1:${server!.port}/metrics`)).text());
      expect(value(s, 'switchyard_queue_jobs', { queue: QUEUES.text, state: 'waiting' })).toBe(2);
      // Every queue is reported, not only those with jobs.
      for (const q of QUEUE_NAMES) expect(value(s, 'switchyard_queue_jobs', { queue: q, state: 'active' })).toBe(0);
    } finally {
      for (const close of closers) await close();
      await text.obliterate({ force: true });
      await text.close();
      redis.disconnect();
    }
  });
});
