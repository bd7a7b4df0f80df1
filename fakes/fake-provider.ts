/**
 * Fake upstream AI provider: one real `node:http` server speaking four wire formats on distinct
 * base paths — OpenAI `/openai/v1`, Anthropic `/anthropic/v1`, Gemini `/gemini/v1beta`,
 * Replicate `/replicate/v1` — plus generated files at `/files/<name>.<ext>` and a small control
 * API at `/_fake/{knobs,reset,requests,aborted,batches}` for out-of-process use (see main.ts). OpenAI's Batch API
 * and Anthropic's Message Batches are served too (openai-batches.ts, anthropic-batches.ts).
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fakeHungUp, hangUp, isObj, sendRaw } from './common';
import type { Ctx, WireFormat } from './common';
import type { FakeKnobs } from './fake-knobs';
import type { SharedState } from './fake-state';
import { anthropic } from './anthropic';
import { gemini } from './gemini';
import { openai } from './openai';
import { replicate } from './replicate';
import { MEDIA } from './synth';
import { newBatchStats } from './batch-lines';
import { RequestChecker } from './request-check';
import type { BatchStats } from './fake-state';

export type { FakeKnobs } from './fake-knobs';

/** The extra wait `markerLatencyMs` gives a request of this body. */
function markerLatency(knobs: FakeKnobs, path: string, body: unknown): number {
  if (!knobs.markerLatencyMs || /\/(files|batches)(\/|$)/.test(path)) return 0;
  const text = typeof body === 'string' ? body : JSON.stringify(body ?? null);
  return Object.entries(knobs.markerLatencyMs).reduce((ms, [marker, extra]) => (text.includes(marker) ? ms + extra : ms), 0);
}

export interface RecordedRequest {
  method: string;
  /** Full path without the query string, e.g. `/openai/v1/chat/completions`. */
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
  /** Parsed JSON, the raw text when not JSON, or undefined when empty. */
  body: unknown;
  /** When it arrived and when its response ended or broke off (ms since epoch): concurrency, seen from the provider. */
  startedAt?: number;
  endedAt?: number;
}

export interface FakeProvider {
  /** e.g. http://127.0.0.1:PORT */
  url: string;
  port: number;
  /** Replace the knobs (also restarts the `failTimes` count, and lets go of requests held by `holdReplies` and streams held by `holdAfterChunks`). */
  setKnobs(k: FakeKnobs): void;
  /** Every API request received (the last 1000). */
  requests: RecordedRequest[];
  /** Replicate cancels received (`POST /replicate/v1/predictions/{id}/cancel`), in order. */
  replicateCancels: SharedState['cancels'];
  /** Replicate predictions by id, in creation order (the last one is the newest). */
  replicatePredictions: SharedState['predictions'];
  /** Counters of the OpenAI and Anthropic batch APIs (batches created, lines run, cancels, uploads); also `GET /_fake/batches`. */
  batchStats: BatchStats;
  /** OpenAI batches and Anthropic message batches by id, in creation order. */
  openaiBatches: SharedState['openaiBatches'];
  anthropicBatches: SharedState['anthropicBatches'];
  /**
   * Requests whose caller closed the connection before the reply was complete (an aborted upstream call: a
   * cancelled or timed-out generation), the last 1000. Connections the fake drops itself are not counted.
   */
  aborted: RecordedRequest[];
  /** Resolves once `n` aborted requests were seen (or rejects after `timeoutMs`). */
  waitForAborted(n: number, timeoutMs?: number): Promise<RecordedRequest[]>;
  /** Clear knobs, recorded requests and predictions. */
  reset(): void;
  /** Close the server and every socket (including hanging and endless ones). */
  close(): Promise<void>;
}

const FORMATS: WireFormat[] = [openai, anthropic, gemini, replicate];
const MAX_RECORDED = 1000;

