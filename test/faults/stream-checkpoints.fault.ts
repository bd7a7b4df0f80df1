/**
 * Case 30. A process of `npm start` (WEB_CONCURRENCY=2) SIGKILLed, and 30b one SIGSTOPped for twice its job lock then
 * SIGCONTed, while 8 streams run on both processes (40 deltas, 100 ms apart), 1.5 s into their content. What a process
 * delivered is charged however its generation ends (decisions.md section 4), bounded: a stream's run checkpoints what
 * reached the client every second or 200 tokens (workers/services/stream-checkpoints.ts), and whoever ends a stream
 * whose process died or froze past its lock (here the survivor's run of the stalled job) charges the last checkpoint.
 * What must hold: every stream cut so is charged once, more than nothing and at most what its client received; what its
 * process delivered since that checkpoint (measured from the client: its tokens, and how long before the cut its first
 * uncharged delta came) is at most about a second and CHECKPOINT_TOKENS; the survivor's streams complete; no text twice.
 * 30b also: the frozen process, awake, sends nothing more of its streams (no delta reaches a client after the SIGCONT);
 * their clients get the survivor's ending with its charge. Before the fix those streams ended uncharged, and the frozen
 * process, awake, sent every remaining delta after the generation had ended.
 */
import { countTokens, tokenWeight, wholeTokens } from '../../shared/billing/pricing';
import { CHECKPOINT_MS, CHECKPOINT_TOKENS } from '../../shared/billing/settlement-journal';
import { settledAudit } from './helpers/audit';
import { MODELS, PREFIX, useCluster } from './helpers/cluster';
import { stream, type Reply, type StreamReply } from './helpers/http';
import { burstOnBoth, checkNothingReserved, runKillCase, type KillCase } from './helpers/kill-case';
import { waitFor } from './helpers/wait';
import { QUEUES } from '../../shared/queue/queue-names';

const cluster = useCluster({ name: 'stream-checkpoints', env: { SYNC_WAIT_MS: '20000' } });
const CHUNKS = 40;
const DELTA_MS = 100;
const TEXT = Array.from({ length: CHUNKS }, (_, i) => `word${String(i).padStart(2, '0')} `).join('');
/** The job lock of the fault suite's processes (its WORKER_LOCK_DURATION_MS). */
const LOCK_MS = 4_000;

/** What one cut stream delivered and was charged: tokens, and the age of its last checkpoint at its last delta (what the client received in between is unpaid). */
interface Cut {
  id: string;
  delivered: number;
  charged: number;
  remainderTokens: number;
  remainderMs: number;
}

function measure(id: string, deltas: Array<{ text: string; at: number }>, charged: number): Cut {
  let weight = 0;
  let covered = -1;
  deltas.forEach((d, i) => {
    weight += tokenWeight(d.text, 'openai');
    if (wholeTokens(weight) <= charged) covered = i;
  });
  const delivered = countTokens(deltas.map((d) => d.text).join(''), 'openai');
  const last = deltas.at(-1)?.at ?? 0;
  // The checkpoint went out right after the last delta it covers (none: the stream's first content).
  const checkpointAt = covered >= 0 ? deltas[covered]!.at : (deltas[0]?.at ?? last) - DELTA_MS;
  return { id, delivered, charged, remainderTokens: delivered - charged, remainderMs: last - checkpointAt };
}

