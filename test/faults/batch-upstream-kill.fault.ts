/**
 * Case 26. Batch lines at a provider's own batch API (docs/batches.md "Provider batch APIs") survive their processes:
 * a batch on an endpoint with `batch` prices, some lines failed retryably by the provider (they fall back to ordinary
 * jobs at the regular price). The worker is SIGKILLed while it polls a chunk's upstream batch, then the API running
 * the batch's driver; in a second batch the worker is SIGKILLed the instant the provider accepted a chunk's create,
 * before the worker could record it. Every line must be answered once, every answered line charged once at the price
 * of whoever answered it, nothing left held, and each chunk sent upstream as one provider batch.
 */
import { settledAudit } from './helpers/audit';
import { batchGenerations, batchOf, createBatch, ENDED, fileLines, sumCharged, upload, type FileLine } from './helpers/batches';
import { MODELS, startCluster, type Cluster, type Proc, type SeededOrg } from './helpers/cluster';
import { Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { waitFor as poll } from '../helpers/until';
import { tokenCost } from '../../shared/billing/pricing';
import type { Price } from '../../shared/catalog/catalog.types';
import { money } from '../../shared/money';
import { QUEUES } from '../../shared/queue/queue-names';
import type { TokenUsage } from '../../shared/providers/provider.types';

let c: Cluster;

const LINES = 300;
/** Lines of the second batch. */
const B_LINES = 100;
const MARK = '[fall-back]';
const PRICE: Price = { prompt: '40', completion: '160' };
const BATCH_PRICE: Price = { prompt: '20', completion: '80' };
/** Every tenth line is failed by the provider's batch with a 500: it falls back to its ordinary job. */
const marked = (i: number) => i % 10 === 7;

beforeAll(async () => {
  c = await startCluster({
    name: 'batch-upstream-kill',
    env: { SYNC_WAIT_MS: '40000', BATCH_POLL_MS: '50', BATCH_LINES_IN_FLIGHT: '32', BATCH_UPSTREAM_MAX_LINES: '60', BATCH_UPSTREAM_POLL_MS: '250', BATCH_UPSTREAM_GATHER_MS: '500' },
    catalog: (raw) => {
      raw.models[MODELS.chat].endpoints[0] = { ...raw.models[MODELS.chat].endpoints[0], price: PRICE, batch: { price: BATCH_PRICE } };
    },
  });
});
afterAll(async () => {
  await c?.close();
});

function lines(n: number, tag: string): string[] {
  return Array.from({ length: n }, (_, i) =>
    JSON.stringify({ custom_id: `${tag}-${i}`, method: 'POST', url: '/v1/chat/completions', body: { model: MODELS.chat, messages: [{ role: 'user', content: `${tag} ${i}${marked(i) ? ` ${MARK}` : ''}` }], max_tokens: 16 } }),
  );
}

/** The fake provider's batches holding a chunk's lines, per chunk of the batch (every chunk listed, 0 when none). */
async function upstreamPerChunk(batchId: string): Promise<Map<string, number>> {
  const parked = await c.db.upstreamBatchLine.findMany({ where: { batchId }, select: { generationId: true, upstreamBatchId: true } });
  const chunkOf = new Map(parked.map((l) => [l.generationId, l.upstreamBatchId]));
  const per = new Map((await c.db.upstreamBatch.findMany({ where: { batchId }, select: { id: true } })).map((u) => [u.id, 0]));
  for (const b of c.fake.openaiBatches.values()) {
    const chunk = chunkOf.get(b.lines[0]?.customId ?? '');
    if (chunk) per.set(chunk, (per.get(chunk) ?? 0) + 1);
  }
  return per;
}

/** Checks one batch to its end; its summary for the row. */
async function auditBatch(checks: Checks, api: Proc, org: SeededOrg, id: string, n: number, tag: string): Promise<string> {
  await waitFor(`batch ${tag} ended`, async () => ENDED.includes((await batchOf(api, org, id)).status), 60_000);
  const b = await batchOf(api, org, id);
  checks.that(b.status === 'completed', `${tag}: batch status ${b.status}`);
  const out = await fileLines(api, org, b.output_file_id);
  const errors = await fileLines(api, org, b.error_file_id);
  const answered = [...out, ...errors].map((l) => l.custom_id);
  checks.that(answered.length === n && new Set(answered).size === n, `${tag}: lines answered ${answered.length} (${new Set(answered).size} distinct custom_ids) of ${n}`);
  checks.that(b.request_counts.completed === out.length && b.request_counts.failed === errors.length, `${tag}: request_counts ${JSON.stringify(b.request_counts)}, files ${out.length} + ${errors.length}`);

  const gens = await batchGenerations(c.db, id);
  checks.that(gens.every((g) => g.settlements === 1 && g.charges <= 1), `${tag}: settlements per generation ${[...new Set(gens.map((g) => `${g.settlements}/${g.charges}`))].join(',')}`);
  const byId = new Map(gens.map((g) => [g.id, g]));
  const charged = gens.filter((g) => g.charges === 1);
  checks.that(charged.length === out.length && out.every((l) => byId.get(l.response.request_id!)?.charges === 1), `${tag}: output lines ${out.length}, charged generations ${charged.length}`);

  // The price of whoever answered: the provider's batch for an unmarked line, the ordinary job for a marked one.
  const records = await c.db.generation.findMany({ where: { id: { in: out.map((l) => l.response.request_id!) } }, select: { id: true, usage: true } });
  const usageOf = new Map(records.map((r) => [r.id, r.usage as unknown as TokenUsage]));
  let atBatch = 0;
  let atRegular = 0;
  const wrong: string[] = [];
  for (const l of out) {
    const gid = l.response.request_id!;
    const fellBack = marked(Number(l.custom_id.slice(tag.length + 1)));
    const expected = tokenCost(fellBack ? PRICE : BATCH_PRICE, usageOf.get(gid)!);
    if (!money(byId.get(gid)!.charged).equals(expected)) wrong.push(`${l.custom_id} charged ${byId.get(gid)!.charged}, expected ${expected} (${fellBack ? 'regular' : 'batch'})`);
    else if (fellBack) atRegular++;
    else atBatch++;
  }
  checks.that(wrong.length === 0, `${tag}: ${wrong.length} lines charged another price: ${wrong.slice(0, 5).join('; ')}`);
  const sum = sumCharged(gens);
  const row = await c.db.batch.findUniqueOrThrow({ where: { id } });
  checks.that(money(row.cost).equals(sum), `${tag}: batch cost ${money(row.cost)} vs the ledger's ${sum}`);

  const per = await upstreamPerChunk(id);
  const counts = [...per.values()];
  checks.that(counts.every((k) => k === 1), `${tag}: upstream batches per chunk ${counts.join(',')} (a chunk sent twice or never)`);
  const statuses = (ls: FileLine[]) => [...new Set(ls.map((l) => l.response.status_code))].join(',') || 'none';
  return `${tag}: ${out.length} output + ${errors.length} error lines (${statuses(errors)}), each custom_id once; ${atBatch} charged the batch price, ${atRegular} fallen back charged the regular price; ${per.size} chunks, upstream batches per chunk ${counts.join('/')}; cost ${sum} RUB = the ledger's`;
}

test('provider batch chunks: worker killed polling and at the create, the driver\'s API killed: answered once, charged once at the right price', async () => {
  const checks = new Checks(
    '26. provider batch, worker and API SIGKILL',
    `a ${LINES}-line chat batch on an endpoint with batch prices (chunks of at most 60 lines gathered for 500 ms, provider batches of 2 s, polls every 250 ms, every 10th line failed 500 by the provider and fallen back); the worker SIGKILLed while a chunk's job polls, the API running the driver SIGKILLed; then a ${B_LINES}-line batch whose worker is SIGKILLed the instant the provider accepts its chunk's create; each replaced once it exited`,
  );
  const started = Date.now();
  const api1 = await c.startApi();
  const w1 = await c.startWorker();
  await c.warmUp(api1);
  c.fake.setKnobs({ batchMs: 2000, batchLineErrors: { [MARK]: 500 }, latencyMs: 100 });
  const org = await c.seed({ balance: '1000' });
  const tally = new Tally();
  const chunks = c.queues[QUEUES.upstreamBatches];

  // A: the worker killed in a poll (a chunk `running` upstream, its job active: a poll takes the fake's 100 ms).
  const a = await createBatch(api1, org, await upload(api1, org, lines(LINES, 'upa')));
  tally.add(a);
  const idA = a.json?.id as string;
  let polled = '';
  await waitFor('a chunk polled while its job is active', async () => {
    const u = await c.db.upstreamBatch.findFirst({ where: { batchId: idA, status: 'running', polls: { gte: 2 } } });
    if (!u || c.fake.batchStats.linesRun === 0) return false;
    // Its job active: a poll under way (looked at every 5 ms for up to 2 s, then this chunk is left for the next).
    const polling = await poll('a poll under way', async () => (await (await chunks.getJob(u.id))?.getState()) === 'active', 2000, 5).then(() => true, () => false);
    if (!polling) return false;
    polled = u.id;
    w1.kill('SIGKILL');
    return true;
  }, 30_000);
  await w1.exited;
  const linesRunAtWorkerKill = c.fake.batchStats.linesRun;
  const tWorkerKill = (Date.now() - started) / 1000;
  await c.startWorker();

  // Then the API running the driver, once a second chunk is on its way.
  await waitFor('a second chunk', async () => (await c.db.upstreamBatch.count({ where: { batchId: idA } })) >= 2, 30_000);
  const driverAtKill = await (await c.queues.batches.getJob(idA))?.getState();
  const atApiKill = (await batchOf(api1, org, idA)).request_counts;
  const tApiKill = (Date.now() - started) / 1000;
  api1.kill('SIGKILL');
  await api1.exited;
  const api2 = await c.startApi();
  const summaryA = await auditBatch(checks, api2, org, idA, LINES, 'upa');
  const tA = (Date.now() - started) / 1000;

  // B: the worker killed the instant the provider accepts a chunk's create (before the worker hears of it).
  const w2 = c.procs.filter((p) => p.role === 'worker' && p.alive).at(-1)!;
  const stats = c.fake.batchStats;
  let created = stats.created;
  let killAtCreate: (() => void) | null = () => w2.kill('SIGKILL');
  Object.defineProperty(stats, 'created', {
    configurable: true,
    enumerable: true,
    get: () => created,
    set: (v: number) => {
      created = v;
      const kill = killAtCreate;
      killAtCreate = null;
      kill?.();
    },
  });
  const createdBefore = created;
  const b = await createBatch(api2, org, await upload(api2, org, lines(B_LINES, 'upb')));
  tally.add(b);
  const idB = b.json?.id as string;
  await w2.exited;
  const chunkAtKill = await c.db.upstreamBatch.findFirst({ where: { batchId: idB } });
  await c.startWorker();
  const summaryB = await auditBatch(checks, api2, org, idB, B_LINES, 'upb');
  checks.that(chunkAtKill?.status === 'submitting', `upb: the chunk was ${chunkAtKill?.status} at the kill (the create accepted, not yet recorded)`);

  const tB = (Date.now() - started) / 1000;
  const a2 = await settledAudit(c.db, 40_000);
  const direct = c.fake.requests.filter((r) => r.method === 'POST' && r.path === '/openai/v1/chat/completions').length;
  const failures = checks.finishAudited(a2, {
    requests: tally.total + 2,
    errors: tally.errors(),
    holds: `upa: worker killed in a poll of ${polled} (${linesRunAtWorkerKill} lines run upstream by then), the API at ${atApiKill.completed + atApiKill.failed}/${LINES} answered (driver job ${driverAtKill} there); ${summaryA}. upb: worker killed at the provider's create (chunk ${chunkAtKill?.status} then); ${summaryB}; ${created - createdBefore} upstream batches created for it; ${direct} direct calls (fallbacks, the warm-up); no reservation held; ledger = balances; kills at ${tWorkerKill.toFixed(1)} and ${tApiKill.toFixed(1)} s, upa done at ${tA.toFixed(1)} s, upb at ${tB.toFixed(1)} s`,
  });
  if (failures.length) console.error(c.tails());
  expect(failures).toEqual([]);
}, 120_000);
