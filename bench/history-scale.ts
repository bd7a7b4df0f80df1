/**
 * History and money at scale (issue 42): a database of its own filled with N generations (default 20,000,000) over
 * the last 90 days (three and a bit monthly partitions; data as bench/history-bench.ts, request `{"input":"hello"}`,
 * no answer: the hot row without content), then:
 *   1. bytes per generation in `generations` (heap and TOAST) and in its indexes, each index's share;
 *   2. every listing of bench:history (38) and its p50 / p99;
 *   3. settlements per second (sy_ledger_group, one close + one open a call, as a group commit's steady state) into this
 *      database and into an empty one, and the ratio;
 *   4. what each index of `generations` costs a settlement: WAL bytes and time per call with the index, and without
 *      it (dropped in turn on the empty database, so rebuilding is instant);
 *   5. the time to retire (detach and drop) the oldest whole month, with `--retire` (the filled database loses it).
 *
 *   npm run bench:history-scale -- [--rows 20000000] [--runs 100] [--calls 2000] [--keep] [--retire] [--json]
 *
 * BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres) names the server; the filled database
 * is `sy_bench_history_scale` (kept with --keep and reused when it holds as many rows, not counting the settlements'
 * own), the empty one `sy_bench_history_empty`.
 */
import fs from 'node:fs';
import path from 'node:path';
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
const ROWS = option('rows', 20_000_000);
const RUNS = option('runs', 100);
const CALLS = option('calls', 2000);
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const FULL = 'sy_bench_history_scale';
const EMPTY = 'sy_bench_history_empty';
const log = (msg: string) => process.stderr.write(`${msg}\n`);
const r2 = (x: number) => Math.round(x * 100) / 100;

function urlOf(name: string): string {
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

async function withClient<T>(url: string, fn: (c: Client) => Promise<T>): Promise<T> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

const percentile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];

/** Bytes per generation: the table (heap, TOAST) and each of its indexes, summed over its partitions. */
async function sizes(c: Client) {
  const { rows: [t] } = await c.query<{ rows: string; heap: string; indexes: string }>(`
    SELECT (SELECT count(*) FROM generations)::text AS rows,
           sum(pg_table_size(p.relid))::text AS heap, sum(pg_indexes_size(p.relid))::text AS indexes
      FROM pg_partition_tree('generations') p WHERE p.isleaf`);
  const { rows: idx } = await c.query<{ name: string; bytes: string }>(`
    SELECT i.indexrelid::regclass::text AS name, sum(pg_relation_size(p.relid))::text AS bytes
      FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid, pg_partition_tree(i.indexrelid) p
     WHERE i.indrelid = 'generations'::regclass AND p.isleaf GROUP BY 1 ORDER BY 2 DESC`);
  const n = Number(t.rows);
  const { rows: parts } = await c.query<{ name: string; rows: string }>(`
    SELECT tableoid::regclass::text AS name, count(*)::text AS rows FROM generations GROUP BY 1 ORDER BY 1`);
  return {
    rows: n,
    partitions: parts.map((p) => ({ name: p.name, rows: Number(p.rows) })),
    heapBytesPerRow: r2(Number(t.heap) / n),
    indexBytesPerRow: r2(Number(t.indexes) / n),
    totalBytesPerRow: r2((Number(t.heap) + Number(t.indexes)) / n),
    indexes: idx.map((i) => ({ name: i.name, bytesPerRow: r2(Number(i.bytes) / n) })),
  };
}

async function listings(url: string) {
  const { history, close } = await listingHistory(url);
  const out: Array<{ name: string; p50: number; p99: number }> = [];
  try {
    for (const s of scenarios()) {
      const options: HistoryListOptions = { page: 1, limit: 20, sortBy: 'createdAt', sortOrder: 'desc', ...s.options };
      // Twice the pool's connections: each has planned the listing's statements once, as in a running process (a
      // connection's first plan of a listing over 20 M rows costs 5-20 ms, once).
      for (let i = 0; i < 8; i++) await history.list(s.viewer, options);
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await history.list(s.viewer, options);
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      out.push({ name: s.name, p50: r2(percentile(times, 0.5)), p99: r2(percentile(times, 0.99)) });
    }
  } finally {
    await close();
  }
  return out;
}

