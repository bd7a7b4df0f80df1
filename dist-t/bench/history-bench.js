"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
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
const node_perf_hooks_1 = require("node:perf_hooks");
const pg_1 = require("pg");
const migrate_1 = require("../shared/db/migrate");
const client_1 = require("../shared/db/client");
const history_service_1 = require("../shared/services/history.service");
const args = process.argv.slice(2);
const flag = (name) => args.includes(`--${name}`);
const option = (name, dflt) => {
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
const log = (msg) => process.stderr.write(`${msg}\n`);
function urlOf(name) {
    const u = new URL(SERVER_URL);
    u.pathname = `/${name}`;
    return u.toString();
}
async function admin(fn) {
    const c = new pg_1.Client({ connectionString: SERVER_URL });
    await c.connect();
    try {
        return await fn(c);
    }
    finally {
        await c.end();
    }
}
/** Accounts, then the generations with the table's secondary indexes dropped and rebuilt (several times faster). */
async function fill(url) {
    const c = new pg_1.Client({ connectionString: url });
    await c.connect();
    try {
        await c.query(`INSERT INTO organizations (id, name, callback_secret) SELECT 'org_b' || o, 'Bench ' || o, 'x' FROM generate_series(0, 3) o`);
        await c.query(`INSERT INTO users (id, organization_id, email, role)
      SELECT 'usr_b' || o || '_' || u, 'org_b' || o, 'u' || u || '@b' || o, (CASE WHEN u = 0 THEN 'owner' ELSE 'member' END)::"Role"
      FROM generate_series(0, 3) o, generate_series(0, 2) u`);
        // Keys: 0 without a member, 1 the owner's, 2 and 3 member 1's, 4 member 2's.
        await c.query(`INSERT INTO api_keys (id, organization_id, user_id, name, key_hash, label)
      SELECT 'key_b' || o || '_' || k, 'org_b' || o,
        CASE k WHEN 0 THEN NULL WHEN 1 THEN 'usr_b' || o || '_0' WHEN 4 THEN 'usr_b' || o || '_2' ELSE 'usr_b' || o || '_1' END,
        'bench key ' || k, md5(o || '_' || k), 'sy_...' || lpad(o::text || k::text, 6, 'x')
      FROM generate_series(0, 3) o, generate_series(0, 4) k`);
        const idx = await c.query(`SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'generations' AND indexname <> 'generations_pkey'`);
        for (const i of idx.rows)
            await c.query(`DROP INDEX "${i.indexname}"`);
        let t = node_perf_hooks_1.performance.now();
        await c.query(`INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id, model_display_name, request_type,
        api_type, response_mode, status, provider, final_endpoint_slug, usage, client_cost, request, attempts_count, generation_time_ms,
        latency_ms, created_at, completed_at, is_cancelled)
      SELECT 'gen_' || lpad(i::text, 10, '0'), 'org_b' || s.o,
        CASE WHEN s.ks = 0 THEN NULL ELSE 'key_b' || s.o || '_' || (s.ks % 5) END,
        CASE WHEN s.ks = 0 THEN 'usr_b' || s.o || '_' || (abs(hashint8extended(i, 4)) % 2) WHEN s.ks % 5 = 0 THEN NULL WHEN s.ks % 5 = 1 THEN 'usr_b' || s.o || '_0'
             WHEN s.ks % 5 = 4 THEN 'usr_b' || s.o || '_2' ELSE 'usr_b' || s.o || '_1' END,
        s.model, s.model, s.model, s.rt, 'responses', 'sync', s.st::"GenerationStatus", 'acme', 'acme',
        CASE WHEN s.st = 'completed' AND s.rt = 'chat' THEN jsonb_build_object('inputTokens', i % 1000, 'outputTokens', i % 300) END,
        CASE WHEN s.st = 'completed' THEN round((abs(hashint8extended(i, 3)) % 5000000) / 1000000.0, 10) ELSE 0 END,
        '{"input":"hello"}'::jsonb, 1, 100 + i % 5000, 50 + i % 500, s.ts,
        CASE WHEN s.st IN ('completed', 'failed', 'cancelled') THEN s.ts + interval '2 seconds' END, s.st = 'cancelled'
      FROM generate_series(1, $1::int) i
      -- Hashes, not i modulo small numbers, so status and type are independent of organization and key.
      CROSS JOIN LATERAL (SELECT abs(hashint8extended(i, 1)) % 100 AS st, abs(hashint8extended(i, 2)) % 100 AS rt) h
      CROSS JOIN LATERAL (SELECT
        CASE WHEN i % 10 < 5 THEN 0 WHEN i % 10 < 8 THEN 1 WHEN i % 10 = 8 THEN 2 ELSE 3 END AS o,
        (i / 10) % 20 AS ks,
        CASE WHEN h.st < 85 THEN 'completed' WHEN h.st < 95 THEN 'failed' WHEN h.st < 97 THEN 'pending' WHEN h.st < 98 THEN 'processing'
             ELSE 'cancelled' END AS st,
        CASE WHEN h.rt < 70 THEN 'chat' WHEN h.rt < 80 THEN 'embedding' WHEN h.rt < 90 THEN 'image' WHEN h.rt < 94 THEN 'video'
             WHEN h.rt < 97 THEN 'audio' ELSE 'upscale' END AS rt,
        CASE WHEN i % 3 = 0 THEN 'openai/gpt-4.1-mini' ELSE 'anthropic/claude-sonnet' END AS model,
        now() - interval '90 days' + i * (interval '90 days' / $1::int) AS ts
      ) s`, [ROWS]);
        log(`  inserted ${ROWS} generations in ${((node_perf_hooks_1.performance.now() - t) / 1000).toFixed(1)} s`);
        t = node_perf_hooks_1.performance.now();
        await c.query(`SET maintenance_work_mem = '256MB'`);
        for (const i of idx.rows)
            await c.query(i.indexdef);
        log(`  rebuilt ${idx.rows.length} indexes in ${((node_perf_hooks_1.performance.now() - t) / 1000).toFixed(1)} s`);
        t = node_perf_hooks_1.performance.now();
        await c.query('VACUUM ANALYZE generations');
        await c.query('ANALYZE');
        log(`  VACUUM ANALYZE in ${((node_perf_hooks_1.performance.now() - t) / 1000).toFixed(1)} s`);
    }
    finally {
        await c.end();
    }
}
function scenarios() {
    const key = { kind: 'key', organizationId: 'org_b0', keyId: 'key_b0_1' };
    const owner = { kind: 'user', organizationId: 'org_b0', userId: 'usr_b0_0', role: 'owner' };
    const member = { kind: 'user', organizationId: 'org_b0', userId: 'usr_b0_1', role: 'member' };
    const lastWeek = { createdFrom: new Date(Date.now() - 7 * 86_400_000) };
    const oneDay = { createdFrom: new Date(Date.now() - 30 * 86_400_000), createdBefore: new Date(Date.now() - 29 * 86_400_000) };
    const common = [
        ['newest first', {}],
        ['oldest first', { sortOrder: 'asc' }],
        ['clientCost desc', { sortBy: 'clientCost' }],
        ['clientCost asc', { sortBy: 'clientCost', sortOrder: 'asc' }],
        ['status=completed', { status: 'completed' }],
        ['status=failed', { status: 'failed' }],
        ['status=pending', { status: 'pending' }],
        ['status=cancelled', { status: 'cancelled' }],
        ['requestType=chat', { requestType: 'chat' }],
        ['requestType=embedding', { requestType: 'embedding' }],
        ['requestType=upscale', { requestType: 'upscale' }],
        ['last 7 days', lastWeek],
        ['one day, 30 days ago', oneDay],
        ['page 50', { page: 50 }],
        ['limit 100', { limit: 100 }],
    ];
    const out = [];
    for (const [label, viewer] of [
        ['key (100k)', key],
        ['owner (500k)', owner],
    ]) {
        for (const [name, options] of common)
            out.push({ name: `${label}: ${name}`, viewer, options });
    }
    out.push({ name: 'owner (500k): apiKeyId', viewer: owner, options: { apiKeyId: 'key_b0_2' } });
    out.push({ name: 'owner (500k): withoutApiKey', viewer: owner, options: { withoutApiKey: true } });
    out.push({ name: 'owner (500k): withoutApiKey, clientCost', viewer: owner, options: { withoutApiKey: true, sortBy: 'clientCost' } });
    for (const [name, options] of [
        ['newest first', {}],
        ['clientCost desc', { sortBy: 'clientCost' }],
        ['status=failed', { status: 'failed' }],
        ['status=pending', { status: 'pending' }],
        ['requestType=upscale', { requestType: 'upscale' }],
    ]) {
        out.push({ name: `member (2 keys + key-less, 212k): ${name}`, viewer: member, options });
    }
    return out;
}
function percentile(sorted, q) {
    return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}
async function main() {
    const url = urlOf(DB_NAME);
    const exists = await admin(async (c) => (await c.query('SELECT 1 FROM pg_database WHERE datname = $1', [DB_NAME])).rowCount === 1);
    let reuse = false;
    if (exists && KEEP) {
        const c = new pg_1.Client({ connectionString: url });
        await c.connect();
        reuse = await c
            .query('SELECT count(*)::int AS n FROM generations')
            .then((r) => r.rows[0].n === ROWS)
            .catch(() => false);
        await c.end();
    }
    if (reuse)
        log(`reusing ${DB_NAME} (${ROWS} generations)`);
    else {
        log(`creating ${DB_NAME} with ${ROWS} generations`);
        await admin((c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
        await admin((c) => c.query(`CREATE DATABASE "${DB_NAME}"`));
        await (0, migrate_1.migrate)(url);
        await fill(url);
    }
    const db = (0, client_1.createDb)(url, { max: 4 });
    const history = new history_service_1.HistoryService(db);
    const results = [];
    try {
        for (const s of scenarios()) {
            const options = { page: 1, limit: 20, sortBy: 'createdAt', sortOrder: 'desc', ...s.options };
            for (let i = 0; i < 5; i++)
                await history.list(s.viewer, options);
            const times = [];
            let last = await history.list(s.viewer, options);
            for (let i = 0; i < RUNS; i++) {
                const t = node_perf_hooks_1.performance.now();
                last = await history.list(s.viewer, options);
                times.push(node_perf_hooks_1.performance.now() - t);
            }
            times.sort((a, b) => a - b);
            const r = (x) => Math.round(x * 100) / 100;
            results.push({ name: s.name, p50: r(percentile(times, 0.5)), p99: r(percentile(times, 0.99)), max: r(times[times.length - 1]), total: last.meta.total, estimated: last.totalIsEstimate });
        }
    }
    finally {
        await db.$disconnect();
        if (!KEEP)
            await admin((c) => c.query(`DROP DATABASE IF EXISTS "${DB_NAME}" WITH (FORCE)`));
    }
    const slow = results.filter((r) => r.p99 >= TARGET_P99_MS);
    if (JSON_OUT) {
        process.stdout.write(`${JSON.stringify({ rows: ROWS, runs: RUNS, targetP99Ms: TARGET_P99_MS, results, slow: slow.map((s) => s.name) })}\n`);
    }
    else {
        const w = Math.max(...results.map((r) => r.name.length));
        process.stdout.write(`${'listing (page of 20 unless said)'.padEnd(w)}  ${'p50 ms'.padStart(8)}  ${'p99 ms'.padStart(8)}  ${'max ms'.padStart(8)}  total\n`);
        for (const r of results) {
            process.stdout.write(`${r.name.padEnd(w)}  ${r.p50.toFixed(2).padStart(8)}  ${r.p99.toFixed(2).padStart(8)}  ${r.max.toFixed(2).padStart(8)}  ${r.total}${r.estimated ? ' (estimate)' : ''}\n`);
        }
        process.stdout.write(slow.length ? `\n${slow.length} listing(s) over the ${TARGET_P99_MS} ms p99 target\n` : `\nevery listing under the ${TARGET_P99_MS} ms p99 target\n`);
    }
    if (slow.length)
        process.exitCode = 1;
}
main().catch((e) => {
    process.stderr.write(`${e.stack ?? e}\n`);
    process.exit(1);
});
