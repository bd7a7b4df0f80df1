/**
 * History listing at scale: fills a database of its own with 1,000,000 generations, then times the common
 * listings of GET /v1/history/generations through the real HistoryService (SQL included, HTTP excluded) and
 * prints p50/p99 per listing against the 50 ms p99 target.
 *
 *   npm run build && node dist/bench/history-bench.js [--rows 1000000] [--runs 200] [--keep] [--json]
 *
 * BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres) names the server; the benchmark
 * creates `sy_bench_history` there (migrated with shared/db/migrate.ts), and drops it at the end unless `--keep`
 * (with `--keep`, a later run reuses the filled database when it has the same row count).
 *
 * Data: 4 organizations holding 50/30/10/10 % of the rows, 5 keys each (one without a member, one the owner's,
 * three of two members) and 5 % key-less generations; statuses 85 % completed, 10 % failed, 2 % pending,
 * 1 % processing, 2 % cancelled; types 70 % chat, 10 % embedding, 10 % image, 4 % video, 3 % audio, 3 % upscale;
 * created over the last 90 days in insertion order, as a live table grows. Then VACUUM ANALYZE, as autovacuum
 * leaves a table in steady state.
 */
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { migrate } from '../shared/db/migrate';
import type { HistoryListOptions } from '../shared/services/history.service';
import { fill, listingHistory, scenarios } from './history-data';

const args = process.argv.slice(2);
const flag = (name: string) => args.includes(`--${name}`);
const option = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const ROWS = option('rows', 1_000_000);
const RUNS = option('runs', 200);
const KEEP = flag('keep');
const JSON_OUT = flag('json');
const TARGET_P99_MS = 50;
const DB_NAME = 'sy_bench_history';
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

const log = (msg: string) => process.stderr.write(`${msg}\n`);

function urlOf(name: string): string {
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function admin<T>(fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: SERVER_URL });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

function percentile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

async function main(): Promise<void> {
  const url = urlOf(DB_NAME);
  const exists = await admin(async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB_NAME])).rowCount === 1);
  let reuse = false;
  if (exists && KEEP) {
    const c = new Client({ connectionString: url });
    await c.connect();
    reuse = await c
      .query<{ n: number }>('SELECT count(*)::int AS n FROM generations')
      .then((r) => r.rows[0].n === ROWS)
      .catch(() => false);
    await c.end();
  }
  if (reuse) log(`reusing ${DB_NAME} (${ROWS} generations)`);
  else {
    log(`creating ${DB_NAME} with ${ROWS} generations`);
    await admin((c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
    await admin((c) => c.query(`CREATE DATABASE "${DB_NAME}"`));
    await migrate(url);
    await fill(url, ROWS);
  }

  const { history, close } = await listingHistory(url);
  const results: Array<{ name: string; p50: number; p99: number; max: number; total: number; estimated: boolean }> = [];
  try {
    for (const s of scenarios()) {
      const options: HistoryListOptions = { page: 1, limit: 20, sortBy: 'createdAt', sortOrder: 'desc', ...s.options };
      for (let i = 0; i < 5; i++) await history.list(s.viewer, options);
      const times: number[] = [];
      let last = await history.list(s.viewer, options);
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        last = await history.list(s.viewer, options);
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      const r = (x: number) => Math.round(x * 100) / 100;
      results.push({ name: s.name, p50: r(percentile(times, 0.5)), p99: r(percentile(times, 0.99)), max: r(times[times.length - 1]), total: last.meta.total, estimated: last.totalIsEstimate });
    }
  } finally {
    await close();
    if (!KEEP) await admin((c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
  }

  const slow = results.filter((r) => r.p99 >= TARGET_P99_MS);
  if (JSON_OUT) {
    process.stdout.write(`${JSON.stringify({ rows: ROWS, runs: RUNS, targetP99Ms: TARGET_P99_MS, results, slow: slow.map((s) => s.name) })}\n`);
  } else {
    const w = Math.max(...results.map((r) => r.name.length));
    process.stdout.write(`${'listing (page of 20 unless said)'.padEnd(w)}  ${'p50 ms'.padStart(8)}  ${'p99 ms'.padStart(8)}  ${'max ms'.padStart(8)}  total\n`);
    for (const r of results) {
      process.stdout.write(
        `${r.name.padEnd(w)}  ${r.p50.toFixed(2).padStart(8)}  ${r.p99.toFixed(2).padStart(8)}  ${r.max.toFixed(2).padStart(8)}  ${r.total}${r.estimated ? ' (estimate)' : ''}\n`,
      );
    }
    process.stdout.write(slow.length ? `\n${slow.length} listing(s) over the ${TARGET_P99_MS} ms p99 target\n` : `\nevery listing under the ${TARGET_P99_MS} ms p99 target\n`);
  }
  if (slow.length) process.exitCode = 1;
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