async function cutMidStream(k: KillCase, how: 'kill' | 'freeze'): Promise<{ audit: Awaited<ReturnType<typeof settledAudit>>; holds: string }> {
  const { c, checks, tally, org } = k;
  const warm = await Promise.all(Array.from({ length: 4 }, (_, i) => k.ask(i)));
  tally.addAll(warm);
  checks.that(warm.every((r) => r.status === 200), `warm-up: ${warm.map((r) => r.status).join(',')}`);
  c.fake.setKnobs({ streamChunks: CHUNKS, chunkDelayMs: DELTA_MS, text: TEXT });

  let deltas: Array<Array<{ text: string; at: number }>> = [];
  const burst = await burstOnBoth(k, 8, (_round, indexes, base) => {
    if (indexes[0] === 0) deltas = Array.from({ length: 8 }, () => []);
    return indexes.map((i) =>
      stream(`${base}/v1/responses`, { model: MODELS.chat, input: `checkpoint ${i}`, stream: true, max_output_tokens: 400 }, org.auth, { timeoutMs: 60_000, onDelta: (text) => deltas[i]!.push({ text, at: Date.now() }) }),
    ) as unknown as Array<Promise<Reply>>;
  });
  // 1.5 s into every stream's content: past its first checkpoint.
  const into = Math.ceil((1.5 * CHECKPOINT_MS) / DELTA_MS);
  await waitFor(`${into} deltas into every stream`, async () => deltas.every((d) => d.length >= into), 20_000).catch(() => undefined);
  const victim = k.first[0]!;
  let wokeAt = 0;
  if (how === 'kill') process.kill(victim, 'SIGKILL');
  else {
    process.kill(victim, 'SIGSTOP');
    // Stopped past its lock: one of its jobs is another run's now (its lock lapsed, a stalled check handed it on).
    const taken = async () => (await Promise.all(burst.jobs.map((j) => c.conn.get(`${PREFIX}:${QUEUES.text}:${j.id}:lock`)))).some((l, i) => l !== null && l !== burst.locks[i]);
    await waitFor('a job of the stopped process taken by another run', taken, 10 * LOCK_MS).catch(() => undefined);
    wokeAt = Date.now();
    process.kill(victim, 'SIGCONT');
  }
  const replies = (await Promise.all(burst.pending)) as unknown as StreamReply[];
  tally.addAll(replies);
  c.fake.setKnobs({});
  if (how === 'kill') await k.replaced(1);

  const ids = replies.map((s) => String(s.id));
  await waitFor('the streams ended', async () => (await c.db.generation.count({ where: { id: { in: ids }, status: { notIn: ['pending', 'processing'] } } })) === ids.length, 40_000).catch(() => undefined);
  const audit = await settledAudit(c.db, 30_000);
  const gens = await c.db.generation.findMany({ where: { id: { in: ids } }, select: { id: true, status: true, clientCost: true, usage: true } });
  const byId = new Map(gens.map((g) => [g.id, g]));
  const completed = replies.filter((s) => byId.get(String(s.id))?.status === 'completed');
  const cut = replies.filter((s) => byId.get(String(s.id))?.status !== 'completed');
  checks.that(cut.length > 0 && completed.length > 0, `streams cut ${cut.length}, completed ${completed.length} (the ${how === 'kill' ? 'killed' : 'frozen'} process should hold some, not all)`);
  checks.that(completed.every((s) => s.text === TEXT && s.ending === 'completed'), `the survivor's streams: ${completed.map((s) => `${s.ending} ${s.deltas}`).join(', ')}`);
  checks.that(replies.every((s) => TEXT.startsWith(s.text)), `texts that are not a prefix of the answer (sent twice?): ${replies.filter((s) => !TEXT.startsWith(s.text)).map((s) => s.id).join(', ')}`);

  const measured = cut.map((s) => {
    const i = replies.indexOf(s);
    const g = byId.get(String(s.id));
    return { s, g, m: measure(String(s.id), deltas[i]!, Number((g?.usage as { outputTokens?: number } | null)?.outputTokens ?? 0)) };
  });
  const unpaid = measured.filter(({ g, m }) => g?.status !== 'failed' || !(Number(g.clientCost) > 0) || m.charged <= 0 || m.remainderTokens < 0);
  checks.that(unpaid.length === 0, `cut streams not charged for what they delivered up to a checkpoint: ${unpaid.map(({ g, m }) => `${m.id} ${g?.status} ${g?.clientCost} charged ${m.charged} of ${m.delivered} tokens`).join(' | ')}`);
  const worstMs = Math.max(...measured.map(({ m }) => m.remainderMs));
  const worstTokens = Math.max(...measured.map(({ m }) => m.remainderTokens));
  checks.that(worstMs <= CHECKPOINT_MS + 5 * DELTA_MS && worstTokens <= CHECKPOINT_TOKENS, `uncharged since the last checkpoint, at most: ${worstMs} ms, ${worstTokens} tokens (bound: about ${CHECKPOINT_MS} ms, ${CHECKPOINT_TOKENS} tokens)`);
  let after = 0;
  if (how === 'freeze') {
    // Awake, the frozen process sent nothing more of its streams; their clients got the survivor's ending and its charge.
    after = cut.reduce((n, s) => n + deltas[replies.indexOf(s)]!.filter((d) => d.at >= wokeAt).length, 0);
    checks.that(after === 0, `deltas the frozen process sent after it woke: ${after}`);
    const shown = measured.filter(({ s, g }) => s.ending === 'failed' && Math.abs(Number(s.final?.response?.usage?.cost) - Number(g?.clientCost)) <= 1e-6);
    checks.that(shown.length === cut.length, `frozen streams whose last event showed their charge: ${shown.length} of ${cut.length} (${cut.map((s) => `${s.ending} ${JSON.stringify(s.final?.response?.usage ?? null)}`).join(' | ')})`);
  }
  await checkNothingReserved(k);
  await waitFor('no checkpoint left', async () => (await c.conn.keys(`${c.env.QUEUE_PREFIX}:checkpoint:*`)).length === 0, 10_000).catch(() => undefined);
  const left = (await c.conn.keys(`${c.env.QUEUE_PREFIX}:checkpoint:*`)).length;
  checks.that(left === 0, `checkpoints left in Redis: ${left}`);
  const list = measured.map(({ m }) => `${m.charged}/${m.delivered}`).join(', ');
  return {
    audit,
    holds: `${cut.length} streams cut ${into}+ deltas in (${how === 'kill' ? 'their process SIGKILLed' : `their process frozen ${(2 * LOCK_MS) / 1000} s`}), ${completed.length} completed on the survivor; each cut stream failed and was charged once for its last checkpoint (output tokens charged/delivered: ${list}); uncharged since that checkpoint at most ${worstMs} ms and ${worstTokens} tokens${how === 'freeze' ? `; ${after} deltas sent by the frozen process after it woke, its clients ended with the charged cost` : ''}; no text twice; no checkpoint, reservation or money left over`,
  };
}

it('30. a process SIGKILLed mid-stream: its streams are charged up to their last checkpoint, about a second behind', () =>
  runKillCase(
    cluster(),
    { name: '30. streams cut by a process SIGKILL', injected: `npm start, WEB_CONCURRENCY=2; 8 responses streams (${CHUNKS} deltas, ${DELTA_MS} ms apart) on both processes; one process SIGKILLed 1.5 s into their content`, input: 'checkpoint' },
    (k) => cutMidStream(k, 'kill'),
  ));

it('30b. a process frozen past its lock mid-stream: awake, it sends nothing more; its streams are charged up to their last checkpoint', () =>
  runKillCase(
    cluster(),
    {
      name: '30b. streams of a process frozen past its lock',
      injected: `npm start, WEB_CONCURRENCY=2; 8 responses streams (${CHUNKS} deltas, ${DELTA_MS} ms apart) on both processes; one process SIGSTOPped 1.5 s into their content for ${(2 * LOCK_MS) / 1000} s (twice its job lock), then SIGCONTed`,
      input: 'checkpoint',
    },
    (k) => cutMidStream(k, 'freeze'),
  ));
