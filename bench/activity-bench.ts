/**
 * GET /v1/activity at scale: fills a database of its own with the activity totals a million generations leave (the
 * generations themselves are not needed: the endpoint never reads them), then times the activity reads through the
 * real ActivityService (SQL included, HTTP excluded) and prints p50/p99 per read against the 20 ms p99 target.
 *
 *   npm run build && node dist/bench/activity-bench.js [--rows 1000000] [--runs 200] [--keys 100] [--models 20] [--keep] [--json]
 *
 * BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres) names the server; the benchmark creates
 * `sy_bench_activity` there (migrated with shared/db/migrate.ts) and drops it at the end (`--keep`: leaves it, to look
 * at the plans).
 *
 * Data, chosen against us: all `--rows` generations in ONE organization (its owner's read is the largest), over the
 * last 30 days (all in the default window), `--models` models with two endpoints each, `--keys` keys of 20 members
 * (5 % key-less), each generation's day, model, endpoint and key drawn independently and uniformly (skewed traffic,
 * as real traffic is, leaves fewer totals rows), added to their totals rows in chunks by the trigger's upsert (the same rows;
 * fewer dead tuples than one upsert a generation leaves, which autovacuum removes); then
 * VACUUM ANALYZE, as autovacuum leaves a table in steady state.
 */
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { migrate } from '../shared/db/migrate';
import { onServer } from './children';
import { createDb } from '../shared/db/client';
import { ActivityService } from '../shared/services/activity.service';
import type { Principal } from '../shared/auth/principal';

