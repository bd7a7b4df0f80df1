/**
 * `npm run bench`: the gateway's own overhead, measured. One run drives the same fixed load straight at the
 * fake provider and through Switchyard (full path: auth, reservation, queue, worker, provider call,
 * settlement, history), then prints requests per second, p50/p99 latency, the latency Switchyard adds and the
 * gateway's CPU time per request.
 *
 * Placement on a 2-core machine: the gateway (API + workers in one process, as `npm start`) is pinned to core 0
 * with taskset; the fake provider and the load generator (bench/http-load.ts, raw sockets, its own process) to
 * core 1. PostgreSQL and Redis are the machine's own services (BENCH_DATABASE_URL, BENCH_REDIS_URL).
 *
 * Options (env): BENCH_SECONDS (default 8), BENCH_QUICK=1 (fewer scenarios), BENCH_DATABASE_URL, BENCH_REDIS_URL,
 * BENCH_NODE_ARGS (extra node flags for the gateway, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Redis from 'ioredis';
import { createDb } from '../shared/db/client';
import { AccountsService } from '../shared/services/accounts.service';
import type { LoadResult } from './http-load';
import { firstLine, resetDatabase, waitReady } from './children';

const ROOT = path.resolve(__dirname, '../..');
const DIST = path.join(ROOT, 'dist');
const SECONDS = Number(process.env.BENCH_SECONDS ?? 8);
const PG_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/sy_bench';
const REDIS_URL = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379';
const PREFIX = '{sybench}';
const SECRET = 'bench-secret';
const TEXT = 'Hello from the fake provider, streamed in several pieces for the benchmark';
const canPin = spawnSync('taskset', ['-c', '0', 'true']).status === 0 && os.cpus().length >= 2;

function pinned(core: number, cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): ChildProcess {
  return canPin ? spawn('taskset', ['-c', String(core), cmd, ...args], { env }) : spawn(cmd, args, { env });
}

/** utime + stime of a process, in ms (Linux /proc). */
function cpuMs(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks at 100 Hz
}

/** The gateway's pid: `taskset` execs node, so the child's pid is node's. */
async function load(cfg: object): Promise<LoadResult> {
  const child = pinned(1, process.execPath, [path.join(DIST, 'bench/http-load.js'), JSON.stringify(cfg)]);
  return JSON.parse(await firstLine(child)) as LoadResult;
}

interface Row {
  scenario: string;
  concurrency: number;
  direct?: LoadResult;
  gateway: LoadResult;
  cpuMsPerRequest: number;
}

