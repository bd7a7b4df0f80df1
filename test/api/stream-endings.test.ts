/**
 * Content that reached a client is charged however its generation ends (decisions.md section 4), also when the process
 * streaming it has trouble: its settlement fails as the client leaves (PostgreSQL gone), or the process stands still
 * past its job's lock while another run ends the job. One in-process stack, as one process of `npm start` (the API and
 * the workers); short locks, so a freeze outlasts one.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { money } from '../../shared/money';
import { QUEUES } from '../../shared/queue/queue-names';
import { closeRowOf } from '../../shared/billing/ledger';
import { openRowOf } from '../../shared/services/generation.service';
import { CHECKPOINT_MS, type PromisedSettlement } from '../../shared/billing/settlement-journal';
import { stuckGenerationReaper } from '../../workers/processors/reap-stuck-generations.processor';
import { createTestStack, STACK_MODELS, type StackOrg, type TestStack } from '../helpers/test-stack';
import { waitFor, waitUntil } from '../helpers/until';
import { withContent } from '../../shared/db/generation-reads';

// Short, for the frozen process's case; 1 s lapsed on its own beside busy processes (the stream then ended as an orphan's).
const LOCK_MS = 3_000;
let s: TestStack;
beforeAll(async () => {
  s = await createTestStack({ env: { SYNC_WAIT_MS: '20000', WORKER_LOCK_DURATION_MS: String(LOCK_MS), WORKER_STALLED_INTERVAL_MS: '300' } });
});
afterAll(() => s.close());
afterEach(() => s.fake.setKnobs({}));

interface Streamed {
  id: string;
  /** The text of every delta received, and when (performance.now() as its bytes arrived). */
  deltas: Array<{ text: string; at: number }>;
  /** The last event's type and its `response.usage.cost_rub`, if any. */
  last?: { type: string; cost?: number; code?: string };
}

/** A /v1/responses stream over a real socket; `onDelta` sees each delta as it comes and may hang up (return true). */
function stream(org: StackOrg, body: object, onDelta: (n: number) => boolean | void = () => undefined): Promise<Streamed> {
  return new Promise((resolve, reject) => {
    const out: Streamed = { id: '', deltas: [] };
    const req = httpRequest(`${s.url}/v1/responses`, { method: 'POST', headers: { ...org.auth, 'content-type': 'application/json' } }, (res: IncomingMessage) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        const arrived = performance.now();
        buffer += chunk;
        for (let at = buffer.indexOf('\n\n'); at >= 0; at = buffer.indexOf('\n\n')) {
          const data = buffer.slice(0, at).split('\n').find((l) => l.startsWith('data: '))?.slice(6);
          buffer = buffer.slice(at + 2);
          if (!data) continue;
          const ev = JSON.parse(data) as { type: string; delta?: string; response?: { id: string; usage?: { cost_rub?: number } | null; error?: { code?: string } | null } };
          out.id ||= ev.response?.id ?? '';
          out.last = { type: ev.type, cost: ev.response?.usage?.cost_rub, code: ev.response?.error?.code };
          if (ev.type !== 'response.output_text.delta') continue;
          out.deltas.push({ text: ev.delta ?? '', at: arrived });
          if (onDelta(out.deltas.length)) {
            req.destroy();
            resolve(out);
          }
        }
      });
      res.on('end', () => resolve(out));
      res.on('error', () => resolve(out));
    });
    req.on('error', (e) => (out.deltas.length ? resolve(out) : reject(e)));
    req.end(JSON.stringify({ ...body, stream: true }));
  });
}

/** The generation once it has ended (waits up to `timeoutMs`), with its charge entries. */
async function ended(org: StackOrg, id: string, timeoutMs = 10_000) {
  const g = await waitUntil(async () => {
    const row = await s.t.db.generation.findFirst({ where: { id } });
    return row && row.status !== 'pending' && row.status !== 'processing' ? row : undefined;
  }, timeoutMs);
  await s.settled(org.organizationId);
  const charges = await s.t.db.ledgerEntry.findMany({ where: { generationId: id, kind: { in: ['charge', 'release'] } } });
  return { g, charges };
}

/** The organization holds nothing reserved, and no promise or checkpoint of `id` is left in Redis. */
async function nothingLeft(org: StackOrg, id: string) {
  const o = await s.t.db.organization.findUniqueOrThrow({ where: { id: org.organizationId } });
  expect(money(o.reserved).isZero()).toBe(true);
  expect(await s.ctx.settlements.read(org.organizationId, id)).toBeNull();
  expect(await s.ctx.redis.exists(`${s.ctx.config.queuePrefix}:checkpoint:${id}`)).toBe(0);
}

