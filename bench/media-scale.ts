/**
 * Worker scale-out, measured: the same batch of slow media jobs (each holds its worker slot for the provider's
 * `latencyMs` while the prediction is created) finishes about N times faster with N worker processes.
 *
 *   npm run build && node dist/bench/media-scale.js            # 1, 2 and 4 worker processes, 24 jobs each
 *
 * One API process (`dist/api/main.js`) and N worker processes (`dist/workers/main.js`, WORKER_CONCURRENCY_MEDIA=1)
 * share the machine's PostgreSQL (database sy_bench_media) and Redis (prefix {sybench-media}); a fake provider
 * speaks Replicate's predictions API. Env: MEDIA_BENCH_JOBS (24), MEDIA_BENCH_LATENCY_MS (400), MEDIA_BENCH_WORKERS ("1,2,4").
 */
import path from 'node:path';
import { benchStack } from './children';

const DIST = path.resolve(__dirname, '..');
const PG = process.env.BENCH_DATABASE_URL?.replace(/\/[^/]*$/, '/sy_bench_media') ?? 'postgresql://postgres@127.0.0.1:5432/sy_bench_media';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = '{sybench-media}';
const JOBS = Number(process.env.MEDIA_BENCH_JOBS ?? 24);
const LATENCY = Number(process.env.MEDIA_BENCH_LATENCY_MS ?? 400);
const FLEETS = (process.env.MEDIA_BENCH_WORKERS ?? '1,2,4').split(',').map(Number);

async function main(): Promise<void> {
  const stack = await benchStack({ dist: DIST, databaseUrl: PG, redisUrl: REDIS_URL, prefix: PREFIX, name: 'media', env: { WORKER_CONCURRENCY_MEDIA: '1', MEDIA_POLL_MS: '100', MEDIA_POLL_MAX_MS: '200' } });
  const { db } = stack;
  const fake = await stack.fake({ latencyMs: LATENCY, replicateSteps: 1, mediaDurationSeconds: 5 });
  stack.catalog({
    providers: { rep: { kind: 'replicate', baseUrl: `${fake.url}/replicate/v1`, apiKeyEnv: 'BENCH_PROVIDER_KEY', timeoutMs: 30_000 } },
    models: { 'bench/video': { displayName: 'Bench video', type: 'video', endpoints: [{ provider: 'rep', upstreamModel: 'bench/video-gen', price: { video_per_second: 1 }, supports: ['duration'] }] } },
  });
  const org = await stack.seed('bench', '1000000');
  const port = 3990;
  const api = stack.start('api', { PORT: String(port) });
  for (let i = 0; i < 100 && !(await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)); i++) await new Promise((r) => setTimeout(r, 200));

  const rows: string[] = ['| worker processes | jobs | wall time s | jobs/s | speed-up |', '|---|---|---|---|---|'];
  let base = 0;
  for (const n of FLEETS) {
    const workers = Array.from({ length: n }, (_, i) => stack.start('worker', { WORKER_METRICS_PORT: String(9300 + i) }));
    await new Promise((r) => setTimeout(r, 2500)); // workers connect
    const started = Date.now();
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      const res = await fetch(`http://127.0.0.1:${port}/v1/media`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${org.key}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'bench/video', input: { prompt: `clip ${i}`, duration: 5 }, async: true }),
      });
      ids.push(((await res.json()) as { id: string }).id);
    }
    for (;;) {
      const open = await db.generation.count({ where: { id: { in: ids }, status: { in: ['pending', 'processing'] } } });
      if (open === 0) break;
      await new Promise((r) => setTimeout(r, 50));
    }
    const seconds = (Date.now() - started) / 1000;
    base ||= seconds;
    const done = await db.generation.count({ where: { id: { in: ids }, status: 'completed' } });
    rows.push(`| ${n} | ${done}/${JOBS} | ${seconds.toFixed(2)} | ${(JOBS / seconds).toFixed(2)} | ${(base / seconds).toFixed(2)}× |`);
    console.error(`media-scale: ${n} worker(s): ${seconds.toFixed(2)} s`);
    await Promise.all(workers.map((w) => new Promise((r) => (w.once('exit', r), w.kill('SIGTERM')))));
  }
  api.kill('SIGTERM');
  fake.child.kill('SIGTERM');
  await stack.close();
  console.log(rows.join('\n'));
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