/** The bench organization 0 gets money and its key 1 (the owner's) is the caller: bench:history's accounts. */
async function readyToSettle(c: Client): Promise<void> {
  await c.query(`UPDATE organizations SET balance = 1000000000 WHERE id = 'org_b0'`);
}

let seq = 0;
const openRow = () => ({
  id: `gen_settle_${process.pid}_${++seq}`,
  organization_id: 'org_b0',
  api_key_id: 'key_b0_1',
  user_id: 'usr_b0_0',
  bound: '0.5',
  minimum: '0.1',
  model: 'bench/mini',
  unified_model_id: 'bench/mini',
  request_type: 'chat',
  api_type: 'responses',
  response_mode: 'sync',
  request: { input: 'hello' },
  trace_id: 'bench',
});
const closeRow = (id: string) => ({
  id,
  status: 'completed',
  cost: '0.0001',
  usage: { inputTokens: 10, outputTokens: 8 },
  provider: 'acme',
  final_endpoint_slug: 'acme',
  finish_reason: 'stop',
  attempts_count: 1,
  latency_ms: 1,
  queue_time_ms: 0,
  generation_time_ms: 1,
});
const BATCH_SQL = `SELECT kind, reason, applied FROM sy_ledger_group($1::jsonb, $2::jsonb, $3::timestamptz)`;

/**
 * `calls` calls of one close and one open (a group commit's steady state): settlements per second and ms per call; then
 * the median WAL bytes a call writes, by EXPLAIN (ANALYZE, WAL) of 101 more (this connection's own WAL: the server's
 * is shared with whatever else runs).
 */
async function settle(c: Client, calls: number): Promise<{ perSecond: number; walBytesPerCall: number; msPerCall: number }> {
  let pending = openRow();
  await c.query(BATCH_SQL, [JSON.stringify([pending]), '[]', new Date()]);
  const t = performance.now();
  for (let i = 0; i < calls; i++) {
    const next = openRow();
    const { rows } = await c.query<{ kind: string; reason: string | null; applied: boolean | null }>(BATCH_SQL, [JSON.stringify([next]), JSON.stringify([closeRow(pending.id)]), new Date()]);
    if (rows.some((r) => (r.kind === 'open' && r.reason !== null) || (r.kind === 'close' && r.applied !== true))) throw new Error(`unexpected: ${JSON.stringify(rows)}`);
    pending = next;
  }
  const ms = performance.now() - t;
  const wal: number[] = [];
  for (let i = 0; i < 101; i++) {
    const next = openRow();
    const { rows } = await c.query(`EXPLAIN (ANALYZE, WAL, FORMAT JSON) ${BATCH_SQL}`, [JSON.stringify([next]), JSON.stringify([closeRow(pending.id)]), new Date()]);
    wal.push(Number(rows[0]['QUERY PLAN'][0].Plan['WAL Bytes']));
    pending = next;
  }
  wal.sort((a, b) => a - b);
  return { perSecond: Math.round((calls * 1000) / ms), walBytesPerCall: wal[50], msPerCall: r2(ms / calls) };
}

/** Each index of generations dropped in turn on the empty database: what a settlement saves without it. */
async function indexCosts(c: Client, calls: number) {
  const { rows: idx } = await c.query<{ name: string; def: string }>(`
    SELECT indexname AS name, indexdef AS def FROM pg_indexes WHERE tablename = 'generations' AND indexname <> 'generations_pkey' ORDER BY 1`);
  const base = await settle(c, calls);
  const out: Array<{ name: string; walBytesPerCall: number; msPerCall: number }> = [];
  for (const i of idx) {
    await c.query(`DROP INDEX "${i.name}"`);
    const without = await settle(c, calls);
    await c.query(i.def.replace(' ON ONLY ', ' ON '));
    const again = await settle(c, calls);
    out.push({ name: i.name, walBytesPerCall: again.walBytesPerCall - without.walBytesPerCall, msPerCall: r2(again.msPerCall - without.msPerCall) });
  }
  return { base, indexes: out };
}

