/**
 * The hot path's money call in PostgreSQL alone: `sy_ledger_group`, as the Ledger sends it (shared/billing/ledger.ts
 * runBatch), for batches of 1, 6 and 20 generations of one organization, in tables holding 50,000 past generations:
 * opens alone, closes alone, and the closes of one batch with the opens of the next (a group commit's steady state), every
 * one through the one body of the money rules (`sy_ledger_sets` → `sy_ledger_apply`). Each batch is one transaction; figures are the mean, p50 and minimum milliseconds per call,
 * with synchronous_commit on (the WAL flush included, as in production) and off (PostgreSQL's own work).
 *
 *   npm run bench:ledger [-- --rounds 200]
 *   npm run bench:ledger -- --activity-trigger [--rounds 200]
 *
 * `--activity-trigger` measures what the activity totals' trigger (prisma/migrations/20261205100000_activity_totals)
 * adds to closes: in one database, blocks of 25 rounds with the trigger enabled and disabled alternate (each block
 * after an untimed call, so that the functions' plans, invalidated by ALTER TABLE, are made outside the timing), so a
 * busy machine's drift falls on both alike.
 *
 * BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/postgres) names the server; the benchmark
 * recreates `sy_bench_ledger` there, migrated with shared/db/migrate.ts, and drops it at the end.
 */
import { performance } from 'node:perf_hooks';
import { Client } from 'pg';
import { resetDatabase } from './children';

const args = process.argv.slice(2);
const roundsAt = args.indexOf('--rounds');
const ROUNDS = roundsAt >= 0 ? Number(args[roundsAt + 1]) : 100;
const SIZES = [1, 6, 20];
const ACTIVITY_AB = args.includes('--activity-trigger');
/** Past generations in the tables before timing. */
const PAST = 50_000;
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';

function urlOf(name: string): string {
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  return u.toString();
}

const ORG = 'org_bench_ledger';
const KEY = 'key_bench_ledger';
const USER = 'usr_bench_ledger';

