/**
 * Everything an end-to-end test needs, in-process: a fake provider speaking every wire format, a catalog
 * pointing at it, the API (own database, own Redis prefix), the worker pool on the same prefix, and a
 * listening HTTP server for SDK tests. `close()` tears it all down.
 *
 *   const s = await createTestStack({ env: { SYNC_WAIT_MS: '2000' } });
 *   const org = await s.seed();
 *   await request(s.app).post('/v1/responses').set(org.auth).send({...});
 */
import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type Redis from 'ioredis';
import { parseCatalog } from '../../shared/catalog/load-catalog';
import type { Catalog } from '../../shared/catalog/catalog.types';
import { createUpstreamClient, type UpstreamClient } from '../../shared/providers/api';
import { createRedis, whenReady } from '../../shared/queue/redis';
import { createLogger } from '../../shared/logger';
import type { AppContext, AppDeps } from '../../api/app-context';
import type { Ledger } from '../../shared/billing/ledger';
import { buildWorkerDeps, type WorkerDeps } from '../../workers/worker-deps';
import { startWorkerPool, type WorkerPool } from '../../workers/worker-pool';
import { startBatchDriver } from '../../api/services/batch-driver-worker';
import type { QueueName } from '../../shared/queue/queue-names';
import { LocalLane } from '../../shared/runtime/local-lane';
import { startFakeProvider, type FakeKnobs, type FakeProvider } from '../../fakes/fake-provider';
import { createTestApp, type TestApp } from './test-app';
import { seedKey, seedOrg, TEST_SECRET } from './fixtures';
import type { TestDb } from './test-db';
import { TEST_REDIS_URL } from './test-env';
import { startTracing } from '../../shared/telemetry/tracing';

/** The API key every fake provider accepts (any non-empty bearer works). */
export const FAKE_PROVIDER_KEY = 'fake-provider-key';

type RawEndpoint = Record<string, unknown> & { provider: string; upstreamModel: string; price: Record<string, number | string> };
type RawModel = { displayName: string; type: string; endpoints: RawEndpoint[] };
export interface RawCatalog {
  providers: Record<string, Record<string, unknown> & { kind: string; baseUrl: string }>;
  models: Record<string, RawModel>;
}

/** Model ids of the stack's catalog, so tests do not repeat strings. */
export const STACK_MODELS = {
  chat: 'openai/gpt-4.1-mini',
  chatAnthropic: 'anthropic/claude-sonnet-4',
  chatGemini: 'google/gemini-2.5-flash',
  embedding: 'openai/text-embedding-3-small',
  embeddingMultimodal: 'google/gemini-embedding-2',
  imageLegacy: 'openai/dall-e-3',
  image: 'openai/gpt-image-1',
  imageHosted: 'black-forest-labs/flux-schnell',
  video: 'google/veo-3',
  audio: 'minimax/music-1.5',
  upscale: 'topazlabs/video-upscale',
} as const;

const MEDIA_INPUTS = ['aspect_ratio', 'images', 'seed', 'watermark', 'image_resolution', 'quality', 'output_format', 'max_images', 'isEnhance', 'guidance_scale', 'strength', 'enable_safety_checker', 'duration', 'negative_prompt'];
const TEXT_PARAMS = ['temperature', 'top_p', 'tools', 'tool_choice', 'parallel_tool_calls', 'reasoning', 'response_format', 'logprobs', 'top_logprobs', 'seed', 'stop', 'max_tokens', 'stream', 'presence_penalty', 'frequency_penalty'];

