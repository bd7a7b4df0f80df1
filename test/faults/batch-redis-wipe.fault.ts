/**
 * Case 27. Redis comes back empty mid-batch (issue 38 item 1): two batches run at once, one of ordinary lines (their
 * jobs on the text queue) and one of lines parked for a provider's own batch API (in chunks, each a job polling its
 * upstream batch), when Redis is SIGKILLed and started again without its append-only file: the drivers' jobs, the
 * chunks' jobs and the waiting lines' jobs are gone. No process is restarted. What must hold: the workers add the
 * drivers' and chunks' jobs again from PostgreSQL (`resume-batches`), the reaper fails the lines whose jobs were lost
 * (503, released) and the drivers order them again; both batches complete, every custom_id answered once and 200,
 * every answered line charged exactly once (the parked ones at the batch price), each chunk sent upstream once, the
 * batches' cost what the ledger charged, and nothing left held or reserved.
 */
import fs from 'node:fs';
import { settledAudit } from './helpers/audit';
import { batchGenerations, chatLines, createBatch, ENDED, fileLines, sumCharged, upload, type FileLine, type LineGeneration } from './helpers/batches';
import { MODELS, useCluster, type Proc, type SeededOrg } from './helpers/cluster';
import { get, Tally } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';
import { tokenCost } from '../../shared/billing/pricing';
import type { Price } from '../../shared/catalog/catalog.types';
import { money } from '../../shared/money';
import type { TokenUsage } from '../../shared/providers/provider.types';
import { QUEUES } from '../../shared/queue/queue-names';

const ORDINARY = 300;
const PARKED = 150;
const PRICE: Price = { prompt: '40', completion: '160' };
const BATCH_PRICE: Price = { prompt: '20', completion: '80' };

const cluster = useCluster({
  name: 'batch-redis-wipe',
  env: { SYNC_WAIT_MS: '40000', BATCH_POLL_MS: '50', BATCH_LINES_IN_FLIGHT: '32', BATCH_UPSTREAM_MAX_LINES: '60', BATCH_UPSTREAM_POLL_MS: '250', BATCH_UPSTREAM_GATHER_MS: '500' },
  // The chat model's endpoint has batch prices (its lines are parked); `chat-fallback` has none (its lines are jobs).
  catalog: (raw) => {
    raw.models[MODELS.chat].endpoints[0] = { ...raw.models[MODELS.chat].endpoints[0], price: PRICE, batch: { price: BATCH_PRICE } };
  },
});

/** Where a batch stands, from its row (the API's reads may wait on Redis while it is away). */
async function rowOf(id: string) {
  return cluster().db.batch.findUniqueOrThrow({ where: { id }, select: { status: true, completed: true, failed: true, total: true } });
}

/**
 * Why a batch has lines still running, for a failure's report: each running line's settlements (one: its money settled
 * while its record runs) and job in Redis (a job that will run keeps the reaper off it), whether the maintenance schedulers will fire again (their next job), the maintenance jobs
 * running, and what the worker's log says of the reaper.
 */
async function whyRunning(id: string, worker: Proc): Promise<string> {
  const c = cluster();
  const running = (await batchGenerations(c.db, id)).filter((g) => g.status === 'pending' || g.status === 'processing');
  const jobs = await Promise.all(running.slice(0, 10).map(async (g) => `${g.id.slice(-6)} ${g.status} (${g.settlements} settlements) job ${await c.queues.text.getJobState(g.id).catch(() => 'unreadable')}`));
  const m = c.queues.maintenance;
  const schedulers = await m.getJobSchedulers().catch(() => []);
  const next = await Promise.all(schedulers.map(async (s) => `${s.key} next ${s.next ? await m.getJobState(`repeat:${s.key}:${s.next}`).catch(() => 'unreadable') : 'none'}`));
  const active = (await m.getActive().catch(() => [])).map((j) => `${j.name} for ${Date.now() - (j.processedOn ?? Date.now())} ms`);
  const log = fs.readFileSync(worker.log, 'utf8').split('\n');
  const reaper = log.filter((l) => /reap|maintenance|scheduler/i.test(l));
  return `running lines: ${jobs.join(', ') || 'none'}; maintenance schedulers: ${next.join(', ') || 'none'}; active maintenance jobs: ${active.join(', ') || 'none'}; the worker's log: ${reaper.length} lines of the reaper, the last: ${reaper.at(-1)?.slice(0, 300) ?? '-'}`;
}

