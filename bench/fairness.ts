/**
 * Fair queues, measured (docs/architecture.md "Fair queues"): organization B's synchronous image and text latency
 * idle, then while organization A keeps a backlog of 1,000 asynchronous images (topped up as they finish), 600 slow
 * chat calls in flight and a 5,000-line batch running. The target: B's loaded latency within its idle latency + one
 * provider call's time.
 *
 *   npm run bench:fairness     # FAIR_BENCH_SAMPLES (30), FAIR_BENCH_FAST_MS (400), FAIR_BENCH_SLOW_MS (3000)
 *
 * One API process (`dist/api/main.js`, which also runs the batch's driver) and one worker process
 * (`dist/workers/main.js`, default concurrency: text 128, image 16), as bench:batch and bench:media run them, on
 * the machine's PostgreSQL (database sy_bench_fair) and Redis (prefix {sybench-fair}). Two fake providers: the fast
 * one (`FAST_MS`) serves B's chat, every image and the batch's lines; the slow one (`SLOW_MS`) serves A's chat calls,
 * bound to a model of its own. "One provider call's time" is the fast one's latency: the time of the call B makes
 * (and of the image calls that hold the image slots), the stricter reading (B's text may find every text slot held
 * by one of A's slow calls); the table shows both. `FAIR_BENCH_A_CAP` sets A's max-concurrency (default none). The run
 * stops by itself within `FAIR_BENCH_DEADLINE_S` (240).
 */
import type { ChildProcess } from 'node:child_process';
import { setMaxListeners } from 'node:events';
import path from 'node:path';
import { benchStack, waitReady } from './children';

const DIST = path.resolve(__dirname, '..');
const PG = process.env.BENCH_DATABASE_URL?.replace(/\/[^/]*$/, '/sy_bench_fair') ?? 'postgresql://postgres@127.0.0.1:5432/sy_bench_fair';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = '{sybench-fair}';
const SAMPLES = Number(process.env.FAIR_BENCH_SAMPLES ?? 30);
const FAST_MS = Number(process.env.FAIR_BENCH_FAST_MS ?? 400);
const SLOW_MS = Number(process.env.FAIR_BENCH_SLOW_MS ?? 3000);
const DEADLINE_MS = Number(process.env.FAIR_BENCH_DEADLINE_S ?? 240) * 1000;
const PORT = Number(process.env.FAIR_BENCH_PORT ?? 3993);
const A_CAP = Number(process.env.FAIR_BENCH_A_CAP ?? 0); // A's max-concurrency (org-cap.ts); 0: none
const A_IMAGES = 1000;
const A_IN_FLIGHT = 600;
const A_BATCH_LINES = 5000;

const URL_ = `http://127.0.0.1:${PORT}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const quantile = (v: number[], q: number) => [...v].sort((a, b) => a - b)[Math.min(v.length - 1, Math.floor(q * v.length))] ?? NaN;

/** SIGTERM, then SIGKILL if the process has not gone within 10 s (a worker finishing A's slow calls). */
function stop(p: ChildProcess): Promise<unknown> {
  if (p.exitCode !== null) return Promise.resolve();
  return new Promise((r) => {
    const kill = setTimeout(() => p.kill('SIGKILL'), 10_000);
    p.once('exit', () => (clearTimeout(kill), r(undefined)));
    p.kill('SIGTERM');
  });
}

async function post(key: string, route: string, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${URL_}${route}`, { method: 'POST', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal });
}

/** One of B's calls, timed from send to the whole body read; throws on anything but 200. */
async function timed(key: string, kind: 'image' | 'text', i: number): Promise<number> {
  const t = performance.now();
  const res =
    kind === 'image'
      ? await post(key, '/v2/images/generations', { model: 'bench/image', prompt: `B image ${i}` })
      : await post(key, '/v1/chat/completions', { model: 'bench/chat', messages: [{ role: 'user', content: `B text ${i}` }], max_tokens: 16 });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`B ${kind} answered ${res.status}: ${text.slice(0, 300)}`);
  return performance.now() - t;
}

/** B's calls one at a time, image and text alternating, `n` of each (or fewer if `until` comes first). */
async function measureB(key: string, n: number, until: number): Promise<{ image: number[]; text: number[] }> {
  const out = { image: [] as number[], text: [] as number[] };
  for (let i = 0; i < n && Date.now() < until; i++) {
    out.image.push(await timed(key, 'image', i));
    out.text.push(await timed(key, 'text', i));
  }
  return out;
}