/** The stack's catalog in the file format (decisions.md section 1), every provider pointing at the fake. */
export function stackCatalog(fakeUrl: string): RawCatalog {
  const provider = (kind: string, path: string) => ({ kind, baseUrl: `${fakeUrl}${path}`, apiKeyEnv: 'FAKE_PROVIDER_KEY', timeoutMs: 10_000 });
  return {
    providers: {
      openai: provider('openai', '/openai/v1'),
      anthropic: provider('anthropic', '/anthropic/v1'),
      gemini: provider('gemini', '/gemini/v1beta'),
      replicate: provider('replicate', '/replicate/v1'),
    },
    models: {
      [STACK_MODELS.chat]: {
        displayName: 'GPT-4.1 mini',
        type: 'chat',
        endpoints: [{ provider: 'openai', upstreamModel: 'gpt-4.1-mini', price: { prompt: 40, completion: 160 }, supports: TEXT_PARAMS, maxOutputTokens: 4096 }],
      },
      [STACK_MODELS.chatAnthropic]: {
        displayName: 'Claude Sonnet 4',
        type: 'chat',
        endpoints: [{ provider: 'anthropic', upstreamModel: 'claude-sonnet-4', price: { prompt: 300, completion: 1500 }, supports: TEXT_PARAMS.filter((p) => p !== 'logprobs' && p !== 'top_logprobs') }],
      },
      [STACK_MODELS.chatGemini]: {
        displayName: 'Gemini 2.5 Flash',
        type: 'chat',
        endpoints: [{ provider: 'gemini', upstreamModel: 'gemini-2.5-flash', price: { prompt: 30, completion: 250 }, supports: TEXT_PARAMS }],
      },
      [STACK_MODELS.embedding]: {
        displayName: 'Text Embedding 3 small',
        type: 'embedding',
        endpoints: [{ provider: 'openai', upstreamModel: 'text-embedding-3-small', price: { prompt: 2 }, supports: [], defaultDimensions: 1536, maxDimensions: 1536 }],
      },
      [STACK_MODELS.embeddingMultimodal]: {
        displayName: 'Gemini Embedding 2',
        type: 'embedding',
        endpoints: [{ provider: 'gemini', upstreamModel: 'gemini-embedding-2', price: { prompt: 20 }, supports: ['dimensions'], defaultDimensions: 3072, maxDimensions: 3072, multimodal: true }],
      },
      [STACK_MODELS.imageLegacy]: {
        displayName: 'DALL·E 3',
        type: 'image',
        endpoints: [{ provider: 'openai', upstreamModel: 'dall-e-3', price: { image: 4 }, supports: [], legacy: true }],
      },
      [STACK_MODELS.image]: {
        displayName: 'GPT Image 1',
        type: 'image',
        endpoints: [{ provider: 'openai', upstreamModel: 'gpt-image-1', price: { image: 6, request: '0.5' }, supports: [], maxImages: 10 }],
      },
      [STACK_MODELS.imageHosted]: {
        displayName: 'FLUX schnell',
        type: 'image',
        endpoints: [{ provider: 'replicate', upstreamModel: 'black-forest-labs/flux-schnell', price: { image: '1.5' }, supports: ['aspect_ratio', 'seed', 'output_format', 'max_images', 'images'], maxImages: 4 }],
      },
      [STACK_MODELS.video]: {
        displayName: 'Veo 3',
        type: 'video',
        endpoints: [
          {
            provider: 'replicate',
            upstreamModel: 'google/veo-3',
            price: { video_per_second: 10, request: 1 },
            supports: MEDIA_INPUTS.filter((p) => p !== 'max_images' && p !== 'watermark'),
            operations: ['extend', 'upscale_1080p', 'upscale_4k'],
            // The longest video it may produce, whatever is asked: what a video reserves (issue 10 item 8).
            maxDurationSeconds: 10,
          },
        ],
      },
      [STACK_MODELS.audio]: {
        displayName: 'MiniMax Music 1.5',
        type: 'audio',
        endpoints: [{ provider: 'replicate', upstreamModel: 'minimax/music-1.5', price: { request: 2 }, supports: ['duration', 'seed'] }],
      },
      [STACK_MODELS.upscale]: {
        displayName: 'Topaz Video Upscale',
        type: 'upscale',
        endpoints: [{ provider: 'replicate', upstreamModel: 'topazlabs/video-upscale', price: { video_per_second: 2, request: '0.5' }, supports: ['upscale_factor'] }],
      },
    },
  };
}

export interface StackOrg {
  organizationId: string;
  ownerUserId: string;
  ownerToken: string;
  callbackSecret: string;
  /** `whsec_...`, as `switchyard org create` prints it: the Standard Webhooks key of the callbacks. */
  webhookSecret: string;
  key: { id: string; key: string; label: string };
  /** `{ Authorization: 'Bearer <key>' }` for supertest's `.set(...)`. */
  auth: { Authorization: string };
  accounts: Awaited<ReturnType<typeof seedOrg>>['accounts'];
}

export interface TestStack {
  app: TestApp['app'];
  /** `http://127.0.0.1:<port>` of the listening API (SDK tests use `${url}/v1`). */
  url: string;
  fake: FakeProvider;
  ctx: AppContext;
  t: TestDb;
  catalog: Catalog;
  workerDeps: WorkerDeps;
  pool: WorkerPool;
  /** An organization with a balance and an API key. */
  seed(opts?: { balance?: string; keyLimit?: string }): Promise<StackOrg>;
  /**
   * Waits until the settlements promised to the organization are committed (a worker replies before its commit:
   * shared/billing/settlement-journal.ts). What the read routes do; a test reading the database directly calls it.
   */
  settled(organizationId: string): Promise<void>;
  /** Stops the workers, servers and connections and drops the test database. */
  close(): Promise<void>;
}

export interface CatalogOverrides {
  providers?: Record<string, RawCatalog['providers'][string] | null>;
  models?: Record<string, RawModel | null>;
}

