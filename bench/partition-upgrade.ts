/**
 * The upgrade to partitioned history (issue 42 step 5): a database as the release before left it (migrations up to
 * 20261204000000_history_partitions), holding N generations (default 10,000,000; bench:history's data over 90 days,
 * the table's 14 indexes built), then the two migrations timed: 20261204000000_history_partitions (rows copied into
 * monthly partitions, indexes rebuilt) and 20261204100000_generation_contents (the last 31 days' content moved out of
 * the rows, the rest erased). The service is stopped meanwhile: this is the maintenance window.
 *
 *   npm run bench:partition-upgrade -- [--rows 10000000] [--keep]
 */
import { performance } from 'node:perf_hooks';
import { migrate } from '../shared/db/migrate';
import { onServer } from './children';
import { fill } from './history-data';

const args = process.argv.slice(2);
const at = args.indexOf('--rows');
const ROWS = at >= 0 ? Number(args[at + 1]) : 10_000_000;
const SERVER_URL = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/postgres';
const DB = 'sy_bench_partition_upgrade';
const PARTITIONING = '20261204000000_history_partitions';
const CONTENTS = '20261204100000_generation_contents';

const admin = (sql: string) => onServer(SERVER_URL, sql);

async function main(): Promise<void> {
  const u = new URL(SERVER_URL);
  u.pathname = `/${DB}`;
  const url = u.toString();
  await admin(`DROP DATABASE IF EXISTS "${DB}" WITH (FORCE)`);
  await admin(`CREATE DATABASE "${DB}"`);
  try {
    await migrate(url, () => {}, { before: PARTITIONING });
    await fill(url, ROWS, { partitioned: false });
    let t = performance.now();
    await migrate(url, () => {}, { before: CONTENTS });
    const partitionS = (performance.now() - t) / 1000;
    t = performance.now();
    await migrate(url);
    const contentS = (performance.now() - t) / 1000;
    process.stdout.write(`${JSON.stringify({ rows: ROWS, [PARTITIONING]: `${partitionS.toFixed(1)} s`, [CONTENTS]: `${contentS.toFixed(1)} s` })}\n`);
  } finally {
    if (!args.includes('--keep')) await admin(`DROP DATABASE IF EXISTS "${DB}" WITH (FORCE)`);
  }
}

main().catch((e) => {
  process.stderr.write(`${(e as Error).stack ?? e}\n`);
  process.exit(1);
});