/** One batch's audit once it ended: its answers, each line's generations and charges; the summary for the row. */
async function auditBatch(checks: Checks, api: Proc, org: SeededOrg, id: string, n: number, tag: string, parked: boolean): Promise<string> {
  const c = cluster();
  const b = (await get(`${api.url}/v1/batches/${id}`, org.auth)).json as { status: string; request_counts: { total: number; completed: number; failed: number }; output_file_id: string | null; error_file_id: string | null };
  checks.that(b.status === 'completed', `${tag}: batch status ${b.status}`);
  const out = await fileLines(api, org, b.output_file_id);
  const errors = await fileLines(api, org, b.error_file_id);
  const answered = [...out, ...errors].map((l) => l.custom_id);
  checks.that(answered.length === n && new Set(answered).size === n, `${tag}: ${answered.length} lines answered (${new Set(answered).size} distinct custom_ids) of ${n}`);
  checks.that(errors.length === 0, `${tag}: ${errors.length} error lines (${[...new Set(errors.map((e: FileLine) => `${e.response.status_code} ${e.response.body.error?.code}`))].join(', ')})`);
  checks.that(b.request_counts.completed === out.length && b.request_counts.failed === errors.length, `${tag}: request_counts ${JSON.stringify(b.request_counts)}, files ${out.length} + ${errors.length}`);

  // Every try of a line settled once; the charged ones exactly the output lines; the failed tries released.
  const gens = await batchGenerations(c.db, id);
  checks.that(gens.every((g) => g.settlements === 1 && g.charges <= 1), `${tag}: settlements/charges per generation ${[...new Set(gens.map((g) => `${g.status} ${g.settlements}/${g.charges}`))].join(',')}`);
  const byId = new Map(gens.map((g) => [g.id, g]));
  const charged = gens.filter((g) => g.charges === 1);
  checks.that(charged.length === out.length && out.every((l) => byId.get(l.response.request_id!)?.charges === 1), `${tag}: ${out.length} output lines, ${charged.length} charged generations`);
  const retried = gens.filter((g) => /t\d+$/.test(g.id)).length;
  const released = gens.filter((g: LineGeneration) => g.status === 'failed' && g.charges === 0).length;

  // The price of whoever answered: a parked line's provider batch (or its ordinary job, had it fallen back), else the job.
  const records = await c.db.generation.findMany({ where: { id: { in: out.map((l) => l.response.request_id!) } }, select: { id: true, usage: true } });
  const wrong: string[] = [];
  let atBatch = 0;
  for (const r of records) {
    const got = money(byId.get(r.id)!.charged);
    const usage = r.usage as unknown as TokenUsage;
    if (parked && got.equals(tokenCost(BATCH_PRICE, usage))) atBatch++;
    else if (!got.equals(tokenCost(PRICE, usage))) wrong.push(`${r.id} charged ${got}, usage ${JSON.stringify(usage)}`);
  }
  checks.that(wrong.length === 0, `${tag}: ${wrong.length} lines charged neither price: ${wrong.slice(0, 3).join('; ')}`);
  const row = await c.db.batch.findUniqueOrThrow({ where: { id } });
  checks.that(money(row.cost).equals(sumCharged(gens)), `${tag}: batch cost ${money(row.cost)} vs the ledger's ${sumCharged(gens)}`);
  let upstreamNote = '';
  if (parked) {
    const chunkOf = new Map((await c.db.upstreamBatchLine.findMany({ where: { batchId: id }, select: { generationId: true, upstreamBatchId: true } })).map((l) => [l.generationId, l.upstreamBatchId]));
    const per = new Map((await c.db.upstreamBatch.findMany({ where: { batchId: id }, select: { id: true } })).map((u) => [u.id, 0]));
    for (const ub of c.fake.openaiBatches.values()) {
      const chunk = chunkOf.get(ub.lines[0]?.customId ?? '');
      if (chunk) per.set(chunk, (per.get(chunk) ?? 0) + 1);
    }
    checks.that([...per.values()].every((k) => k === 1), `${tag}: upstream batches per chunk ${[...per.values()].join(',')} (a chunk sent twice or never)`);
    upstreamNote = `, ${per.size} chunks each sent upstream once, ${atBatch} lines charged the batch price`;
  }
  return `${tag}: ${out.length} lines answered 200, each custom_id once; ${gens.length} generations (${retried} retries, ${released} failed tries released), the ${charged.length} charged exactly the output lines${upstreamNote}; cost ${sumCharged(gens)} RUB = the ledger's`;
}