const args = process.argv.slice(2);
const option = (name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const ROWS = option('rows', 1_000_000);
const RUNS = option('runs', 200);
const KEYS = option('keys', 100);
const MODELS = option('models', 20);
const JSON_OUT = args.includes('--json');
const KEEP = args.includes('--keep');
const TARGET_P99_MS = 20;
const DB_NAME = 'sy_bench_activity';
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const ORG = 'org_bench_activity';
const CHUNK = 20_000;

const log = (msg: string) => process.stderr.write(`${msg}\n`);

function urlOf(name: string): string {
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

const admin = (sql: string) => onServer(SERVER_URL, sql);

async function fill(url: string, now: Date): Promise<number> {
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await c.query(`INSERT INTO organizations (id, name, callback_secret) VALUES ($1, 'Bench', 'x')`, [ORG]);
    await c.query(`INSERT INTO users (id, organization_id, email, role) SELECT 'usr_b' || u, $1, 'u' || u || '@bench.test', (CASE WHEN u = 0 THEN 'owner' ELSE 'member' END)::"Role" FROM generate_series(0, 19) u`, [ORG]);
    await c.query(`INSERT INTO api_keys (id, organization_id, user_id, name, key_hash, label) SELECT 'key_b' || k, $1, 'usr_b' || (k % 20), 'k' || k, md5(k::text), 'sy_...' || k FROM generate_series(0, $2::int - 1) k`, [ORG, KEYS]);
    const t = performance.now();
    for (let from = 1; from <= ROWS; from += CHUNK) {
      // What the trigger adds for these generations, each ended by a statement of its own (one upsert each, as a
      // settlement at concurrency 1 makes): the same rows, sizes and dead tuples.
      await c.query(
        `INSERT INTO activity_totals AS t (organization_id, day, model, provider, endpoint, api_key_id, user_id,
             usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
         SELECT $1::text, sy_activity_day($2::timestamptz - (abs(hashint8extended(i, 1)) % 30) * interval '1 day'),
                'model/' || m, 'prov' || e, 'model/' || m || '@prov' || e,
                CASE WHEN k < 0 THEN '' ELSE 'key_b' || k END, CASE WHEN k < 0 THEN 'usr_b' || (i % 20) ELSE 'usr_b' || (k % 20) END,
                SUM(round((abs(hashint8extended(i, 4)) % 5000000) / 1000000.0, 10)), COUNT(*),
                SUM(i % 1000), SUM(i % 300), SUM(i % 50), SUM(i % 100)
           FROM generate_series($3::int, $4::int) i
           CROSS JOIN LATERAL (SELECT abs(hashint8extended(i, 2)) % $5::int AS m, abs(hashint8extended(i, 3)) % 2 AS e,
                                      CASE WHEN abs(hashint8extended(i, 5)) % 100 < 5 THEN -1 ELSE abs(hashint8extended(i, 6)) % $6::int END AS k) x
          GROUP BY 1, 2, 3, 4, 5, 6, 7 ORDER BY 1, 2, 3, 4, 5, 6, 7
         ON CONFLICT ON CONSTRAINT activity_totals_pkey DO UPDATE SET usage = t.usage + EXCLUDED.usage, requests = t.requests + EXCLUDED.requests,
           prompt_tokens = t.prompt_tokens + EXCLUDED.prompt_tokens, completion_tokens = t.completion_tokens + EXCLUDED.completion_tokens,
           reasoning_tokens = t.reasoning_tokens + EXCLUDED.reasoning_tokens, cached_tokens = t.cached_tokens + EXCLUDED.cached_tokens`,
        [ORG, now, from, Math.min(ROWS, from + CHUNK - 1), MODELS, KEYS],
      );
    }
    // The members' totals and the organization's, as the trigger's second and third upserts keep them.
    await c.query(`INSERT INTO activity_member_totals (organization_id, day, model, provider, endpoint, user_id, usage, requests,
        prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens)
      SELECT organization_id, day, model, provider, endpoint, user_id, SUM(usage), SUM(requests), SUM(prompt_tokens),
        SUM(completion_tokens), SUM(reasoning_tokens), SUM(cached_tokens) FROM activity_totals WHERE user_id <> '' GROUP BY 1, 2, 3, 4, 5, 6`);
    await c.query('VACUUM ANALYZE activity_member_totals');
    await c.query(`INSERT INTO activity_org_totals (organization_id, day, model, provider, endpoint, usage, requests, prompt_tokens,
        completion_tokens, reasoning_tokens, cached_tokens)
      SELECT organization_id, day, model, provider, endpoint, SUM(usage), SUM(requests), SUM(prompt_tokens), SUM(completion_tokens),
        SUM(reasoning_tokens), SUM(cached_tokens) FROM activity_totals GROUP BY 1, 2, 3, 4, 5`);
    await c.query('VACUUM ANALYZE activity_org_totals');
    log(`  added ${ROWS} generations to the totals in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    await c.query('VACUUM ANALYZE activity_totals');
    const { rows } = await c.query<{ n: string }>('SELECT count(*)::text AS n FROM activity_totals');
    return Number(rows[0].n);
  } finally {
    await c.end();
  }
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

async function main(): Promise<void> {
  await admin(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
  await admin(`CREATE DATABASE ${DB_NAME}`);
  const url = urlOf(DB_NAME);
  try {
    await migrate(url);
    const now = new Date();
    log(`filling ${DB_NAME}: ${ROWS} generations, ${MODELS} models x 2 endpoints, ${KEYS} keys, 30 days`);
    const totals = await fill(url, now);
    log(`  ${totals} totals rows`);
    const db = createDb(url, { max: 2 });
    const activity = new ActivityService(db, () => now);
    const owner: Principal = { kind: 'user', organizationId: ORG, userId: 'usr_b0', role: 'owner', rateLimitPerMinute: null };
    const member: Principal = { kind: 'user', organizationId: ORG, userId: 'usr_b7', role: 'member', rateLimitPerMinute: null };
    const key: Principal = { kind: 'key', organizationId: ORG, keyId: 'key_b3', userId: 'usr_b3', allowedModels: [], rateLimitPerMinute: null };
    const scenarios: Array<{ name: string; run: () => Promise<unknown[]> }> = [
      { name: 'owner, 30 days', run: () => activity.activity(owner, { days: 30 }) },
      { name: 'owner, 90 days', run: () => activity.activity(owner, { days: 90 }) },
      { name: 'owner, one day', run: () => activity.activity(owner, { days: 30, date: new Date(now.getTime() - 3 * 86_400_000 + 7_200_000).toISOString().slice(0, 10) }) },
      { name: 'owner, by key', run: () => activity.activity(owner, { days: 30, api_key_id: 'key_b5' }) },
      { name: 'owner, by member', run: () => activity.activity(owner, { days: 30, user_id: 'usr_b5' }) },
      { name: 'member, its own', run: () => activity.activity(member, { days: 30 }) },
      { name: 'API key, its own', run: () => activity.activity(key, { days: 30 }) },
    ];
    const results: Array<{ name: string; items: number; p50: number; p99: number; max: number }> = [];
    for (const s of scenarios) {
      let items = 0;
      for (let i = 0; i < 10; i++) items = (await s.run()).length; // warm-up
      const times: number[] = [];
      for (let i = 0; i < RUNS; i++) {
        const t = performance.now();
        await s.run();
        times.push(performance.now() - t);
      }
      times.sort((a, b) => a - b);
      results.push({ name: s.name, items, p50: percentile(times, 50), p99: percentile(times, 99), max: times[times.length - 1] });
    }
    await db.$disconnect();
    if (JSON_OUT) process.stdout.write(`${JSON.stringify({ rows: ROWS, totals, results })}\n`);
    else {
      process.stdout.write(`GET /v1/activity over the totals of ${ROWS} generations (${totals} totals rows), ${RUNS} runs, ms (p99 target ${TARGET_P99_MS}):\n`);
      for (const r of results) process.stdout.write(`  ${r.name.padEnd(18)} ${String(r.items).padStart(5)} items  p50 ${r.p50.toFixed(2).padStart(6)}  p99 ${r.p99.toFixed(2).padStart(6)}  max ${r.max.toFixed(2).padStart(6)}${r.p99 > TARGET_P99_MS ? '  over target' : ''}\n`);
    }
  } finally {
    if (!KEEP) await admin(`DROP DATABASE IF EXISTS ${DB_NAME} WITH (FORCE)`);
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
