/**
 * Case 1. A worker process is killed (SIGKILL) in the middle of text, image and media jobs. A new worker
 * starts; BullMQ hands it the dead worker's stalled jobs. Every generation must end exactly once, be charged at
 * most once, release its reservation when it fails, and the ledger must still add up.
 */
import { settledAudit } from './helpers/audit';
import { MODELS, startCluster, type Cluster } from './helpers/cluster';
import { get, post, stream, Tally, type Reply } from './helpers/http';
import { Checks } from './helpers/report';
import { waitFor } from './helpers/wait';

let c: Cluster;

beforeAll(async () => {
  // Every provider call takes 2.5 s, so the kill lands while jobs are running.
  c = await startCluster({ name: 'worker-kill', env: { SYNC_WAIT_MS: '40000' } });
});
afterAll(async () => {
  await c?.close();
});

test('a worker killed mid-job: every job ends once, charged at most once, nothing leaks', async () => {
  const checks = new Checks('1. worker SIGKILL mid-job', 'SIGKILL of the only worker while text (sync, stream, background), image and media jobs run (provider latency 2.5 s); a new worker starts once it has exited');
  const api = await c.startApi();
  const w1 = await c.startWorker();
  await c.warmUp(api);
  c.fake.setKnobs({ latencyMs: 2500, chunkDelayMs: 400, streamChunks: 6 });
  const org = await c.seed({ balance: '1000' });
  const tally = new Tally();
  const url = (p: string) => `${api.url}${p}`;
  const text = (i: number, extra: object = {}) => ({ model: MODELS.chat, input: `kill test ${i}`, max_output_tokens: 64, ...extra });

  // Streams first (6 deltas 400 ms apart after the 2.5 s latency), the rest once the streams are at the provider: the
  // kill lands while the streams are half-way through and everything else is inside its provider call.
  let streamed = 0;
  const calls = c.fake.requests.length;
  const streams = Array.from({ length: 4 }, (_, i) => stream(url('/v1/responses'), text(200 + i, { stream: true }), org.auth, { onDelta: () => streamed++ }));
  await waitFor('the streams at the provider', async () => c.fake.requests.slice(calls).filter((r) => JSON.stringify(r.body).includes('kill test 20')).length === 4);
  const sync = Array.from({ length: 16 }, (_, i) => post(url('/v1/responses'), text(i), org.auth));
  const background = Array.from({ length: 4 }, (_, i) => post(url('/v1/responses'), text(100 + i, { background: true }), org.auth));
  const images = Array.from({ length: 4 }, (_, i) => post(url('/v2/images/generations'), { model: MODELS.image, prompt: `kill image ${i}` }, org.auth));
  const media = Array.from({ length: 3 }, (_, i) => post(url('/v1/media'), { model: MODELS.video, input: { prompt: `kill video ${i}`, duration: 4 }, async: true }, org.auth));

  await waitFor('streams half-way and jobs active', async () => {
    const t = await c.queues.text.getActiveCount();
    const im = await c.queues.image.getActiveCount();
    if (process.env.FAULTS_DEBUG) console.log(Date.now(), streamed, t, im);
    return streamed >= 4 && t >= 12 && im >= 1;
  });
  const activeAtKill = (await c.queues.text.getActiveCount()) + (await c.queues.image.getActiveCount()) + (await c.queues.media.getActiveCount());
  w1.kill('SIGKILL');
  await w1.exited;
  await c.startWorker();

  const syncReplies = await Promise.all(sync);
  const bgReplies = await Promise.all(background);
  const streamReplies = await Promise.all(streams);
  const imageReplies = await Promise.all(images);
  const mediaReplies = await Promise.all(media);
  tally.addAll([...syncReplies, ...bgReplies, ...streamReplies, ...imageReplies, ...mediaReplies]);

  checks.that(syncReplies.every((r) => r.status === 200 && r.json?.status === 'completed'), `sync text replies: ${syncReplies.map((r) => r.status).join(',')}`);
  checks.that(imageReplies.every((r) => r.status === 200 || r.status === 202), `image replies: ${imageReplies.map((r) => `${r.status} ${r.text.slice(0, 120)}`).join(' | ')}`);
  checks.that(mediaReplies.every((r) => r.status === 202), `media replies: ${mediaReplies.map((r) => r.status).join(',')}`);
  checks.that(
    streamReplies.every((s) => s.status === 200 && (s.events.includes('response.completed') || s.events.includes('response.failed'))),
    `every stream ends with response.completed or response.failed: ${streamReplies.map((s) => `${s.status}:${s.events.slice(-1)[0]}`).join(',')}`,
  );

  // Background and media jobs end on their own; poll them like a client would.
  const polls: Reply[] = [];
  const a = await settledAudit(c.db, 40_000);
  for (const r of bgReplies) polls.push(await get(url(`/v1/responses/${r.json?.id}`), org.auth));
  for (const r of mediaReplies) polls.push(await get(url(`/v1/media/${r.json?.id}`), org.auth));
  tally.addAll(polls);
  checks.that(polls.every((p) => p.status === 200 && p.json?.status === 'completed'), `polled background/media: ${polls.map((p) => `${p.status}:${p.json?.status}`).join(',')}`);

  // Exactly once: each generation has one settlement entry (charge or release), and BullMQ holds no live job.
  const settlements = await c.db.$queryRawUnsafe<Array<{ n: number }>>(
    `SELECT COUNT(l.id)::int AS n FROM generations g LEFT JOIN ledger_entries l ON l.generation_id = g.id AND l.kind IN ('charge', 'release') GROUP BY g.id`,
  );
  checks.that(settlements.every((s) => s.n === 1), `settlements per generation: ${settlements.map((s) => s.n).join(',')}`);
  const live = await Promise.all([c.queues.text, c.queues.image, c.queues.media].map((q) => q.getJobCounts('active', 'waiting', 'delayed')));
  checks.that(live.every((l) => l.active + l.waiting + l.delayed === 0), `queues not drained: ${JSON.stringify(live)}`);
  const generations = Object.values(a.byStatus).reduce((x, y) => x + y, 0);
  checks.that(generations === 3 + sync.length + background.length + streams.length + images.length + media.length, `generations recorded: ${generations}`);

  // A stream cut by the kill must not show the client its text twice: it completes with exactly the text, or
  // (its job re-run from the start after deltas went out) ends with response.failed after a prefix of it.
  const expectedText = (i: number) => `Echo: kill test ${200 + i}`;
  const cutReplies = streamReplies.filter((s) => s.events[s.events.length - 1] === 'response.failed');
  const cut = cutReplies.length;
  // A cut stream that had delivered for more than a second is charged its last checkpoint (workers/services/stream-checkpoints.ts).
  const checkpointed = await c.db.generation.count({ where: { id: { in: cutReplies.map((s) => String(s.id)) }, clientCost: { gt: 0 } } });
  checks.that(
    streamReplies.every((s, i) => (s.events.includes('response.completed') ? s.text === expectedText(i) : expectedText(i).startsWith(s.text))),
    `stream texts: ${streamReplies.map((s) => JSON.stringify(s.text)).join(', ')}`,
  );
  const upstreamCalls = c.fake.requests.filter((r) => r.method === 'POST').length;
  const failures = checks.finishAudited(a, {
    requests: tally.total,
    errors: tally.errors(),
    holds: `${activeAtKill} jobs active at the kill; ${generations} generations ended (${Object.entries(a.byStatus).map(([k, v]) => `${k} ${v}`).join(', ')}), each settled exactly once; ${cut}/${streams.length} streams cut mid-way ended with response.failed (${checkpointed} charged their last checkpoint, the others had delivered less than a second), the others completed, no text sent twice; ${upstreamCalls} upstream calls for them (stalled jobs re-run); no reservation held; ledger = balances`,
  });
  if (failures.length) console.error(c.tails());
  expect(failures).toEqual([]);
});