it('27. Redis restarted empty mid-batch, ordinary and provider-batch lines: both batches driven again from PostgreSQL, every line answered once and charged once, nothing reserved', async () => {
  const c = cluster();
  const checks = new Checks(
    '27. Redis restarted empty mid-batch',
    `1 API + 1 worker (4 text jobs at a time); a ${ORDINARY}-line batch of ordinary lines (32 in flight, provider latency 100 ms) and a ${PARKED}-line batch parked for the provider's batch API (chunks of 60, provider batches of 4 s) at once; once lines of the first are answered and a chunk of the second runs upstream, Redis SIGKILLed and started again without its append-only file (the drivers', chunks' and waiting lines' jobs gone); no process restarted`,
  );
  const tally = new Tally();
  const api = await c.startApi();
  // Four text jobs at a time: most of the ordinary batch's lines in flight wait in the queue, and are lost with it.
  const worker = await c.startWorker({ WORKER_CONCURRENCY_TEXT: '4' });
  await c.warmUp(api);
  c.fake.setKnobs({ latencyMs: 100, batchMs: 4000 });
  const org = await c.seed({ balance: '1000' });
  const start = async (lines: string[]) => {
    const r = await createBatch(api, org, await upload(api, org, lines));
    tally.add(r);
    return r.json.id as string;
  };
  const [ordinary, parked] = await Promise.all([start(chatLines(ORDINARY, 'ord', 16, MODELS.chatFallback)), start(chatLines(PARKED, 'park'))]);

  await waitFor('ordinary lines answered and a chunk at the provider', async () => (await rowOf(ordinary)).completed >= 60 && (await c.db.upstreamBatch.count({ where: { batchId: parked, status: 'running' } })) >= 1, 60_000);
  const at = { ordinary: await rowOf(ordinary), parked: await rowOf(parked), chunks: await c.db.upstreamBatch.groupBy({ by: ['status'], where: { batchId: parked }, _count: true }) };
  const wipedAt = Date.now();
  await c.redis.wipe();
  const lost = { drivers: await c.queues.batches.count(), chunks: await c.queues[QUEUES.upstreamBatches].count() };

  // Clients polling meanwhile: the reads answer (200, or 503 while Redis is away), never hang.
  const polls: Array<Promise<void>> = [];
  const poll = setInterval(() => polls.push(get(`${api.url}/v1/batches/${ordinary}`, org.auth, 10_000).then((r) => tally.add(r))), 500);
  try {
    await waitFor('both batches ended', async () => ENDED.includes((await rowOf(ordinary)).status) && ENDED.includes((await rowOf(parked)).status), 120_000).catch(() => undefined);
  } finally {
    clearInterval(poll);
    await Promise.all(polls);
  }
  const endedMs = Date.now() - wipedAt;
  const left = { ordinary: await rowOf(ordinary), parked: await rowOf(parked) };
  const ended = ENDED.includes(left.ordinary.status) && ENDED.includes(left.parked.status);
  checks.that(ended, `not ended ${(endedMs / 1000).toFixed(0)} s after the wipe: ordinary ${JSON.stringify(left.ordinary)}, parked ${JSON.stringify(left.parked)}${ended ? '' : `; ${await whyRunning(ordinary, worker)}`}`);
  checks.that(api.alive && worker.alive, 'a process died');

  const summaryOrdinary = await auditBatch(checks, api, org, ordinary, ORDINARY, 'ordinary', false);
  const summaryParked = await auditBatch(checks, api, org, parked, PARKED, 'parked', true);
  const a = await settledAudit(c.db, 30_000);
  const failures = checks.finishAudited(a, {
    requests: tally.total + 2,
    errors: tally.errors(),
    holds:
      `wiped with the ordinary batch at ${at.ordinary.completed + at.ordinary.failed}/${ORDINARY} answered and the parked one's chunks ${at.chunks.map((g) => `${g._count} ${g.status}`).join(', ')} (jobs left in Redis after it: ${lost.drivers} drivers, ${lost.chunks} chunks); ` +
      `both completed ${(endedMs / 1000).toFixed(1)} s after the wipe with no process restarted. ${summaryOrdinary}. ${summaryParked}. The reaper released ${a.reaped} lost tries; no reservation held; ledger = balances`,
  });
  if (failures.length) console.error(c.tails(30));
  expect(failures).toEqual([]);
}, 240_000);