it('a client leaving a stream as its settlement fails (PostgreSQL gone): the settlement waits for PostgreSQL, the content is charged once', async () => {
  const org = await s.seed({ balance: '10' });
  s.fake.setKnobs({ streamChunks: 30, chunkDelayMs: 100 });
  // The organization's row is locked from outside before the client leaves, so the worker's settlement waits in
  // PostgreSQL; that backend is then terminated, as by a PostgreSQL stopping: the settlement fails.
  const client = await s.t.pool.connect();
  let locked = false;
  const lock = async () => {
    // Granted from a lease, the generation's record commits while it streams: it must be in before the row is locked (a
    // record waiting on the lock would be the backend terminated below, and there would be no generation to settle).
    await waitFor('the record of the stream', async () => (await s.t.db.generation.count({ where: { organizationId: org.organizationId } })) > 0);
    await client.query('BEGIN');
    await client.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [org.organizationId]);
    locked = true;
  };
  // This test's database only: another suite's money call waiting on a lock at the same time is not this one's.
  const waiting = () =>
    s.t.pool
      .query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%FROM sy_ledger_group(%'`)
      .then((r) => r.rows.map((x) => x.pid));
  try {
    let locking: Promise<void> | undefined;
    // The client leaves once the row is locked.
    const left = await stream(org, { model: STACK_MODELS.chat, input: 'Tell me a story', max_output_tokens: 400 }, (n) => {
      if (n === 2) locking = lock();
      return locked;
    });
    await locking;
    expect(locked).toBe(true);
    const backends = await waitUntil(async () => {
      const pids = await waiting();
      return pids.length ? pids : undefined;
    });
    await s.t.pool.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [backends]);
    await client.query('ROLLBACK');
    locked = false;

    // Before, the job failed with its settlement and the reaper later released the generation, uncharged.
    const { g, charges } = await ended(org, left.id);
    expect(g.status).toBe('failed');
    expect(money(g.clientCost).greaterThan(0)).toBe(true);
    expect(charges.map((c) => [c.kind, money(c.amount).negated().toFixed(10)])).toEqual([['charge', money(g.clientCost).toFixed(10)]]);
    await nothingLeft(org, left.id);
  } finally {
    if (locked) await client.query('ROLLBACK').catch(() => undefined);
    client.release();
  }
});

/** Stands the whole process (API, workers, fake provider) still for `ms`, as a SIGSTOP would. */
const freeze = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

it('a process frozen past its lock mid-stream sends nothing more of it once it wakes; the run that ends it instead charges what its checkpoint holds', async () => {
  const org = await s.seed({ balance: '10' });
  const chunks = 30;
  s.fake.setKnobs({ streamChunks: chunks, chunkDelayMs: 100, text: Array.from({ length: chunks }, (_, i) => `word${i} `).join('') });
  let frozen = '';
  let wokeAt = 0;
  // Past a checkpoint's age (so one holds what reached the client), the process stands still for twice its lock.
  const deltasBefore = Math.ceil((CHECKPOINT_MS * 1.5) / 100);
  const st = await stream(org, { model: STACK_MODELS.chat, input: 'Count', max_output_tokens: 400 }, (n) => {
    if (n !== deltasBefore) return;
    frozen = freeze(2 * LOCK_MS);
    wokeAt = performance.now();
  });
  expect(frozen).toBe('timed-out'); // it stood still the whole time, woken by nothing

  // Another run (the stalled job's) ended the generation with the checkpoint; the frozen run, awake, sent nothing more.
  // Before, it sent every remaining delta, and the generation was ended uncharged.
  const after = st.deltas.filter((d) => d.at >= wokeAt);
  expect(after).toEqual([]);
  expect(st.deltas.length).toBeGreaterThanOrEqual(deltasBefore);
  expect(st.deltas.length).toBeLessThan(chunks);
  expect(st.last).toMatchObject({ type: 'response.failed', code: 'SERVICE_UNAVAILABLE' });
  const { g, charges } = await ended(org, st.id);
  expect(g.status).toBe('failed');
  const cost = money(g.clientCost);
  expect(cost.greaterThan(0)).toBe(true);
  expect(st.last?.cost).toBeCloseTo(cost.toNumber(), 6);
  expect(charges).toHaveLength(1);
  // Charged for part of what reached the client: the checkpoint's output, at most what was delivered.
  const usage = g.usage as { outputTokens: number };
  const delivered = st.deltas.map((d) => d.text).join('');
  expect(usage.outputTokens).toBeGreaterThan(0);
  expect(usage.outputTokens).toBeLessThanOrEqual(Math.ceil(delivered.length / 4.25));
  await nothingLeft(org, st.id);
});

