/**
 * Case 23. A batch (docs/batches.md) survives its processes: the only worker is SIGKILLed while the batch's lines run
 * (a new one starts), then the only API process, running the batch's driver, is SIGKILLed (a new API takes the
 * driver's stalled job). Every line must be answered exactly once (one output or error line per custom_id), every line's
 * generation charged at most once and the batch's cost exactly what its lines were charged; nothing may leak.
 */
import { settledAudit } from './helpers/audit';
import { batchGenerations, batchOf, chatLines, createBatch, ENDED, fileLines, sumCharged, upload } from './helpers/batches';
import { startCluster, type Cluster, type Proc } from './helpers/cluster';
import { Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { money } from '../../shared/money';

let c: Cluster;

const LINES = 300;

beforeAll(async () => {
  c = await startCluster({ name: 'batch-kill', env: { SYNC_WAIT_MS: '40000', BATCH_POLL_MS: '50', BATCH_LINES_IN_FLIGHT: '32' } });
});
afterAll(async () => {
  await c?.close();
});

test('a worker and then the API running the driver killed mid-batch: every line answered once, charged once', async () => {
  const checks = new Checks('23. batch, worker and API SIGKILL', `a ${LINES}-line chat batch (32 lines in flight, provider latency 300 ms); the only worker SIGKILLed mid-batch and replaced once it exited; then the only API process, running the batch's driver, SIGKILLed and another started`);
  const api1 = await c.startApi();
  const w1 = await c.startWorker();
  await c.warmUp(api1);
  c.fake.setKnobs({ latencyMs: 300 });
  const org = await c.seed({ balance: '1000' });
  const tally = new Tally();
  const created = await createBatch(api1, org, await upload(api1, org, chatLines(LINES, 'kill batch')));
  tally.add(created);
  const id = created.json?.id as string;
  const counts = (api: Proc) => batchOf(api, org, id);

  await waitFor('a first part of the lines answered', async () => (await counts(api1)).request_counts.completed >= 40, 60_000);
  w1.kill('SIGKILL');
  await w1.exited;
  const atWorkerKill = (await counts(api1)).request_counts;
  await c.startWorker();

  await waitFor('more lines answered after the worker kill', async () => (await counts(api1)).request_counts.completed >= atWorkerKill.completed + 60, 60_000);
  // The only API runs the driver: its job is active there (between steps it waits a few ms in the delayed set).
  const driverAtKill = await (await c.queues.batches.getJob(id))?.getState();
  api1.kill('SIGKILL');
  await api1.exited;
  const api2 = await c.startApi();
  const atApiKill = (await counts(api2)).request_counts;

  await waitFor('the batch completed on the second API', async () => ENDED.includes((await counts(api2)).status), 120_000);
  const b = await counts(api2);
  checks.that(b.status === 'completed', `batch status ${b.status}`);
  const out = await fileLines(api2, org, b.output_file_id);
  const errors = await fileLines(api2, org, b.error_file_id);
  const answered = [...out, ...errors].map((l) => l.custom_id);
  const unique = new Set(answered);
  checks.that(answered.length === LINES && unique.size === LINES, `lines answered: ${answered.length} (${unique.size} distinct custom_ids) of ${LINES}`);
  checks.that(b.request_counts.total === LINES && b.request_counts.completed === out.length && b.request_counts.failed === errors.length, `request_counts ${JSON.stringify(b.request_counts)}, files ${out.length} + ${errors.length}`);

  // One generation per line and try (a try the reaper failed is tried again as `...l<line>t<try>`: docs/batches.md),
  // each settled once, at most one charged per line; the output lines are exactly the charged ones.
  const a = await settledAudit(c.db, 40_000);
  const gens = await batchGenerations(c.db, id);
  const lineOf = (genId: string) => genId.replace(/t\d+$/, '');
  const byLine = new Map<string, number>();
  for (const g of gens) byLine.set(lineOf(g.id), (byLine.get(lineOf(g.id)) ?? 0) + g.charges);
  const retried = gens.length - byLine.size;
  checks.that(byLine.size <= LINES, `generations of ${byLine.size} lines for ${LINES} lines`);
  checks.that([...byLine.values()].every((n) => n <= 1), `lines charged more than once: ${[...byLine].filter(([, n]) => n > 1).map(([l]) => l).join(',')}`);
  checks.that(gens.every((g) => g.settlements === 1 && g.charges <= 1), `settlements per generation: ${[...new Set(gens.map((g) => `${g.settlements}/${g.charges}`))].join(',')}`);
  const charged = new Set(gens.filter((g) => g.charges === 1).map((g) => g.id));
  const outIds = out.map((l) => l.response.request_id!);
  checks.that(outIds.length === charged.size && outIds.every((x) => charged.has(x)), `output lines ${outIds.length}, charged generations ${charged.size}`);
  const sum = sumCharged(gens);
  const row = await c.db.batch.findUniqueOrThrow({ where: { id } });
  checks.that(money(row.cost).equals(sum), `batch cost ${money(row.cost)} vs the ledger's ${sum}`);
  const upstream = c.fake.requests.filter((r) => r.method === 'POST').length;

  const failures = checks.finishAudited(a, {
    requests: tally.total + 1,
    errors: tally.errors(),
    holds: `worker killed at ${atWorkerKill.completed + atWorkerKill.failed}/${LINES} answered, the API at ${atApiKill.completed + atApiKill.failed} (driver job ${driverAtKill} there); the batch completed on the other API: ${out.length} output + ${errors.length} error lines, each custom_id exactly once; ${gens.length} generations (${retried} of them a line's later try), each settled once, the ${charged.size} charged ones exactly the output lines; batch cost ${sum} RUB = the ledger's; ${upstream} upstream calls (stalled lines re-run); no reservation held; ledger = balances`,
  });
  if (failures.length) console.error(c.tails());
  expect(failures).toEqual([]);
}, 240_000);
