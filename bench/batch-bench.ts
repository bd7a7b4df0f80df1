/**
 * A 50,000-line batch (docs/batches.md), measured: total time, and the peak RSS of the API process (which runs the
 * batch's driver) and of the worker process (which runs its lines), so memory staying flat in the number of lines
 * is a number, not a claim.
 *
 *   npm run bench:batch            # BATCH_BENCH_LINES (50000), BATCH_BENCH_LATENCY_MS (5), BATCH_LINES_IN_FLIGHT (64)
 *   npm run bench:batch -- --upstream   # the model's endpoint has batch prices: its lines go to the fake provider's own
 *                                       # batch API (docs/batches.md "Provider batch APIs"); BATCH_BENCH_UPSTREAM_MS (5000:
 *                                       # how long the fake takes per upstream batch), BATCH_UPSTREAM_MAX_LINES (10000),
 *                                       # BATCH_UPSTREAM_POLL_MS (1000 here), BATCH_UPSTREAM_GATHER_MS (2000)
 *   npm run bench:batch -- --big-line 95   # the input's first line is one of 95 MB (a chat message that long): past
 *                                          # MAX_BODY_BYTES it answers 413 without running; what reading it costs the API
 *
 * One API process (`dist/api/main.js`) and one worker process (`dist/workers/main.js`) share the machine's PostgreSQL
 * (database sy_bench_batch) and Redis (prefix {sybench-batch}); a fake provider answers chat completions after
 * `latencyMs`. Peak RSS is the kernel's high-water mark of each process (VmHWM in /proc/<pid>/status).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { benchStack, waitReady } from './children';

const DIST = path.resolve(__dirname, '..');
const PG = process.env.BENCH_DATABASE_URL?.replace(/\/[^/]*$/, '/sy_bench_batch') ?? 'postgresql://postgres@127.0.0.1:5432/sy_bench_batch';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = '{sybench-batch}';
const LINES = Number(process.env.BATCH_BENCH_LINES ?? 50_000);
const LATENCY = Number(process.env.BATCH_BENCH_LATENCY_MS ?? 5);
const IN_FLIGHT = process.env.BATCH_LINES_IN_FLIGHT ?? '64';
/** `--upstream`: the endpoint has batch prices, so the lines go to the fake provider's batch API in chunks. */
const UPSTREAM = process.argv.includes('--upstream');
/** `--big-line MB`: the input's first line holds a chat message of that many MB. */
const BIG_MB = process.argv.includes('--big-line') ? Number(process.argv[process.argv.indexOf('--big-line') + 1]) : 0;
const UPSTREAM_MS = Number(process.env.BATCH_BENCH_UPSTREAM_MS ?? 5000);
const UPSTREAM_ENV = {
  BATCH_UPSTREAM_MAX_LINES: process.env.BATCH_UPSTREAM_MAX_LINES ?? '10000',
  BATCH_UPSTREAM_POLL_MS: process.env.BATCH_UPSTREAM_POLL_MS ?? '1000',
  BATCH_UPSTREAM_GATHER_MS: process.env.BATCH_UPSTREAM_GATHER_MS ?? '2000',
};

/** Resident memory now and at its peak (MiB) of a process, from /proc. */
function rss(pid: number): { now: number; peak: number } {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return { now: kib('VmRSS') / 1024, peak: kib('VmHWM') / 1024 };
}

const stop = (p: ChildProcess) => new Promise((r) => (p.once('exit', r), p.kill('SIGTERM')));