describe('a checkpoint is kept by whoever ends the stream', () => {
  let n = 0;
  /** A running stream's generation, and the checkpoint its (gone) run wrote: 0.25 RUB for what reached its client. */
  async function checkpointed(org: StackOrg): Promise<string> {
    const id = `gen_checkpoint_${++n}_${Date.now()}`;
    await s.ctx.generations.create({ id, organizationId: org.organizationId, apiKeyId: null, userId: null, model: STACK_MODELS.chat, unifiedModelId: STACK_MODELS.chat, requestType: 'chat', apiType: 'responses', responseMode: 'stream', request: {}, bound: '1' });
    const error = { code: 'SERVICE_UNAVAILABLE', message: 'The process streaming this answer stopped' };
    const payload = { cost: '0.25', result: { output: [{ type: 'message', content: [{ type: 'output_text', text: 'x'.repeat(5_000) }] }], usage: { inputTokens: 10, outputTokens: 1_250 } } };
    const row = closeRowOf(id, { status: 'failed', cost: '0.25', error, result: payload, usage: payload.result.usage });
    const checkpoint: PromisedSettlement = { row, replyTo: null, message: { type: 'failed', error, payload } };
    await s.ctx.settlements.checkpoint(id, checkpoint);
    return id;
  }
  const key = (id: string) => `${s.ctx.config.queuePrefix}:checkpoint:${id}`;

  it('writes the text once, lapsing; the reaper charges it; a cancel that finds no worker charges it, cancelled; one of an ended generation changes nothing', async () => {
    const org = await s.seed({ balance: '10' });
    const reaped = await checkpointed(org);
    expect((await s.ctx.redis.get(key(reaped)))!.split('x'.repeat(5_000)).length).toBe(2);
    expect(await s.ctx.redis.pttl(key(reaped))).toBeGreaterThan(3600_000);
    await stuckGenerationReaper(s.workerDeps, { everyMs: 60_000, minAgeMs: 0 })();
    const [r] = await withContent(s.t.db, [await s.t.db.generation.findFirstOrThrow({ where: { id: reaped } })]);
    expect(r).toMatchObject({ status: 'failed' });
    expect(money(r.clientCost).toFixed(2)).toBe('0.25');
    expect((r.result as { result: { output: Array<{ content: Array<{ text: string }> }> } }).result.output[0]!.content[0]!.text).toHaveLength(5_000);

    const cancelled = await checkpointed(org);
    // Its job, not started (a running one's worker would be asked first, for up to STOP_GRACE_MS).
    await s.ctx.queues.text.add(QUEUES.text, { generationId: cancelled, organizationId: org.organizationId, mode: 'stream' } as never, { jobId: cancelled, delay: 60_000 });
    expect(await s.ctx.gateway.cancel(cancelled, QUEUES.text, { chargeStreamed: true })).toBe(false);
    const c = await s.t.db.generation.findFirstOrThrow({ where: { id: cancelled } });
    expect(c.status).toBe('cancelled');
    expect(money(c.clientCost).toFixed(2)).toBe('0.25');

    const done = await checkpointed(org);
    await s.ctx.ledger.close(closeRowOf(done, { status: 'completed', cost: '0.5' }));
    expect(await s.ctx.settlements.keep(org.organizationId, done, s.ctx.ledger)).toBe(true);
    expect(money((await s.t.db.generation.findFirstOrThrow({ where: { id: done } })).clientCost).toFixed(2)).toBe('0.50');
    for (const id of [reaped, cancelled, done]) await nothingLeft(org, id);
    expect(await s.t.db.ledgerEntry.count({ where: { generationId: { in: [reaped, cancelled, done] }, kind: { in: ['charge', 'release'] } } })).toBe(3);
  });

  it("carries a record not committed when it was written (a stream's waits for its close): the job's re-run records it, then charges it once", async () => {
    const org = await s.seed({ balance: '10' });
    const id = `gen_checkpoint_unrecorded_${Date.now()}`;
    const error = { code: 'SERVICE_UNAVAILABLE', message: 'The process streaming this answer stopped' };
    const payload = { cost: '0.25', result: { output: [] }, usage: { inputTokens: 10, outputTokens: 100 } };
    const open = openRowOf({ id, organizationId: org.organizationId, apiKeyId: org.key.id, userId: null, model: STACK_MODELS.chat, unifiedModelId: STACK_MODELS.chat, requestType: 'chat', apiType: 'responses', responseMode: 'stream', request: {}, bound: '1' }, 'lease_of_a_dead_process');
    const row = closeRowOf(id, { status: 'failed', cost: '0.25', error, result: payload, usage: payload.usage });
    await s.ctx.settlements.checkpoint(id, { row, replyTo: null, message: { type: 'failed', error, payload }, open });
    expect(await s.t.db.generation.count({ where: { id } })).toBe(0);
    // What an orphaned re-run asks first (workers/services/drawn-jobs.ts); twice, charged once.
    expect(await s.ctx.settlements.keep(org.organizationId, id, s.ctx.ledger)).toBe(true);
    expect(await s.ctx.settlements.keep(org.organizationId, id, s.ctx.ledger)).toBe(false);
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id } });
    expect(g.status).toBe('failed');
    expect(money(g.clientCost).toFixed(2)).toBe('0.25');
    expect(await s.t.db.ledgerEntry.count({ where: { generationId: id, kind: 'charge' } })).toBe(1);
    await nothingLeft(org, id);
  });
});
