/**
 * `npm run bench:scale`: Switchyard spread over processes. Runs 1, 2 and 4 API+worker process pairs (each a
 * separate `node dist/api/main.js` and `node dist/workers/main.js`) on one PostgreSQL, first on one Redis, then
 * on a Redis Cluster (3 masters + 3 replicas, started here), and drives the same closed-loop load at them
 * (bench/http-load.ts, split evenly over the API processes). Reports throughput and the latency the gateway adds
 * over calling the fake provider directly, per setup, into bench/results/scale.md and scale.json.
 *
 * The fake provider answers at once, so the numbers are the gateway's own capacity: with real providers (seconds
 * per answer) the same processes hold far more requests in flight. Nothing is pinned: the processes share the
 * machine's cores, and the load generator and fake provider take their part of them too.
 *
 * Options (env): BENCH_SECONDS (default 6), BENCH_CONCURRENCY (total connections, default 32), BENCH_PAIRS
 * (default "1,2,4"), BENCH_REDIS (single,cluster), BENCH_DATABASE_URL, BENCH_REDIS_URL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createDb } from '../shared/db/client';
import { createRedis, deleteKeys } from '../shared/queue/redis';
import { AccountsService } from '../shared/services/accounts.service';
import { ephemeralPort } from '../shared/runtime/process-utils';
import { startRedisCluster, type RedisCluster } from '../test/scale/helpers/redis-cluster';
import type { LoadResult } from './http-load';
import { firstLine, resetDatabase, waitReady } from './children';

const ROOT = path.resolve(__dirname, '../..');
const DIST = path.join(ROOT, 'dist');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 6);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const PAIRS = (process.env.BENCH_PAIRS ?? '1,2,4').split(',').map(Number);
const REDIS_SETUPS = (process.env.BENCH_REDIS ?? 'single,cluster').split(',');
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/sy_bench_scale';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = '{sybenchscale}';
const SECRET = 'bench-secret';

async function load(cfg: object): Promise<LoadResult> {
  const child = spawn(process.execPath, [path.join(DIST, 'bench/http-load.js'), JSON.stringify(cfg)]);
  return JSON.parse(await firstLine(child)) as LoadResult;
}

function stop(children: ChildProcess[]): Promise<void> {
  return Promise.all(
    children.map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.exitCode !== null || c.signalCode !== null) return resolve();
          const hard = setTimeout(() => c.kill('SIGKILL'), 15_000);
          c.once('exit', () => {
            clearTimeout(hard);
            resolve();
          });
          c.kill('SIGTERM');
        }),
    ),
  ).then(() => undefined);
}

interface Row {
  redis: string;
  pairs: number;
  requests: number;
  errors: number;
  rps: number;
  p50: number;
  p99: number;
  addedP50: number;
  addedP99: number;
}

async function main(): Promise<void> {
  console.error(`bench:scale: ${SECONDS}s per setup, ${CONCURRENCY} connections, pairs ${PAIRS.join('/')}, ${os.cpus().length} CPU cores`);
  await resetDatabase(PG_URL);

  const db = createDb(PG_URL);
  const accounts = new AccountsService(db, SECRET);
  const org = await accounts.createOrganization({ name: 'bench', balance: '100000000' });
  const key = await accounts.createKey({ organizationId: org.organizationId, name: 'bench', rateLimitPerMinute: 0 });
  await db.$disconnect();

  const fake = spawn(process.execPath, [path.join(DIST, 'fakes/main.js'), '--port', '0', '--knobs', JSON.stringify({ promptTokens: 20, completionTokens: 20 })]);
  const fakeUrl = await firstLine(fake);
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sy-bench-scale-'));
  const catalogFile = path.join(work, 'catalog.json');
  fs.writeFileSync(
    catalogFile,
    JSON.stringify({
      providers: { bench: { kind: 'openai', baseUrl: `${fakeUrl}/openai/v1`, apiKeyEnv: 'BENCH_PROVIDER_KEY', timeoutMs: 30_000 } },
      models: {
        'bench/echo': {
          displayName: 'Bench echo',
          type: 'chat',
          endpoints: [{ provider: 'bench', upstreamModel: 'echo', price: { prompt: 40, completion: 160 }, supports: ['temperature', 'max_tokens'], maxOutputTokens: 256 }],
        },
      },
    }),
  );
  const body = { model: 'bench/echo', messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 64 };
  const base = { durationMs: SECONDS * 1000, warmupMs: 1500 };
  const direct = await load({ ...base, url: `${fakeUrl}/openai/v1/chat/completions`, body: { ...body, model: 'echo' }, headers: { Authorization: 'Bearer bench' }, concurrency: CONCURRENCY });
  console.error(`bench:scale: direct to the fake provider: ${direct.rps} rps, p50 ${direct.latencyMs.p50} ms`);

  const rows: Row[] = [];
  for (const setup of REDIS_SETUPS) {
    let cluster: RedisCluster | undefined;
    let redisUrl = REDIS_URL;
    if (setup === 'cluster') {
      cluster = await startRedisCluster(path.join(work, 'cluster'));
      redisUrl = cluster.url;
    }
    try {
      for (const pairs of PAIRS) {
        const r = createRedis(redisUrl, { patient: true });
        await deleteKeys(r, `${PREFIX}*`);
        r.disconnect();
        const children: ChildProcess[] = [];
        const urls: string[] = [];
        try {
          // Distinct ports for every process (two quick ephemeralPort() calls can return the same one).
          const ports = new Set<number>();
          while (ports.size < pairs * 2) ports.add(await ephemeralPort());
          const [apiPorts, metricPorts] = [[...ports].slice(0, pairs), [...ports].slice(pairs)];
          for (let i = 0; i < pairs; i++) {
            const port = apiPorts[i]!;
            const env = {
              ...process.env,
              DATABASE_URL: PG_URL,
              REDIS_URL: redisUrl,
              QUEUE_PREFIX: PREFIX,
              SWITCHYARD_CATALOG: catalogFile,
              SWITCHYARD_SECRET: SECRET,
              BENCH_PROVIDER_KEY: 'bench',
              LOG_LEVEL: 'warn',
              DATABASE_POOL_SIZE: '5',
            };
            const api = spawn(process.execPath, [path.join(DIST, 'api/main.js')], { env: { ...env, PORT: String(port), SWITCHYARD_HOME: path.join(work, `api-${i}`) }, stdio: ['ignore', 'ignore', 'pipe'] });
            const worker = spawn(process.execPath, [path.join(DIST, 'workers/main.js')], {
              env: { ...env, WORKER_METRICS_PORT: String(metricPorts[i]), SWITCHYARD_HOME: path.join(work, `worker-${i}`) },
              stdio: ['ignore', 'ignore', 'pipe'],
            });
            for (const [name, c] of [[`api-${i}`, api], [`worker-${i}`, worker]] as const) c.stderr!.on('data', (d: Buffer) => process.stderr.write(`[${name}] ${d}`));
            children.push(api, worker);
            urls.push(`http://127.0.0.1:${port}`);
          }
          await Promise.all(urls.map((u2) => waitReady(u2)));
          // The load is split evenly over the API processes (as a load balancer would), run concurrently.
          const per = Math.max(1, Math.round(CONCURRENCY / pairs));
          const results = await Promise.all(urls.map((u2) => load({ ...base, url: `${u2}/v1/chat/completions`, body, headers: { Authorization: `Bearer ${key.key}` }, concurrency: per })));
          const requests = results.reduce((a, x) => a + x.requests, 0);
          const rps = Math.round(results.reduce((a, x) => a + x.rps, 0));
          // Latency over all generators: request-weighted p50, worst p99.
          const p50 = results.reduce((a, x) => a + x.latencyMs.p50 * x.requests, 0) / Math.max(1, requests);
          const p99 = Math.max(...results.map((x) => x.latencyMs.p99));
          const row: Row = {
            redis: setup,
            pairs,
            requests,
            errors: results.reduce((a, x) => a + x.errors, 0),
            rps,
            p50: Math.round(p50 * 100) / 100,
            p99: Math.round(p99 * 100) / 100,
            addedP50: Math.round((p50 - direct.latencyMs.p50) * 100) / 100,
            addedP99: Math.round((p99 - direct.latencyMs.p99) * 100) / 100,
          };
          rows.push(row);
          console.error(`bench:scale: ${setup} ${pairs} pair(s): ${rps} rps, p50 ${row.p50} ms, p99 ${row.p99} ms, errors ${row.errors}`);
        } finally {
          await stop(children);
        }
      }
    } finally {
      await cluster?.stop();
    }
  }
  fake.kill('SIGTERM');

  const lines = [
    `${os.cpus().length} CPU cores; ${CONCURRENCY} connections in total; ${SECONDS} s per setup; direct to the fake provider: ${direct.rps} rps, p50 ${direct.latencyMs.p50} / p99 ${direct.latencyMs.p99} ms`,
    '',
    '| Redis | API+worker pairs | rps | p50 / p99 ms | added p50 / p99 ms | errors |',
    '|---|---|---|---|---|---|',
    ...rows.map((r) => `| ${r.redis} | ${r.pairs} | ${r.rps} | ${r.p50} / ${r.p99} | ${r.addedP50} / ${r.addedP99} | ${r.errors} |`),
  ];
  const table = lines.join('\n');
  console.log(table);
  fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  fs.writeFileSync(path.join(ROOT, 'bench/results/scale.json'), JSON.stringify({ at: new Date().toISOString(), cores: os.cpus().length, seconds: SECONDS, concurrency: CONCURRENCY, direct, rows }, null, 2));
  fs.writeFileSync(path.join(ROOT, 'bench/results/scale.md'), `${table}\n`);
  fs.rmSync(work, { recursive: true, force: true });
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
