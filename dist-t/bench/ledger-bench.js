"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
/**
 * The hot path's two money calls in PostgreSQL alone: times group-committed open batches
 * (sy_create_generations_keyed) and close batches (sy_finish_generations) of 1, 6 and 20 generations of one
 * organization, in tables holding 50,000 past generations, and, where the database has it, one sy_ledger_batch
 * carrying the closes of one batch with the opens of the next (what the Ledger sends). Each batch is one
 * transaction; figures are the mean, p50 and minimum milliseconds per call, with synchronous_commit on (the WAL
 * flush included, as in production) and off (PostgreSQL's own work).
 *
 *   npm run bench:ledger [-- --rounds 200]
 *
 * BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres) names the server; the benchmark
 * recreates `sy_bench_ledger` there, migrated with shared/db/migrate.ts, and drops it at the end.
 */
const node_perf_hooks_1 = require("node:perf_hooks");
const pg_1 = require("pg");
const children_1 = require("./children");
const args = process.argv.slice(2);
const roundsAt = args.indexOf('--rounds');
const ROUNDS = roundsAt >= 0 ? Number(args[roundsAt + 1]) : 100;
const SIZES = [1, 6, 20];
/** Past generations in the tables before timing. */
const PAST = 50_000;
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
function urlOf(name) {
    const u = new URL(SERVER_URL);
    u.pathname = `/${name}`;
    return u.toString();
}
const ORG = 'org_bench_ledger';
const KEY = 'key_bench_ledger';
const USER = 'usr_bench_ledger';
/** One organization with plenty of money, a member with a monthly limit and a key of theirs with a daily one: every limit rule runs. */
async function seed(c) {
    await c.query(`INSERT INTO organizations (id, name, balance, callback_secret) VALUES ($1, 'Bench', 1000000000, 'secret')`, [ORG]);
    await c.query(`INSERT INTO users (id, organization_id, email, role, "limit", limit_reset) VALUES ($1, $2, 'm@example.com', 'member', 1000000000, 'monthly')`, [USER, ORG]);
    await c.query(`INSERT INTO api_keys (id, organization_id, user_id, name, key_hash, label, "limit", limit_reset) VALUES ($1, $2, $3, 'bench', 'hash', 'sk-...', 1000000000, 'daily')`, [KEY, ORG, USER]);
    // A table in steady state: past generations with their settled reservations and ledger entries, analyzed as
    // autovacuum leaves it, so the plans are those of a live database and not of empty tables.
    await c.query(`INSERT INTO generations (id, organization_id, api_key_id, user_id, model, unified_model_id, model_display_name,
      request_type, api_type, response_mode, status, request, client_cost, reserved_amount, completed_at)
    SELECT 'gen_past_' || i, $1, $2, $3, 'bench/mini', 'bench/mini', 'Bench mini', 'chat', 'chat_completions', 'sync',
      'completed', '{}', 0.0001, 0.5, now() FROM generate_series(1, $4::int) i`, [ORG, KEY, USER, PAST]);
    await c.query(`INSERT INTO reservations (generation_id, organization_id, api_key_id, user_id, amount, charged, uncollected, status, settled_at)
    SELECT 'gen_past_' || i, $1, $2, $3, 0.5, 0.0001, 0, 'charged', now() FROM generate_series(1, $4::int) i`, [ORG, KEY, USER, PAST]);
    await c.query(`INSERT INTO ledger_entries (organization_id, api_key_id, user_id, generation_id, kind, amount, reserved_delta)
    SELECT $1, $2, $3, 'gen_past_' || i, k.kind::"LedgerKind", CASE k.kind WHEN 'charge' THEN -0.0001 ELSE 0 END,
      CASE k.kind WHEN 'charge' THEN -0.5 ELSE 0.5 END
    FROM generate_series(1, $4::int) i, (VALUES ('reserve'), ('charge')) k(kind)`, [ORG, KEY, USER, PAST]);
    await c.query('ANALYZE');
}
let seq = 0;
const openRow = () => ({
    id: `gen_bench_${++seq}`,
    organization_id: ORG,
    api_key_id: KEY,
    user_id: USER,
    bound: '0.5',
    minimum: '0.1',
    model: 'bench/mini',
    unified_model_id: 'bench/mini',
    model_display_name: 'Bench mini',
    request_type: 'chat',
    api_type: 'chat_completions',
    response_mode: 'sync',
    request: { body: { model: 'bench/mini', messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 16 } },
    routing: { candidates: ['mock/gpt'] },
    trace_id: 'bench',
});
const closeRow = (id) => ({
    id,
    status: 'completed',
    cost: '0.0001',
    model: 'bench/mini',
    result: { result: { output: [{ type: 'message', content: [{ type: 'output_text', text: 'Hello.' }] }], usage: { inputTokens: 10, outputTokens: 8 } }, cost: '0.0001' },
    usage: { inputTokens: 10, outputTokens: 8 },
    warnings: [],
    provider: 'mock',
    final_endpoint_slug: 'mock/gpt',
    routing: { attempts: [], answeredBy: 'mock/gpt' },
    finish_reason: 'stop',
    attempts_count: 1,
    latency_ms: 1,
    queue_time_ms: 0,
    generation_time_ms: 1,
});
const OPEN_SQL = 'SELECT id, granted::text AS granted, reason, existing_id FROM sy_create_generations_keyed($1::jsonb, $2::timestamptz)';
const CLOSE_SQL = 'SELECT id, outcome, charged::text AS charged, applied FROM sy_finish_generations($1::jsonb, $2::timestamptz)';
const BATCH_SQL = 'SELECT kind, id FROM sy_ledger_batch($1::jsonb, $2::jsonb, $3::timestamptz)';
async function timed(c, text, params, into) {
    const t = node_perf_hooks_1.performance.now();
    await c.query(text, params);
    into.push(node_perf_hooks_1.performance.now() - t);
}
const stat = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return `${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2)} / ${s[Math.floor(s.length / 2)].toFixed(2)} / ${s[0].toFixed(2)}`;
};
async function main() {
    const url = urlOf('sy_bench_ledger');
    await (0, children_1.resetDatabase)(url);
    const c = new pg_1.Client({ connectionString: url });
    await c.connect();
    try {
        await seed(c);
        const mixed = (await c.query(`SELECT to_regproc('sy_ledger_batch') IS NOT NULL AS has`)).rows[0].has;
        // The minimum is the figure to compare on a busy machine: the call's own cost, without waiting for a CPU.
        console.log(`ledger batches, ${ROUNDS} rounds each, ms per call (mean / p50 / min)${mixed ? '' : '; no sy_ledger_batch in this schema'}`);
        for (const sync of ['on', 'off']) {
            await c.query(`SET synchronous_commit = ${sync}`);
            for (const n of SIZES) {
                const open = [];
                const close = [];
                const both = [];
                let pending = [];
                for (let r = 0; r < ROUNDS; r++) {
                    const opens = Array.from({ length: n }, openRow);
                    await timed(c, OPEN_SQL, [JSON.stringify(opens), new Date()], open);
                    await timed(c, CLOSE_SQL, [JSON.stringify(opens.map((o) => closeRow(o.id))), new Date()], close);
                    if (mixed) {
                        // The steady state of one Batcher: this batch's opens ride with the closes of the previous ones.
                        const next = Array.from({ length: n }, openRow);
                        await timed(c, BATCH_SQL, [JSON.stringify(next), JSON.stringify(pending.map(closeRow)), new Date()], both);
                        pending = next.map((o) => o.id);
                    }
                }
                console.log(`synchronous_commit=${sync} n=${String(n).padStart(2)}: open ${stat(open)}, close ${stat(close)}` +
                    (mixed ? `, ledger_batch(${n} opens + ${n} closes) ${stat(both)}` : ''));
            }
        }
    }
    finally {
        await c.end();
        const admin = new pg_1.Client({ connectionString: SERVER_URL });
        await admin.connect();
        await admin.query('DROP DATABASE IF EXISTS sy_bench_ledger WITH (FORCE)');
        await admin.end();
    }
}
main().catch((e) => {
    console.error(e);
    process.exit(1);
});
