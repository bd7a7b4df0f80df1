/**
 * The history benchmarks' data (bench/history-bench.ts, bench/history-scale.ts): accounts and generations filled with
 * SQL, and the listings timed. See history-bench.ts for the shape of the data.
 */
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { connectDb, connectListings } from '../shared/db/client';
import { HistoryService, type HistoryListOptions, type HistoryViewer } from '../shared/services/history.service';

const log = (msg: string) => process.stderr.write(`${msg}\n`);

/** Accounts, then the generations with the table's secondary indexes dropped and rebuilt (several times faster). */
export async function fill(url: string, ROWS: number, opts: { partitioned?: boolean } = {}): Promise<void> {
  const c = new Client({ connectionString: url });
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
    const idx = await c.query<{ indexname: string; indexdef: string }>(
      `SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'generations' AND indexname <> 'generations_pkey'`,
    );
    for (const i of idx.rows) await c.query(`DROP INDEX "${i.indexname}"`);
    // The months the rows fall in (generations and the ledger are partitioned by month: docs/architecture.md "Partitions").
    if (opts.partitioned !== false) await c.query(`SELECT sy_partition_ensure(t, m) FROM unnest(ARRAY['generations', 'ledger_entries']) t,
      generate_series(date_trunc('month', now() - interval '91 days'), now(), interval '1 month') m`);
    // A database as an older release left it (bench:partition-upgrade) stores the model three times (model_names_once)
    // and keeps the request in the row (no generation_contents).
    const older = (await c.query(`SELECT 1 FROM information_schema.columns WHERE table_name = 'generations' AND column_name = 'model_display_name'`)).rowCount! > 0;
    const names = older ? ['model, unified_model_id, model_display_name', 's.model, s.model, s.model'] : ['model', 's.model'];
    const contents = (await c.query(`SELECT to_regclass('generation_contents') IS NOT NULL AS yes`)).rows[0].yes as boolean;
    // The per-row triggers (an id once across months, content out of the row, the activity totals) are most of a
    // fill's time (20 M rows: hours): off while the rows go in; their work is done after, set-based (`afterTriggers`).
    if (contents) await c.query('ALTER TABLE generations DISABLE TRIGGER USER');
    let t = performance.now();
    await c.query(
      `INSERT INTO generations (id, organization_id, api_key_id, user_id, ${names[0]}, request_type,
        api_type, response_mode, status, provider, final_endpoint_slug, usage, client_cost, request, attempts_count, generation_time_ms,
        latency_ms, created_at, completed_at, is_cancelled)
      SELECT 'gen_' || lpad(i::text, 10, '0'), 'org_b' || s.o,
        CASE WHEN s.ks = 0 THEN NULL ELSE 'key_b' || s.o || '_' || (s.ks % 5) END,
        CASE WHEN s.ks = 0 THEN 'usr_b' || s.o || '_' || (abs(hashint8extended(i, 4)) % 2) WHEN s.ks % 5 = 0 THEN NULL WHEN s.ks % 5 = 1 THEN 'usr_b' || s.o || '_0'
             WHEN s.ks % 5 = 4 THEN 'usr_b' || s.o || '_2' ELSE 'usr_b' || s.o || '_1' END,
        ${names[1]}, s.rt, 'responses', 'sync', s.st::"GenerationStatus", 'acme', 'acme',
        CASE WHEN s.st = 'completed' AND s.rt = 'chat' THEN jsonb_build_object('inputTokens', i % 1000, 'outputTokens', i % 300) END,
        CASE WHEN s.st = 'completed' THEN round((abs(hashint8extended(i, 3)) % 5000000) / 1000000.0, 10) ELSE 0 END,
        ${contents ? 'NULL' : `'{"input":"hello"}'::jsonb`}, 1, 100 + i % 5000, 50 + i % 500, s.ts,
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
      ) s`,
      [ROWS],
    );
    log(`  inserted ${ROWS} generations in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    if (contents) {
      t = performance.now();
      await afterTriggers(c);
      await c.query('ALTER TABLE generations ENABLE TRIGGER USER');
      log(`  content and activity totals in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    }
    t = performance.now();
    await c.query(`SET maintenance_work_mem = '256MB'`);
    // A partitioned table's index prints `ON ONLY` (the parent's alone): built here on every partition.
    for (const i of idx.rows) await c.query(i.indexdef.replace(' ON ONLY ', ' ON '));
    log(`  rebuilt ${idx.rows.length} indexes in ${((performance.now() - t) / 1000).toFixed(1)} s`);
    t = performance.now();
    await c.query('VACUUM ANALYZE generations');
    await c.query('ANALYZE');
    log(`  VACUUM ANALYZE in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  } finally {
    await c.end();
  }
}

/**
 * What the per-row triggers would have done for the rows a fill inserted with them off: the request of the last
 * CONTENT_RETENTION_DAYS (30, the default) in generation_contents (older content is erased by then), and the activity
 * totals of the ended ones, summed as prisma/migrations/20261205100000_activity_totals and 20261208000000_activity_member_totals
 * fill them from what was there before them.
 */
async function afterTriggers(c: Client): Promise<void> {
  await c.query(`INSERT INTO generation_contents (generation_id, created_at, request)
    SELECT id, created_at, '{"input":"hello"}'::jsonb FROM generations WHERE created_at >= now() - interval '30 days'`);
  const sums = 'SUM(usage), SUM(requests), SUM(prompt_tokens), SUM(completion_tokens), SUM(reasoning_tokens), SUM(cached_tokens)';
  const cols = 'usage, requests, prompt_tokens, completion_tokens, reasoning_tokens, cached_tokens';
  await c.query(`INSERT INTO activity_totals (organization_id, day, model, provider, endpoint, api_key_id, user_id, ${cols})
    SELECT g.organization_id, sy_activity_day(g.created_at), g.model, sy_activity_provider(g.provider, g.routing),
      sy_activity_endpoint(g.final_endpoint_slug, g.routing), COALESCE(g.api_key_id, ''), COALESCE(g.user_id, ''), SUM(g.client_cost), COUNT(*),
      SUM(sy_usage_count(g.usage, 'inputTokens', 'input_tokens', 'prompt_tokens')), SUM(sy_usage_count(g.usage, 'outputTokens', 'output_tokens', 'completion_tokens')),
      SUM(sy_usage_count(g.usage, 'reasoningTokens', 'reasoning_tokens', NULL)), SUM(sy_usage_count(g.usage, 'cachedTokens', 'cached_tokens', NULL))
    FROM generations g WHERE g.status IN ('completed', 'failed', 'cancelled') GROUP BY 1, 2, 3, 4, 5, 6, 7`);
  await c.query(`INSERT INTO activity_org_totals (organization_id, day, model, provider, endpoint, ${cols})
    SELECT organization_id, day, model, provider, endpoint, ${sums} FROM activity_totals GROUP BY 1, 2, 3, 4, 5`);
  await c.query(`INSERT INTO activity_member_totals (organization_id, day, model, provider, endpoint, user_id, ${cols})
    SELECT organization_id, day, model, provider, endpoint, user_id, ${sums} FROM activity_totals WHERE user_id <> '' GROUP BY 1, 2, 3, 4, 5, 6`);
}

export interface Scenario {
  name: string;
  viewer: HistoryViewer;
  options: Partial<HistoryListOptions>;
}

export function scenarios(): Scenario[] {
  const key: HistoryViewer = { kind: 'key', organizationId: 'org_b0', keyId: 'key_b0_1' };
  const owner: HistoryViewer = { kind: 'user', organizationId: 'org_b0', userId: 'usr_b0_0', role: 'owner' };
  const member: HistoryViewer = { kind: 'user', organizationId: 'org_b0', userId: 'usr_b0_1', role: 'member' };
  const lastWeek = { createdFrom: new Date(Date.now() - 7 * 86_400_000) };
  const oneDay = { createdFrom: new Date(Date.now() - 30 * 86_400_000), createdBefore: new Date(Date.now() - 29 * 86_400_000) };
  const common: Array<[string, Partial<HistoryListOptions>]> = [
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
  const out: Scenario[] = [];
  for (const [label, viewer] of [
    ['key (100k)', key],
    ['owner (500k)', owner],
  ] as const) {
    for (const [name, options] of common) out.push({ name: `${label}: ${name}`, viewer, options });
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
  ] as Array<[string, Partial<HistoryListOptions>]>) {
    out.push({ name: `member (2 keys + key-less, 212k): ${name}`, viewer: member, options });
  }
  return out;
}

/**
 * A HistoryService reading as the service does: the listings through a pool of their own (shared/db/client.ts
 * connectListings), whose four connections are opened first, as a running process keeps them.
 */
export async function listingHistory(url: string): Promise<{ history: HistoryService; close(): Promise<void> }> {
  const db = connectDb(url, { max: 4 }).db;
  const pool = connectListings(url, { max: 4 });
  const history = new HistoryService(db, { pool });
  const [first] = scenarios();
  await Promise.all(Array.from({ length: 4 }, () => history.list(first.viewer, { page: 1, limit: 20, sortBy: 'createdAt', sortOrder: 'desc' })));
  return {
    history,
    async close() {
      await db.$disconnect();
      await pool.end();
    },
  };
}