export interface TestStackOptions {
  /** Providers/models merged over (and so replacing) the stack catalog's entries; null deletes one. */
  catalogOverrides?: CatalogOverrides | ((fakeUrl: string) => CatalogOverrides);
  /**
   * Service environment (SYNC_WAIT_MS, CALLBACK_ALLOW_PRIVATE, WORKER_CONCURRENCY_*, MEDIA_POLL_MS, ...).
   * By default files go to a temporary SWITCHYARD_HOME and PUBLIC_BASE_URL is the stack's own URL.
   */
  env?: Record<string, string>;
  knobs?: FakeKnobs;
  /** Queues the in-process worker pool serves (default: all). */
  queues?: QueueName[];
  /** Start no workers (tests of what happens while nothing runs the queue). */
  noWorkers?: boolean;
  appDeps?: Partial<AppDeps>;
  /**
   * Awaited before each close of the stack's ledger (the API's and the workers') commits, given the close's arguments: a
   * test holds settlements with it.
   */
  beforeClose?: (...close: Parameters<Ledger['close']>) => Promise<void>;
  /**
   * The workers run as another process's would: a lane of their own (shared/runtime/local-lane.ts), so nothing is claimed
   * at enqueue and every reply crosses Redis. Default: one lane for the API and the workers, as in a process of `npm start`.
   */
  separateLanes?: boolean;
}

function merge<T>(base: Record<string, T>, over: Record<string, T | null> | undefined): Record<string, T> {
  const out = { ...base };
  for (const [k, v] of Object.entries(over ?? {})) {
    if (v === null) delete out[k];
    else out[k] = v;
  }
  return out;
}

export async function createTestStack(opts: TestStackOptions = {}): Promise<TestStack> {
  // Listen first, so file URLs (PUBLIC_BASE_URL) name the port the stack really serves on.
  const server: Server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-stack-'));
  const env = { SWITCHYARD_HOME: home, PUBLIC_BASE_URL: url, ...opts.env };

  const fake = await startFakeProvider({ knobs: opts.knobs });
  const raw = stackCatalog(fake.url);
  const overrides = typeof opts.catalogOverrides === 'function' ? opts.catalogOverrides(fake.url) : opts.catalogOverrides;
  const catalog = parseCatalog(
    { providers: merge(raw.providers, overrides?.providers), models: merge(raw.models, overrides?.models) },
    { FAKE_PROVIDER_KEY },
  );
  const h = await createTestApp({ catalog, env, beforeClose: opts.beforeClose, deps: { authCacheMs: 0, ...opts.appDeps } });
  const ctx = h.app.locals.ctx;
  server.on('request', h.app);

  const redis: Redis = createRedis(TEST_REDIS_URL, { name: 'test-worker' });
  const blocking: Redis = createRedis(TEST_REDIS_URL, { name: 'test-worker-bullmq', patient: true });
  await whenReady(redis);
  const upstream: UpstreamClient = createUpstreamClient();
  const workerDeps = buildWorkerDeps({
    config: h.config,
    db: h.t.db,
    pool: h.t.pool,
    redis,
    catalog,
    logger: createLogger({ silent: !process.env.TEST_LOGS }),
    upstream,
    // The API's secret, so file URLs signed by workers open through the API.
    secret: TEST_SECRET,
    lane: opts.separateLanes ? new LocalLane() : ctx.lane,
    jobConnection: blocking,
    // One ledger for the API and the workers, as in a process of `npm start` (shared/runtime/bootstrap.ts).
    ledger: ctx.ledger,
    // Tracing of their own, as a worker process has (OTEL_EXPORTER_OTLP_ENDPOINT in `env`): spans meet only through the job.
    tracing: startTracing(h.config.tracing),
  });
  const pool: WorkerPool = opts.noWorkers ? { workers: [], ready: async () => undefined, close: async () => undefined } : startWorkerPool(workerDeps, blocking, { queues: opts.queues });
  await pool.ready();
  // The API's batch drivers (the `batches` queue), as api/main.ts starts them beside the HTTP server.
  const batches = opts.noWorkers ? null : startBatchDriver(ctx.batchDriver, blocking, h.config, createLogger({ silent: !process.env.TEST_LOGS }));

  return {
    app: h.app,
    url,
    fake,
    ctx,
    t: h.t,
    catalog,
    workerDeps,
    pool,
    async seed(o = {}) {
      const org = await seedOrg(h.t.db, { balance: o.balance ?? '1000' });
      const key = await seedKey(org.accounts, org.organizationId, { name: 'test', limit: o.keyLimit });
      return {
        organizationId: org.organizationId,
        ownerUserId: org.ownerUserId,
        ownerToken: org.ownerToken,
        callbackSecret: org.callbackSecret,
        webhookSecret: org.webhookSecret,
        key,
        auth: { Authorization: `Bearer ${key.key}` },
        accounts: org.accounts,
      };
    },
    async settled(organizationId) {
      await ctx.settlements.waitSettled(organizationId);
    },
    async close() {
      await batches?.close();
      await pool.close();
      await workerDeps.tracing?.shutdown();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await upstream.close();
      await fake.close();
      redis.disconnect();
      blocking.disconnect();
      await h.close();
      fs.rmSync(home, { recursive: true, force: true });
    },
  };
}
