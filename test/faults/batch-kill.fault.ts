/**
 * Case 23. A batch (docs/batches.md) survives its processes: the only worker is SIGKILLed while the batch's lines run
 * (a new one starts), then the only API process, running the batch's driver, is SIGKILLed (a new API takes the
 * driver's stalled job). Every line must be answered exactly once (one output or error line per custom_id), every line's
 * generation charged at most once and the batch's cost exactly what its lines were charged; nothing may leak.
 */
import { settledAudit } from './helpers/audit';
import { MODELS, startCluster, type Cluster, type Proc, type SeededOrg } from './helpers/cluster';
import { get, post, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { money, ZERO } from '../../shared/money';

let c: Cluster;

const LINES = 300;

beforeAll(async () => {
  c = await startCluster({ name: 'batch-kill', env: { SYNC_WAIT_MS: '40000', BATCH_POLL_MS: '50', BATCH_LINES_IN_FLIGHT: '32' } });
});
afterAll(async () => {
  await c?.close();
});

async function upload(api: Proc, org: SeededOrg, lines: number): Promise<string> {
  const body = Array.from({ length: lines }, (_, i) =>
    JSON.stringify({ custom_id: `line-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: MODELS.chat, messages: [{ role: 'user', content: `kill batch ${i}` }], max_tokens: 16 } }),
  ).join('\n');
  const form = new FormData();
  form.append('purpose', 'batch');
  form.append('file', new Blob([body]), 'input.jsonl');
  const res = await fetch(`${api.url}/v1/files`, { method: 'POST', headers: { Authorization: org.auth.Authorization }, body: form });
  if (res.status !== 200) throw new Error(`upload: ${res.status} ${await res.text()}`);
  return ((await res.json()) as { id: string }).id;
}

async function fileLines(api: Proc, org: SeededOrg, id: string | null): Promise<Array<{ custom_id: string; response: { status_code: number; request_id: string | null } }>> {
  if (!id) return [];
  const res = await fetch(`${api.url}/v1/files/${id}/content`, { headers: org.auth });
  return (await res.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

test('a worker and then the API running the driver killed mid-batch: every line answered once, charged once', async () => {
  const checks = new Checks('23. batch, worker and API SIGKILL', `a ${LINES}-line chat batch (32 lines in flight, provider latency 300 ms); the only worker SIGKILLed mid-batch and replaced 0.5 s later; then the only API process, running the batch's driver, SIGKILLed and another started`);
  const api1 = await c.startApi();
  const w1 = await c.startWorker();
  await c.warmUp(api1);
  c.fake.setKnobs({ latencyMs: 300 });
  const org = await c.seed({ balance: '1000' });
  const tally = new Tally();
  const fileId = await upload(api1, org, LINES);
  const created = await post(`${api1.url}/v1/batches`, { input_file_id: fileId, endpoint: '/v1/chat/completions', completion_window: '24h' }, org.auth);
  tally.add(created);
  const id = created.json?.id as string;
  const counts = async (api: Proc) => {
    const r = await get(`${api.url}/v1/batches/${id}`, org.auth);
    return r.json as { status: string; request_counts: { total: number; completed: number; failed: number }; output_file_id: string | null; error_file_id: string | null; usage: { cost_rub: number } };
  };

  await waitFor('a first part of the lines answered', async () => (await counts(api1)).request_counts.completed >= 40, 60_000);
  w1.kill('SIGKILL');
  await w1.exited;
  const atWorkerKill = (await counts(api1)).request_counts;
  await new Promise((r) => setTimeout(r, 500));
  await c.startWorker();

  await waitFor('more lines answered after the worker kill', async () => (await counts(api1)).request_counts.completed >= atWorkerKill.completed + 60, 60_000);
  // The only API runs the driver: its job is active there (between steps it waits a few ms in the delayed set).
  const driverAtKill = await (await c.queues.batches.getJob(id))?.getState();
  api1.kill('SIGKILL');
  await api1.exited;
  const api2 = await c.startApi();
  const atApiKill = (await counts(api2)).request_counts;

  await waitFor('the batch completed on the second API', async () => ['completed', 'failed', 'expired', 'cancelled'].includes((await counts(api2)).status), 120_000);
  const b = await counts(api2);
  checks.that(b.status === 'completed', `batch status ${b.status}`);
  const out = await fileLines(api2, org, b.output_file_id);
  const errors = await fileLines(api2, org, b.error_file_id);
  const answered = [...out, ...errors].map((l) => l.custom_id);
  const unique = new Set(answered);
  checks.that(answered.length === LINES && unique.size === LINES, `lines answered: ${answered.length} (${unique.size} distinct custom_ids) of ${LINES}`);
  checks.that(b.request_counts.total === LINES && b.request_counts.completed === out.length && b.request_counts.failed === errors.length, `request_counts ${JSON.stringify(b.request_counts)}, files ${out.length} + ${errors.length}`);

  // One generation per line at most, each settled once; the output lines are exactly the charged ones.
  const a = await settledAudit(c.db, 40_000);
  const suffix = id.slice('batch_'.length);
  const gens = await c.db.$queryRawUnsafe<Array<{ id: string; status: string; settlements: number; charges: number; charged: string }>>(
    `SELECT g.id, g.status::text AS status, COUNT(l.id) FILTER (WHERE l.kind IN ('charge', 'release'))::int AS settlements,
            COUNT(l.id) FILTER (WHERE l.kind = 'charge')::int AS charges, COALESCE(-SUM(l.amount) FILTER (WHERE l.kind = 'charge'), 0)::text AS charged
     FROM generations g LEFT JOIN ledger_entries l ON l.generation_id = g.id WHERE g.id LIKE $1 GROUP BY g.id`.replace('$1', `'%\\_${suffix}l%'`),
  );
  checks.that(gens.length <= LINES, `${gens.length} generations for ${LINES} lines`);
  checks.that(gens.every((g) => g.settlements === 1 && g.charges <= 1), `settlements per generation: ${[...new Set(gens.map((g) => `${g.settlements}/${g.charges}`))].join(',')}`);
  const charged = new Set(gens.filter((g) => g.charges === 1).map((g) => g.id));
  const outIds = out.map((l) => l.response.request_id!);
  checks.that(outIds.length === charged.size && outIds.every((x) => charged.has(x)), `output lines ${outIds.length}, charged generations ${charged.size}`);
  const sum = gens.reduce((s, g) => s.plus(money(g.charged)), ZERO);
  const row = await c.db.batch.findUniqueOrThrow({ where: { id } });
  checks.that(money(row.cost).equals(sum), `batch cost ${money(row.cost)} vs the ledger's ${sum}`);
  const upstream = c.fake.requests.filter((r) => r.method === 'POST').length;

  const failures = checks.finishAudited(a, {
    requests: tally.total + 1,
    errors: tally.errors(),
    holds: `worker killed at ${atWorkerKill.completed + atWorkerKill.failed}/${LINES} answered, the API at ${atApiKill.completed + atApiKill.failed} (driver job ${driverAtKill} there); the batch completed on the other API: ${out.length} output + ${errors.length} error lines, each custom_id exactly once; ${gens.length} generations, each settled once, the ${charged.size} charged ones exactly the output lines; batch cost ${sum} RUB = the ledger's; ${upstream} upstream calls (stalled lines re-run); no reservation held; ledger = balances`,
  });
  if (failures.length) console.error(c.tails());
  expect(failures).toEqual([]);
}, 240_000);