async function main(): Promise<void> {
  const deadline = Date.now() + DEADLINE_MS;
  const stack = await benchStack({ dist: DIST, databaseUrl: PG, redisUrl: REDIS_URL, prefix: PREFIX, name: 'fair', env: { BATCH_POLL_MS: '200', WORKER_METRICS_PORT: String(PORT + 5400) } });
  const { db, accounts } = stack;
  const [fast, slow] = await Promise.all([FAST_MS, SLOW_MS].map((latencyMs) => stack.fake({ latencyMs })));
  const fakes = [fast!.child, slow!.child];
  const provider = (url: string) => ({ kind: 'openai', baseUrl: `${url}/openai/v1`, apiKeyEnv: 'BENCH_PROVIDER_KEY', timeoutMs: 60_000 });
  const chat = (p: string) => ({ displayName: `Bench chat (${p})`, type: 'chat', endpoints: [{ provider: p, upstreamModel: 'gpt-4.1-mini', price: { prompt: 40, completion: 160 }, supports: ['max_tokens'] }] });
  stack.catalog({
    providers: { fast: provider(fast!.url), slow: provider(slow!.url) },
    models: {
      'bench/chat': chat('fast'),
      'bench/slow-chat': chat('slow'),
      'bench/image': { displayName: 'Bench image', type: 'image', endpoints: [{ provider: 'fast', upstreamModel: 'gpt-image-1', price: { image: 1 }, supports: [] }] },
    },
  });
  const seed = async (name: string) => {
    const s = await stack.seed(name, '100000000');
    return { org: s.organizationId, key: s.key };
  };
  const A = await seed('bench A');
  if (A_CAP) await accounts.updateOrganization(A.org, { maxConcurrency: A_CAP });
  const B = await seed('bench B');
  const api = stack.start('api', { PORT: String(PORT) });
  const worker = stack.start('worker');
  const aborter = new AbortController();
  setMaxListeners(0, aborter.signal); // one listener per in-flight call of A's
  const say = (s: string) => console.error(`fairness: ${s}`);
  try {
    await waitReady(URL_);
    await sleep(2500); // the worker connects
    await measureB(B.key, 2, deadline); // warm-up, not counted
    say('idle phase');
    const idleFrom = new Date();
    const idle = await measureB(B.key, SAMPLES, deadline);
    const idleTo = new Date();

    // A's load: a backlog of 1,000 asynchronous images (topped up as they finish), 600 slow chat calls kept in
    // flight, a 5,000-line batch.
    say('A: enqueueing images');
    const aImagesOpen = () => db.generation.count({ where: { organizationId: A.org, apiType: 'media', status: { in: ['pending', 'processing'] } } });
    let aImages = 0;
    const enqueueImages = async (n: number) => {
      let left = n;
      await Promise.all(
        Array.from({ length: 32 }, async () => {
          for (; left > 0; left--) {
            const res = await post(A.key, '/v1/media', { model: 'bench/image', input: { prompt: `A image ${aImages++}` }, async: true });
            if (res.status !== 202 && res.status !== 200) throw new Error(`A image answered ${res.status}: ${await res.text()}`);
            await res.arrayBuffer();
          }
        }),
      );
    };
    await enqueueImages(A_IMAGES);
    const topUp = (async () => {
      while (!aborter.signal.aborted) {
        await sleep(500);
        if (!aborter.signal.aborted) await enqueueImages(A_IMAGES - (await aImagesOpen()));
      }
    })().catch((e: Error) => e);
    say('A: slow calls and the batch');
    const slow = { done: 0, failed: 0 };
    const loops = Array.from({ length: A_IN_FLIGHT }, async (_, l) => {
      for (let i = 0; !aborter.signal.aborted; i++) {
        try {
          const res = await post(A.key, '/v1/chat/completions', { model: 'bench/slow-chat', messages: [{ role: 'user', content: `A slow ${l}.${i}` }], max_tokens: 16 }, aborter.signal);
          await res.arrayBuffer();
          if (res.status === 200) slow.done++;
          else slow.failed++;
        } catch {
          if (!aborter.signal.aborted) slow.failed++;
        }
      }
    });
    const lines = Array.from({ length: A_BATCH_LINES }, (_, i) => JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'bench/chat', messages: [{ role: 'user', content: `A line ${i}` }], max_tokens: 16 } })).join('\n');
    const form = new FormData();
    form.append('purpose', 'batch');
    form.append('file', new Blob([`${lines}\n`]), 'input.jsonl');
    const auth = { Authorization: `Bearer ${A.key}` };
    const file = (await (await fetch(`${URL_}/v1/files`, { method: 'POST', headers: auth, body: form })).json()) as { id: string };
    const batch = (await (await post(A.key, '/v1/batches', { input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' })).json()) as { id: string };
    type BatchView = { status: string; request_counts: { completed: number; failed: number } };
    const batchNow = async () => (await (await fetch(`${URL_}/v1/batches/${batch.id}`, { headers: auth })).json()) as BatchView;
    await sleep(SLOW_MS + 1000); // every slow call has gone through a provider call once; the batch is under way
    const before = { aImages, images: await aImagesOpen(), batch: await batchNow(), slow: { ...slow } };
    say(`loaded phase: A has ${before.images} images open, batch ${before.batch.status}, ${before.slow.done} slow calls done`);
    const loadedFrom = new Date();
    const loaded = await measureB(B.key, SAMPLES, deadline);
    const loadedTo = new Date();
    const after = { aImages, images: await aImagesOpen(), batch: await batchNow(), slow: { ...slow } };
    aborter.abort();
    await post(A.key, `/v1/batches/${batch.id}/cancel`, {}).then((r) => r.arrayBuffer(), () => undefined);
    await Promise.allSettled(loops);
    const topUpError = await topUp;
    if (topUpError) throw topUpError;

    // Two readings of "one provider call's time": B's own call (the fast provider), or the call holding the slot B
    // waits for (an image call for B's image, one of A's slow chat calls for B's text).
    const rows = [
      `| B's call | idle ms | loaded ms | loaded / idle | idle + B's own call (${FAST_MS} ms) | idle + the slot holder's call |`,
      '|---|---|---|---|---|---|',
    ];
    let missed = 0;
    const holder = { image: FAST_MS, text: SLOW_MS };
    for (const kind of ['image', 'text'] as const) {
      for (const q of [0.5, 0.95]) {
        const [i, l] = [quantile(idle[kind], q), quantile(loaded[kind], q)];
        const verdict = (extra: number) => `${(i + extra).toFixed(0)} ${l <= i + extra ? 'PASS' : 'FAIL'}`;
        if (l > i + FAST_MS) missed++;
        rows.push(`| ${kind} p${q * 100} (${idle[kind].length} idle, ${loaded[kind].length} loaded) | ${i.toFixed(0)} | ${l.toFixed(0)} | ${(l / i).toFixed(2)}× | ${verdict(FAST_MS)} | ${verdict(holder[kind])} (${holder[kind]} ms) |`);
      }
    }
    // Where B's time went: its generations' wait in the queue (enqueue to the job's start, queueTimeMs).
    const queued = async (from: Date, to: Date, apiTypes: string[]) =>
      (await db.generation.findMany({ where: { organizationId: B.org, apiType: { in: apiTypes }, createdAt: { gte: from, lte: to } }, select: { queueTimeMs: true } })).map((g) => g.queueTimeMs ?? NaN);
    const waits = [];
    for (const [kind, types] of [['image', ['images', 'media']], ['text', ['chat_completions']]] as const) {
      const [i, l] = [await queued(idleFrom, idleTo, [...types]), await queued(loadedFrom, loadedTo, [...types])];
      waits.push(`B's ${kind} queue wait p50 / p95 ms: idle ${quantile(i, 0.5)} / ${quantile(i, 0.95)}, loaded ${quantile(l, 0.5)} / ${quantile(l, 0.95)} (${l.length} records)`);
    }
    const load = (s: typeof before) => `A's images open ${s.images} (${s.aImages} enqueued), batch ${s.batch.status} ${s.batch.request_counts.completed + s.batch.request_counts.failed}/${A_BATCH_LINES}, A's slow calls done ${s.slow.done} (failed ${s.slow.failed})`;
    console.log(
      [
        `fast provider ${FAST_MS} ms (B's calls, every image, the batch's lines), slow provider ${SLOW_MS} ms (A's ${A_IN_FLIGHT} chat calls in flight); A's max-concurrency ${A_CAP || 'none'}; 1 API + 1 worker process`,
        `load when B started: ${load(before)}`,
        `load when B ended:   ${load(after)}`,
        '',
        ...rows,
        '',
        ...waits,
        '',
        missed ? `FAIL: ${missed} of 4 lines over idle + B's own call` : "PASS: B within idle + its own provider call's time on every line",
      ].join('\n'),
    );
  } finally {
    aborter.abort();
    await Promise.all([stop(api), stop(worker), ...fakes.map(stop)]);
    await stack.close();
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