/** One organization with plenty of money, a member with a monthly limit and a key of theirs with a daily one: every limit rule runs. */
async function seed(c: Client): Promise<void> {
  await c.query(`INSERT INTO organizations (id, name, balance, callback_secret) VALUES ($1, 'Bench', 1000000000, 'secret')`, [ORG]);
  await c.query(`INSERT INTO users (id, organization_id, email, role, "limit", limit_reset) VALUES ($1, $2, 'm@example.com', 'member', 1000000000, 'monthly')`, [USER, ORG]);
  await c.query(
    `INSERT INTO api_keys (id, organization_id, user_id, name, key_hash, label, "limit", limit_reset) VALUES ($1, $2, $3, 'bench', 'hash', 'sk-...', 1000000000, 'daily')`,
    [KEY, ORG, USER],
  );
  // A table in steady state: past generations with their settled reservations and ledger entries, analyzed as
  // autovacuum leaves it, so the plans are those of a live database and not of empty tables.
  await c.query(`INSERT INTO generations (id, organization_id, api_key_id, user_id, model,
      request_type, api_type, response_mode, status, request, client_cost, reserved_amount, completed_at)
    SELECT 'gen_past_' || i, $1, $2, $3, 'bench/mini', 'chat', 'chat_completions', 'sync',
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
  request_type: 'chat',
  api_type: 'chat_completions',
  response_mode: 'sync',
  request: { body: { model: 'bench/mini', messages: [{ role: 'user', content: 'Say hello' }], max_tokens: 16 } },
  routing: { candidates: ['mock/gpt'] },
  trace_id: 'bench',
});
const closeRow = (id: string) => ({
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

/** The Ledger's call (without drawn opens): opens, closes, the batch's time. */
const BATCH_SQL = `SELECT kind, id, granted::text AS granted, reason, existing_id, outcome, charged::text AS charged, applied
  FROM sy_ledger_group($1::jsonb, $2::jsonb, $3::timestamptz)`;

async function timed(c: Client, text: string, params: unknown[], into: number[]): Promise<Array<Record<string, unknown>>> {
  const t = performance.now();
  const { rows } = await c.query(text, params);
  into.push(performance.now() - t);
  return rows;
}

const stat = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2)} / ${s[Math.floor(s.length / 2)].toFixed(2)} / ${s[0].toFixed(2)}`;
};

async function main(): Promise<void> {
  const url = urlOf('sy_bench_ledger');
  await resetDatabase(url);
  const c = new Client({ connectionString: url });
  await c.connect();
  try {
    await seed(c);
    // The minimum is the figure to compare on a busy machine: the call's own cost, without waiting for a CPU.
    console.log(`sy_ledger_group, ${ROUNDS} rounds each, ms per call (mean / p50 / min)`);
    const batch = async (opens: unknown[], closes: unknown[], into: number[]) => {
      const rows = await timed(c, BATCH_SQL, [JSON.stringify(opens), JSON.stringify(closes), new Date()], into);
      // Every open granted, every close applied: the figures are those of the work production does, not of refusals.
      if (rows.some((r) => (r.kind === 'open' && r.reason !== null) || (r.kind === 'close' && r.applied !== true))) throw new Error(`unexpected rows: ${JSON.stringify(rows)}`);
    };
    if (ACTIVITY_AB) {
      await activityTriggerCost(c, batch);
      return;
    }
    for (const sync of ['on', 'off']) {
      await c.query(`SET synchronous_commit = ${sync}`);
      for (const n of SIZES) {
        const open: number[] = [];
        const close: number[] = [];
        const both: number[] = [];
        let pending = Array.from({ length: n }, openRow);
        await batch(pending, [], []);
        for (let r = 0; r < ROUNDS; r++) {
          const opens = Array.from({ length: n }, openRow);
          await batch(opens, [], open);
          await batch([], opens.map((o) => closeRow(o.id)), close);
          // The steady state of one GroupCommit: this batch's opens ride with the closes of the previous ones.
          const next = Array.from({ length: n }, openRow);
          await batch(next, pending.map((o) => closeRow(o.id)), both);
          pending = next;
        }
        console.log(
          `synchronous_commit=${sync} n=${String(n).padStart(2)}: ${n} opens ${stat(open)}, ${n} closes ${stat(close)}, ` +
            `${n} closes + ${n} opens ${stat(both)}`,
        );
      }
    }
  } finally {
    await c.end();
    const admin = new Client({ connectionString: SERVER_URL });
    await admin.connect();
    await admin.query('DROP DATABASE IF EXISTS sy_bench_ledger WITH (FORCE)');
    await admin.end();
  }
}

/** Closes (and the closes + opens of a GroupCommit's steady state) with the activity trigger enabled and disabled, interleaved. */
async function activityTriggerCost(c: Client, batch: (opens: unknown[], closes: unknown[], into: number[]) => Promise<void>): Promise<void> {
  const BLOCK = 25;
  console.log(`activity trigger: ${ROUNDS} rounds each state, in alternating blocks of ${BLOCK}, ms per call (mean / p50 / min)`);
  for (const sync of ['on', 'off']) {
    await c.query(`SET synchronous_commit = ${sync}`);
    for (const n of SIZES) {
      const close = { with: [] as number[], without: [] as number[] };
      const both = { with: [] as number[], without: [] as number[] };
      let pending = Array.from({ length: n }, openRow);
      await batch(pending, [], []);
      for (let block = 0; block < (2 * ROUNDS) / BLOCK; block++) {
        const state = block % 2 === 0 ? 'with' : 'without';
        await c.query(`ALTER TABLE generations ${state === 'with' ? 'ENABLE' : 'DISABLE'} TRIGGER generations_activity_update`);
        const warm = Array.from({ length: n }, openRow);
        await batch(warm, [], []);
        await batch([], warm.map((o) => closeRow(o.id)), []);
        for (let r = 0; r < BLOCK; r++) {
          const opens = Array.from({ length: n }, openRow);
          await batch(opens, [], []);
          await batch([], opens.map((o) => closeRow(o.id)), close[state]);
          const next = Array.from({ length: n }, openRow);
          await batch(next, pending.map((o) => closeRow(o.id)), both[state]);
          pending = next;
        }
      }
      await c.query('ALTER TABLE generations ENABLE TRIGGER generations_activity_update');
      console.log(
        `synchronous_commit=${sync} n=${String(n).padStart(2)}: ${n} closes with ${stat(close.with)}, without ${stat(close.without)}; ` +
          `${n} closes + ${n} opens with ${stat(both.with)}, without ${stat(both.without)}${n === 1 ? ' (sy_ledger_pair)' : ' (sy_ledger_sets)'}`,
      );
    }
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