async function main(): Promise<void> {
  const stack = await benchStack({ dist: DIST, databaseUrl: PG, redisUrl: REDIS_URL, prefix: PREFIX, name: 'batch', env: { BATCH_LINES_IN_FLIGHT: IN_FLIGHT, BATCH_POLL_MS: '200', WORKER_METRICS_PORT: '9391', ...UPSTREAM_ENV } });
  const { home } = stack;
  const fake = await stack.fake({ latencyMs: LATENCY, batchMs: UPSTREAM_MS });
  const batch = UPSTREAM ? { batch: { price: { prompt: 20, completion: 80 } } } : {};
  stack.catalog({
    providers: { openai: { kind: 'openai', baseUrl: `${fake.url}/openai/v1`, apiKeyEnv: 'BENCH_PROVIDER_KEY', timeoutMs: 30_000 } },
    models: { 'bench/chat': { displayName: 'Bench chat', type: 'chat', endpoints: [{ provider: 'openai', upstreamModel: 'gpt-4.1-mini', price: { prompt: 40, completion: 160 }, ...batch, supports: [] }] } },
  });
  const org = await stack.seed('bench', '1000000');
  const port = 3991;
  const api = stack.start('api', { PORT: String(port) });
  const worker = stack.start('worker');
  const url = `http://127.0.0.1:${port}`;
  await waitReady(url, 30_000);
  const auth = { Authorization: `Bearer ${org.key}` };
  const idle = { api: rss(api.pid!).now, worker: rss(worker.pid!).now };

  const input = path.join(home, 'input.jsonl');
  const out = fs.createWriteStream(input);
  if (BIG_MB) out.write(`${JSON.stringify({ custom_id: 'big', method: 'POST', url: '/v1/chat/completions', body: { model: 'bench/chat', messages: [{ role: 'user', content: 'x'.repeat(BIG_MB * 1_000_000) }] } })}\n`);
  for (let i = 0; i < LINES; i++) {
    out.write(`${JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: 'bench/chat', messages: [{ role: 'user', content: `bench line ${i}` }], max_tokens: 16 } })}\n`);
  }
  await new Promise((r) => out.end(r));
  const bytes = fs.statSync(input).size;

  const started = Date.now();
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([fs.readFileSync(input)]), 'input.jsonl');
  const file = (await (await fetch(`${url}/v1/files`, { method: 'POST', headers: auth, body: form })).json()) as { id: string };
  const uploaded = Date.now();
  const created = (await (await fetch(`${url}/v1/batches`, { method: 'POST', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ input_file_id: file.id, endpoint: '/v1/chat/completions', completion_window: '24h' }) })).json()) as { id: string };
  let b: { status: string; request_counts: { completed: number; failed: number }; in_progress_at: number | null; output_file_id: string | null };
  for (;;) {
    b = (await (await fetch(`${url}/v1/batches/${created.id}`, { headers: auth })).json()) as typeof b;
    if (['completed', 'failed', 'expired', 'cancelled'].includes(b.status)) break;
    await new Promise((r) => setTimeout(r, 1000));
    console.error(`batch-bench: ${b.status} ${b.request_counts.completed + b.request_counts.failed}/${LINES} after ${((Date.now() - started) / 1000).toFixed(0)} s`);
  }
  const seconds = (Date.now() - started) / 1000;
  if (BIG_MB) {
    const errors = await (await fetch(`${url}/v1/files/${(b as { error_file_id?: string }).error_file_id}/content`, { headers: auth })).text();
    const big = errors.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { custom_id: string; response: { status_code: number } }).find((l) => l.custom_id === 'big');
    console.log(`big line: ${BIG_MB} MB, answered ${big?.response.status_code ?? 'not in the error file'}`);
  }
  const peak = { api: rss(api.pid!).peak, worker: rss(worker.pid!).peak };
  const downloadStart = Date.now();
  const content = await (await fetch(`${url}/v1/files/${b.output_file_id}/content`, { headers: auth })).arrayBuffer();
  const downloadSeconds = (Date.now() - downloadStart) / 1000;

  // Where the lines went: the fake's batch API counters (upstream batches created, lines run there) and our chunks.
  const upstream = (await (await fetch(`${fake.url}/_fake/batches`)).json()) as { created: number; linesRun: number; uploads: number };
  const chunks = await stack.db.upstreamBatch.findMany({ select: { lines: true, status: true } });
  const [{ parked }] = await stack.db.$queryRawUnsafe<Array<{ parked: number }>>(`SELECT count(*)::int AS parked FROM generations WHERE routing->>'upstreamBatch' IS NOT NULL`);
  if (UPSTREAM) {
    console.log(
      [
        `| lines | provider batch | chunks (lines each) | upstream batches created | lines run upstream | lines parked for it |`,
        `|---|---|---|---|---|---|`,
        `| ${LINES} | ${UPSTREAM_MS} ms | ${chunks.length} (${chunks.map((c) => c.lines).join(', ')}) | ${upstream.created} | ${upstream.linesRun} | ${parked} |`,
      ].join('\n'),
    );
  }
  console.log(
    [
      `| lines | input | provider latency | in flight | status | completed / failed | upload s | total s | lines/s | API peak RSS MiB (idle) | worker peak RSS MiB (idle) | output | download s |`,
      `|---|---|---|---|---|---|---|---|---|---|---|---|---|`,
      `| ${LINES} | ${(bytes / 1048576).toFixed(1)} MiB | ${LATENCY} ms | ${IN_FLIGHT} | ${b.status} | ${b.request_counts.completed} / ${b.request_counts.failed} | ${((uploaded - started) / 1000).toFixed(2)} | ${seconds.toFixed(1)} | ${(LINES / seconds).toFixed(0)} | ${peak.api.toFixed(0)} (${idle.api.toFixed(0)}) | ${peak.worker.toFixed(0)} (${idle.worker.toFixed(0)}) | ${(content.byteLength / 1048576).toFixed(1)} MiB | ${downloadSeconds.toFixed(2)} |`,
    ].join('\n'),
  );
  await Promise.all([stop(api), stop(worker), stop(fake.child)]);
  await stack.close();
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
