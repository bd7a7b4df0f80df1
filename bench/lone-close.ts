/**
 * The reservation that arrives while replied requests' settlements commit (bench/rounds/08-slow-noisy-machine.md). A
 * reply's close commits in the background, gathered with others for `GATHER_MS` (bench/rounds/31), and an open
 * that arrives meanwhile does not queue behind them. This times that open, N times, through the service's Ledger on a
 * scratch database: a close in the background, the open on the next turn (and 5 ms before the next round).
 *
 *   npm run -s build && node dist/bench/lone-close.js [--rounds 300]
 *
 * BENCH_DATABASE_URL (default postgresql://postgres@127.0.0.1:5432/sy_bench_lone_close; dropped and re-created).
 */
import { performance } from 'node:perf_hooks';
import { connectDb } from '../shared/db/client';
import { Ledger, type OpenRow } from '../shared/billing/ledger';
import { resetDatabase } from './children';

const args = process.argv.slice(2);
const roundsAt = args.indexOf('--rounds');
const ROUNDS = roundsAt >= 0 ? Number(args[roundsAt + 1]) : 300;
const URL_ = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/sy_bench_lone_close';
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function main(): Promise<void> {
  await resetDatabase(URL_);
  const { db, pool } = connectDb(URL_);
  const org = 'org_lone_close_bench';
  await pool.query(`INSERT INTO organizations (id, name, balance, callback_secret) VALUES ($1, 'bench', 1000000, 'x')`, [org]);
  const ledger = new Ledger(db, () => new Date(), { pool });
  const row = (id: string): OpenRow => ({
    id, organization_id: org, bound: '0.001', minimum: '0.001', model: 'm', unified_model_id: 'm',     request_type: 'chat', api_type: 'chat_completions', response_mode: 'sync',
  });
  const took: number[] = [];
  let prev = 'gen_lc_0';
  await ledger.open(row(prev));
  for (let i = 1; i <= ROUNDS; i++) {
    void ledger.close({ id: prev, status: 'completed', cost: '0.0004' }, { background: true });
    await new Promise((r) => setImmediate(r)); // the close has gone out: the open arrives while it commits
    const id = `gen_lc_${i}`;
    const t0 = performance.now();
    await ledger.open(row(id));
    took.push(performance.now() - t0);
    prev = id;
    await sleep(5);
  }
  await ledger.close({ id: prev, status: 'completed', cost: '0.0004' });
  took.sort((a, b) => a - b);
  const q = (p: number) => took[Math.floor(p * (took.length - 1))]!.toFixed(2);
  const mean = took.reduce((a, b) => a + b, 0) / took.length;
  console.log(`the open after a close committing alone, ${ROUNDS} rounds: p50 ${q(0.5)} ms, p90 ${q(0.9)} ms, mean ${mean.toFixed(2)} ms`);
  await db.$disconnect();
  await pool.end().catch(() => undefined);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