async function main(): Promise<void> {
  console.error(`bench: ${SECONDS}s per scenario; pinning ${canPin ? 'on (gateway core 0, load + fake core 1)' : 'off'}`);
  await resetDatabase(PG_URL);
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${PREFIX}*`);
  if (keys.length) await redis.del(...keys);
  redis.disconnect();

  const fake = pinned(1, process.execPath, [path.join(DIST, 'fakes/main.js'), '--port', '0', '--knobs', JSON.stringify({ promptTokens: 20, completionTokens: 20, text: TEXT, streamChunks: 8 })]);
  const fakeUrl = await firstLine(fake);

  const catalogFile = path.join(os.tmpdir(), 'switchyard-bench-catalog.json');
  fs.writeFileSync(
    catalogFile,
    JSON.stringify({
      providers: { bench: { kind: 'openai', baseUrl: `${fakeUrl}/openai/v1`, apiKeyEnv: 'BENCH_PROVIDER_KEY', timeoutMs: 30_000 } },
      models: {
        'bench/echo': {
          displayName: 'Bench echo',
          type: 'chat',
          endpoints: [{ provider: 'bench', upstreamModel: 'echo', price: { prompt: 40, completion: 160 }, supports: ['temperature', 'stream', 'max_tokens'], maxOutputTokens: 256 }],
        },
      },
    }),
  );

  const db = createDb(PG_URL);
  const accounts = new AccountsService(db, SECRET);
  const org = await accounts.createOrganization({ name: 'bench', balance: '100000000' });
  const key = await accounts.createKey({ organizationId: org.organizationId, name: 'bench', rateLimitPerMinute: 0 });
  await db.$disconnect();

  const port = 3900 + Math.floor(Math.random() * 50);
  const nodeArgs = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean); // e.g. --cpu-prof
  /** `npm start` with `processes` processes (WEB_CONCURRENCY), pinned to core 0 or free on every core. */
  const startGateway = async (processes: number, pin: boolean): Promise<ChildProcess> => {
    const args = [...nodeArgs, path.join(DIST, 'bin/start.js')];
    const env = {
      ...process.env,
      PORT: String(port),
      DATABASE_URL: PG_URL,
      REDIS_URL,
      QUEUE_PREFIX: PREFIX,
      SWITCHYARD_CATALOG: catalogFile,
      SWITCHYARD_SECRET: SECRET,
      SWITCHYARD_HOME: path.join(os.tmpdir(), 'switchyard-bench-home'),
      BENCH_PROVIDER_KEY: 'bench',
      LOG_LEVEL: 'warn',
      WEB_CONCURRENCY: String(processes),
    };
    const child = pin ? pinned(0, process.execPath, args, env) : spawn(process.execPath, args, { env });
    child.stderr!.on('data', (c: Buffer) => process.stderr.write(`[gateway] ${c}`));
    await waitReady(`http://127.0.0.1:${port}`);
    return child;
  };
  const stopGateway = async (child: ChildProcess) => {
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  };
  const gateway = await startGateway(1, true);
  const url = `http://127.0.0.1:${port}`;

  const auth = { Authorization: `Bearer ${key.key}` };
  const chatBody = { model: 'bench/echo', messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 64 };
  const directBody = { ...chatBody, model: 'echo' };
  const responsesBody = { model: 'bench/echo', input: 'Hello there', max_output_tokens: 64 };
  const base = { durationMs: SECONDS * 1000, warmupMs: 1500 };
  const quick = process.env.BENCH_QUICK === '1';
  const rows: Row[] = [];

  const measure = async (scenario: string, concurrency: number, through: object, direct?: object) => {
    const directResult = direct ? await load({ ...base, ...direct, concurrency }) : undefined;
    // The gateway's CPU time over the measurement window only (the load generator warms up first).
    let before = 0;
    let after = 0;
    const t1 = setTimeout(() => (before = cpuMs(gateway.pid!)), base.warmupMs + 200);
    const t2 = setTimeout(() => (after = cpuMs(gateway.pid!)), base.warmupMs + base.durationMs);
    const g = await load({ ...base, ...through, concurrency });
    clearTimeout(t1);
    clearTimeout(t2);
    const windowShare = (base.durationMs - 200) / base.durationMs;
    const cpuPerRequest = after > before ? (after - before) / Math.max(1, g.requests * windowShare) : NaN;
    rows.push({ scenario, concurrency, direct: directResult, gateway: g, cpuMsPerRequest: Math.round(cpuPerRequest * 1000) / 1000 });
    console.error(`bench: ${scenario} c=${concurrency}: ${g.rps} rps, p50 ${g.latencyMs.p50} ms, errors ${g.errors}`);
  };

  for (const c of quick ? [1, 32] : [1, 32, 128]) {
    const direct = { url: `${fakeUrl}/openai/v1/chat/completions`, body: directBody, headers: { Authorization: 'Bearer bench' } };
    await measure('chat', c, { url: `${url}/v1/chat/completions`, body: chatBody, headers: auth }, direct);
    await measure('responses', c, { url: `${url}/v1/responses`, body: responsesBody, headers: auth }, direct);
  }
  for (const c of quick ? [1] : [1, 16]) {
    const marker = 'Hello';
    await measure(
      'responses stream (TTFB)',
      c,
      { url: `${url}/v1/responses`, body: { ...responsesBody, stream: true }, headers: auth, stream: true, ttfbMarker: marker },
      { url: `${fakeUrl}/openai/v1/chat/completions`, body: { ...directBody, stream: true }, headers: { Authorization: 'Bearer bench' }, stream: true, ttfbMarker: marker },
    );
  }

  await stopGateway(gateway);

  // Whole machine: `npm start` unpinned with 1, 2 and all cores' worth of processes (WEB_CONCURRENCY), chat at
  // concurrency 32 per process. The load generator and the fake share the machine (the per-core rows above
  // give them a core of their own), so this is what one machine serves, not a clean per-process figure.
  const machine: Array<{ processes: number; result: LoadResult }> = [];
  for (const n of [...new Set([1, 2, os.availableParallelism()])]) {
    const g = await startGateway(n, false);
    const result = await load({ ...base, url: `${url}/v1/chat/completions`, body: chatBody, headers: auth, concurrency: 32 * n });
    machine.push({ processes: n, result });
    console.error(`bench: whole machine, ${n} process(es): ${result.rps} rps, errors ${result.errors}`);
    await stopGateway(g);
  }
  fake.kill('SIGTERM');

  const lines = [
    '| scenario | conc. | direct rps | gateway rps | direct p50 / p99 ms | gateway p50 / p99 ms | added p50 / p99 ms | gateway CPU ms/req | errors |',
    '|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const useTtfb = r.scenario.includes('TTFB');
    const g = useTtfb ? r.gateway.ttfbMs! : r.gateway.latencyMs;
    const d = r.direct ? (useTtfb ? r.direct.ttfbMs! : r.direct.latencyMs) : undefined;
    const added = d ? `${(g.p50 - d.p50).toFixed(2)} / ${(g.p99 - d.p99).toFixed(2)}` : '-';
    lines.push(
      `| ${r.scenario} | ${r.concurrency} | ${r.direct?.rps ?? '-'} | ${r.gateway.rps} | ${d ? `${d.p50} / ${d.p99}` : '-'} | ${g.p50} / ${g.p99} | ${added} | ${r.cpuMsPerRequest} | ${r.gateway.errors} |`,
    );
  }
  const perCore = rows.find((r) => r.scenario === 'chat' && r.concurrency === 32)?.gateway.rps;
  lines.push(
    '',
    `Whole machine (${os.availableParallelism()} cores; \`npm start\` unpinned, WEB_CONCURRENCY processes, chat at 32 per process; per core pinned: ${perCore ?? '-'} rps):`,
    '',
    '| processes | conc. | rps | p50 / p99 ms | errors |',
    '|---|---|---|---|---|',
    ...machine.map((m) => `| ${m.processes} | ${32 * m.processes} | ${m.result.rps} | ${m.result.latencyMs.p50} / ${m.result.latencyMs.p99} | ${m.result.errors} |`),
  );
  const table = lines.join('\n');
  console.log(table);
  fs.mkdirSync(path.join(ROOT, 'bench/results'), { recursive: true });
  fs.writeFileSync(path.join(ROOT, 'bench/results/latest.json'), JSON.stringify({ at: new Date().toISOString(), seconds: SECONDS, pinned: canPin, rows, machine }, null, 2));
  fs.writeFileSync(path.join(ROOT, 'bench/results/latest.md'), `${table}\n`);
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