async function main(): Promise<void> {
  const full = urlOf(FULL);
  const empty = urlOf(EMPTY);
  const exists = await withClient(SERVER_URL, async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [FULL])).rowCount === 1);
  const reuse = exists && flag('keep') && (await withClient(full, async (c) => (await c.query<{ n: number }>(`SELECT count(*)::int AS n FROM generations WHERE id NOT LIKE 'gen\\_settle\\_%'`)).rows[0].n === ROWS).catch(() => false));
  if (reuse) log(`reusing ${FULL} (${ROWS} generations)`);
  else {
    log(`creating ${FULL} with ${ROWS} generations`);
    await withClient(SERVER_URL, async (c) => {
      await c.query(`DROP DATABASE IF EXISTS "${FULL}" WITH (FORCE)`);
      await c.query(`CREATE DATABASE "${FULL}"`);
    });
    await migrate(full);
    await fill(full, ROWS);
  }
  await withClient(SERVER_URL, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS "${EMPTY}" WITH (FORCE)`);
    await c.query(`CREATE DATABASE "${EMPTY}"`);
  });
  // The empty database has the filled one's migrations, no more (a kept database filled before a later migration).
  const applied = await withClient(full, async (c) => new Set((await c.query<{ n: string }>('SELECT migration_name AS n FROM "_prisma_migrations"')).rows.map((r) => r.n)));
  const missing = fs.readdirSync(path.join(__dirname, '../../prisma/migrations')).filter((n) => /^\d/.test(n) && !applied.has(n)).sort()[0];
  if (missing) log(`${FULL} was migrated before ${missing}: the empty database is too`);
  await migrate(empty, () => {}, missing ? { before: missing } : {});
  await fill(empty, 1000);

  const report: Record<string, unknown> = { rows: ROWS };
  try {
    report.sizes = await withClient(full, sizes);
    log(`sizes: ${JSON.stringify(report.sizes)}`);
    report.listings = await listings(full);
    log('listings timed');
    const rate = async (url: string) => withClient(url, async (c) => {
      await readyToSettle(c);
      await settle(c, Math.min(200, CALLS));
      return settle(c, CALLS);
    });
    // Alternated, twice each, so both see the same machine.
    const e1 = await rate(empty);
    const f1 = await rate(full);
    const e2 = await rate(empty);
    const f2 = await rate(full);
    report.settlements = {
      empty: Math.round((e1.perSecond + e2.perSecond) / 2),
      full: Math.round((f1.perSecond + f2.perSecond) / 2),
      walBytesPerCall: { empty: e2.walBytesPerCall, full: f2.walBytesPerCall },
    };
    log(`settlements: ${JSON.stringify(report.settlements)}`);
    report.indexCosts = await withClient(empty, (c) => indexCosts(c, CALLS));
    log('index costs measured');
    if (flag('retire')) {
      report.retire = await withClient(full, async (c) => {
        const { rows: [m] } = await c.query<{ name: string; rows: string; before: Date }>(`
          WITH m0 AS (SELECT date_trunc('month', min(created_at) AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS m FROM generations)
          SELECT g.tableoid::regclass::text AS name, count(*)::text AS rows, min(m0.m) + interval '2 months' AS before
            FROM generations g, m0 WHERE g.created_at >= m0.m + interval '1 month' AND g.created_at < m0.m + interval '2 months' GROUP BY 1`);
        // The oldest month (a few days of rows) goes first, untimed; then the oldest whole month, timed.
        await c.query(`SELECT sy_partition_detach('generations', $1::timestamptz - interval '1 month')`, [m.before]);
        let t = performance.now();
        const { rows } = await c.query<{ name: string }>(`SELECT sy_partition_detach('generations', $1::timestamptz) AS name`, [m.before]);
        const detachMs = r2(performance.now() - t);
        t = performance.now();
        for (const r of rows) await c.query(`DROP TABLE "${r.name}"`);
        return { partition: m.name, rows: Number(m.rows), detachMs, dropMs: r2(performance.now() - t), dropped: rows.map((r) => r.name) };
      });
    }
  } finally {
    await withClient(SERVER_URL, (c) => c.query(`DROP DATABASE IF EXISTS "${EMPTY}" WITH (FORCE)`));
    if (!flag('keep')) await withClient(SERVER_URL, (c) => c.query(`DROP DATABASE IF EXISTS "${FULL}" WITH (FORCE)`));
  }
  process.stdout.write(`${JSON.stringify(report, null, flag('json') ? 0 : 2)}\n`);
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