function readBody(req: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

/** The injected error status: `status`, or 500 when only `failTimes` is set. */
function failStatus(k: FakeKnobs): number | undefined {
  if (k.status !== undefined) return k.status >= 400 ? k.status : undefined;
  return k.failTimes !== undefined && !(k.malformed || k.hang || k.resetConnection || k.failMidStream) ? 500 : undefined;
}
const isFailure = (k: FakeKnobs): boolean => failStatus(k) !== undefined || !!(k.malformed || k.hang || k.resetConnection || k.failMidStream);

export async function startFakeProvider(opts: { port?: number; knobs?: FakeKnobs; host?: string } = {}): Promise<FakeProvider> {
  const host = opts.host ?? '127.0.0.1';
  let knobs: FakeKnobs = { ...opts.knobs };
  let seen = 0; // API requests since the knobs were set, for failTimes
  let baseUrl = '';
  const requests: RecordedRequest[] = [];
  const shared: SharedState = { predictions: new Map(), cancels: [], openaiFiles: new Map(), openaiBatches: new Map(), anthropicBatches: new Map(), batchStats: newBatchStats(), checker: new RequestChecker() };
  const aborted: RecordedRequest[] = [];
  let closing = false;
  const timers = new Set<NodeJS.Timeout>();
  const sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const t = setTimeout(() => {
        timers.delete(t);
        resolve();
      }, ms);
      timers.add(t);
    });
  // Requests held by `holdReplies` and streams held by `holdAfterChunks`, let go when the knobs are set again or the fake closes.
  let holds: Array<() => void> = [];
  const letGo = (): void => {
    for (const go of holds) go();
    holds = [];
  };
  /** A request's hold: none once the knobs it started with have been replaced (it was let go before it got there). */
  const heldSince = (theirs: FakeKnobs): Promise<void> => (knobs === theirs ? new Promise<void>((resolve) => holds.push(resolve)) : Promise.resolve());
  const setKnobs = (k: FakeKnobs): void => {
    knobs = { ...k };
    seen = 0;
    letGo();
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const raw = await readBody(req);
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    const query = new URLSearchParams(q < 0 ? '' : url.slice(q + 1));
    let body: unknown;
    if (raw.length > 0) {
      const text = raw.toString('utf8');
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
      }
    }
    const method = req.method ?? 'GET';
    const theirs = knobs;
    const ctx: Ctx = { req, res, method, path, query, body, knobs, failing: false, baseUrl, sleep, held: () => heldSince(theirs), shared };

    if (path.startsWith('/files/')) {
      if (knobs.fileLatencyMs) await sleep(knobs.fileLatencyMs);
      return serveFile(ctx, path.slice(7));
    }
    if (path.startsWith('/_fake/')) return control(ctx, path.slice(6));

    const record: RecordedRequest = { method, path, query: Object.fromEntries(query), headers: req.headers, body, startedAt: Date.now() };
    requests.push(record);
    if (requests.length > MAX_RECORDED) requests.shift();
    res.once('close', () => {
      record.endedAt = Date.now();
      if (res.writableFinished || fakeHungUp(res) || closing) return;
      aborted.push(record);
      if (aborted.length > MAX_RECORDED) aborted.shift();
    });

    let format: WireFormat | undefined;
    for (const f of FORMATS) {
      const prefix = f.prefixes.find((p) => path.startsWith(p) && (path.length === p.length || path[p.length] === '/'));
      if (prefix === undefined) continue;
      format = f;
      ctx.path = path.slice(prefix.length) || '/';
      break;
    }
    if (!format) return sendRaw(ctx, 404, { error: { message: `No fake provider route for ${method} ${path}` } });
    ctx.failing = isFailure(knobs) && (knobs.failTimes === undefined || seen < knobs.failTimes);
    seen++;

    const latency = (knobs.latencyMs ?? 0) + (knobs.latencyJitterMs ? Math.floor(Math.random() * knobs.latencyJitterMs) : 0) + markerLatency(knobs, ctx.path, body);
    if (latency) await sleep(latency);
    if (theirs.holdReplies) await Promise.race([ctx.held(), new Promise<void>((resolve) => res.once('close', () => resolve()))]);
    if (res.destroyed) return;
    if (ctx.failing && knobs.hang) return; // hold the socket until the client or close() drops it
    if (ctx.failing && knobs.resetConnection) return hangUp(res);
    if (!format.auth(ctx)) return;
    const status = ctx.failing ? failStatus(knobs) : undefined;
    if (status !== undefined) {
      if (knobs.retryAfterSeconds !== undefined) res.setHeader('retry-after', String(knobs.retryAfterSeconds));
      return format.error(ctx, status);
    }
    await format.handle(ctx);
  }

  function serveFile(ctx: Ctx, name: string): void {
    const media = MEDIA[name.slice(name.lastIndexOf('.') + 1).toLowerCase()];
    if (!media || (ctx.method !== 'GET' && ctx.method !== 'HEAD') || name.includes('/')) return sendRaw(ctx, 404, { error: { message: 'file not found' } });
    ctx.res.writeHead(200, { 'content-type': media.type, 'content-length': media.bytes.length, 'cache-control': 'public, max-age=3600' });
    ctx.res.end(ctx.method === 'HEAD' ? undefined : media.bytes);
  }

  function control(ctx: Ctx, what: string): void {
    const { method, body } = ctx;
    if (method === 'POST' && what === '/knobs' && isObj(body)) setKnobs(body as FakeKnobs);
    else if (method === 'POST' && what === '/reset') provider.reset();
    else if (method === 'GET' && what === '/requests') return sendRaw(ctx, 200, requests);
    else if (method === 'GET' && what === '/aborted') return sendRaw(ctx, 200, aborted);
    else if (method === 'GET' && what === '/batches') return sendRaw(ctx, 200, shared.batchStats);
    else if (method !== 'GET' || what !== '/knobs') return sendRaw(ctx, 404, { error: { message: 'unknown control route' } });
    sendRaw(ctx, 200, knobs);
  }

  const server = createServer({ noDelay: true, requestTimeout: 0 }, (req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      const message = err instanceof Error ? err.message : String(err);
      res.writeHead(500, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: `fake provider crashed: ${message}` } }));
    });
  });
  server.keepAliveTimeout = 60_000;
  server.headersTimeout = 61_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  baseUrl = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;

  const provider: FakeProvider = {
    url: baseUrl,
    port,
    requests,
    replicateCancels: shared.cancels,
    replicatePredictions: shared.predictions,
    batchStats: shared.batchStats,
    openaiBatches: shared.openaiBatches,
    anthropicBatches: shared.anthropicBatches,
    aborted,
    async waitForAborted(n, timeoutMs = 5_000) {
      const until = Date.now() + timeoutMs;
      while (aborted.length < n) {
        if (Date.now() > until) throw new Error(`expected ${n} aborted upstream requests, saw ${aborted.length}`);
        await new Promise((r) => setTimeout(r, 20));
      }
      return aborted;
    },
    setKnobs,
    reset() {
      setKnobs({});
      requests.length = 0;
      aborted.length = 0;
      shared.predictions.clear();
      shared.cancels.length = 0;
      shared.openaiFiles.clear();
      shared.openaiBatches.clear();
      shared.anthropicBatches.clear();
      Object.assign(shared.batchStats, newBatchStats());
    },
    close() {
      closing = true;
      letGo();
      for (const t of timers) clearTimeout(t);
      timers.clear();
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
  return provider;
}
