import request from 'supertest';
import { money } from '../../shared/money';
import type { NewGeneration } from '../../shared/services/generation.service';
import { closeRowOf } from '../../shared/billing/ledger';
import { endGeneration } from '../../shared/billing/ending';
import { claimedRuns } from '../../workers/services/drawn-jobs';
import { CANCEL_FENCE_MS, PromiseRefused, SettlementJournal } from '../../shared/billing/settlement-journal';
import type { GenerationEvent } from '../../shared/queue/generation-bus';
import { stuckGenerationReaper } from '../../workers/processors/reap-stuck-generations.processor';
import { QUEUES } from '../../shared/queue/queue-names';
import { createTestStack, type StackOrg, type TestStack } from '../helpers/test-stack';
import { orgMoney as heldMoney } from '../helpers/fixtures';
import { waitFor, waitUntil } from '../helpers/until';

// Reply, then settle (docs/architecture.md): a worker replies once the settlement is promised in Redis and commits
// it after the reply. Reads through the API keep read-your-writes; a run that dies keeps its promise through the
// job's re-run, the reaper or a cancel.

const orgMoney = (s: TestStack, id: string) => heldMoney(s.t.db, id);
/** A streamed POST through supertest: the whole event stream as text. */
async function streamed(s: TestStack, org: StackOrg, path: string, body: object): Promise<{ status: number; text: string }> {
  const res = await request(s.app)
    .post(path)
    .set(org.auth)
    .send({ ...body, stream: true })
    .buffer(true)
    .parse((r, cb) => {
      let text = '';
      r.on('data', (c: Buffer) => (text += c.toString()));
      r.on('end', () => cb(null, text));
    });
  return { status: res.status, text: res.body as string };
}

/** The data of a chat completions stream's chunks, `[DONE]` left out. */
const chatChunks = (text: string) =>
  text
    .split('\n\n')
    .map((f) => f.replace(/^data: /, ''))
    .filter((d) => d && d !== '[DONE]')
    .map((d) => JSON.parse(d) as { id: string; usage?: { cost_rub?: number } | null; error?: { code: string } });

/**
 * The organization's row locked from outside (as a PostgreSQL that does not answer would hold its settlements), once
 * `ready` holds; unlocked by `release`, or after `safetyMs` whatever happens (so code that waits for it ends).
 */
async function lockRowWhen(s: TestStack, organizationId: string, ready: () => Promise<boolean>, safetyMs = 8_000) {
  await waitUntil(async () => ((await ready()) ? true : undefined));
  const client = await s.t.pool.connect();
  await client.query('BEGIN');
  await client.query('SELECT 1 FROM organizations WHERE id = $1 FOR UPDATE', [organizationId]);
  let held = true;
  const release = async () => {
    if (!held) return;
    held = false;
    clearTimeout(safety);
    await client.query('ROLLBACK');
    client.release();
  };
  const safety = setTimeout(() => void release(), safetyMs);
  return { release, held: () => held };
}

/**
 * A stack's closes, held while a test holds them: they wait before they commit, as with a PostgreSQL that does not
 * answer. `wait` is what the stack's `beforeClose` returns; `hold` holds them and returns the function that lets them go;
 * `letGo` lets them go if they are held (after a test that failed holding them).
 */
function closeHolds() {
  let held: Promise<void> | undefined;
  let release: (() => void) | undefined;
  const letGo = () => {
    const r = release;
    held = release = undefined;
    r?.();
  };
  return {
    wait: (): Promise<void> => held ?? Promise.resolve(),
    hold: (): (() => void) => {
      held = new Promise<void>((r) => (release = r));
      return letGo;
    },
    letGo,
  };
}

describe('reads right after the reply see the settlement the reply showed', () => {
  let s: TestStack;
  let org: StackOrg;
  // While a test holds them, the stack's closes wait before they commit: the reads it sends meanwhile arrive while the
  // settlement is still only promised.
  const closes = closeHolds();
  const holdCloses = closes.hold;
  afterEach(closes.letGo); // a test that failed holding them lets them go
  // The generations whose close was submitted after their reply (`background`: nobody waits on it).
  const closedAfterReply = new Set<string>();
  // The next close submitted after its reply fails, as with PostgreSQL gone at that moment.
  let failNextAfterReply = false;
  beforeAll(async () => {
    const beforeClose = (row: { id: string }, opts?: { background?: boolean }) => {
      if (opts?.background) closedAfterReply.add(row.id);
      if (opts?.background && failNextAfterReply) {
        failNextAfterReply = false;
        return Promise.reject(new Error('the database went away'));
      }
      return closes.wait();
    };
    s = await createTestStack({ beforeClose, knobs: { promptTokens: 1000, completionTokens: 500 } });
    org = await s.seed({ balance: '1000' });
  });
  afterAll(() => s.close());

  const chat = () => request(s.app).post('/v1/chat/completions').set(org.auth).send({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] });

  it('balance, key and history', async () => {
    const before = await orgMoney(s, org.organizationId);
    const release = holdCloses();
    const res = await chat();
    expect(res.status).toBe(200);
    const id = res.headers['x-generation-id'] ?? res.body.id;
    // The reply went out before the commit: the promise is still in the journal.
    expect(await s.ctx.settlements.read(org.organizationId, id)).not.toBeNull();
    expect((await orgMoney(s, org.organizationId)).reserved.isZero()).toBe(false);

    const cost = money(res.body.usage.cost_rub);
    expect(cost.greaterThan(0)).toBe(true);
    const reads = Promise.all([
      request(s.app).get('/v1/balance').set(org.auth),
      request(s.app).get('/v1/key').set(org.auth),
      request(s.app).get(`/v1/history/generations/${id}`).set(org.auth),
    ]);
    release(); // the close commits as the reads arrive: each waits for it, or reads it committed
    const [balance, key, detail] = await reads;
    expect(balance.body).toMatchObject({ amount: before.balance.minus(cost).toFixed(6), reservedAmount: '0.000000' });
    expect(key.body.usage).toBeCloseTo(cost.toNumber(), 6);
    expect(detail.body).toMatchObject({ status: 'completed', clientCost: cost.toFixed(6) });
    expect(await s.ctx.settlements.read(org.organizationId, id)).toBeNull();
    expect((await orgMoney(s, org.organizationId)).reserved.isZero()).toBe(true);
  });

  it("erases the promise on the job's connection, just before the job's completion (one write for both)", async () => {
    // MONITOR lists every command Redis runs with the connection it came from. ioredis can take a monitored line that
    // arrives in the same packet as MONITOR's own "OK" for a reply ("Command queue state error"): a monitor that broke
    // so is opened again (the workers' blocking BZPOPMIN make such lines at any moment).
    // The connection is made as `monitor()` makes it, its error listener attached before it connects.
    let monitor: ReturnType<typeof s.ctx.redis.duplicate> | undefined;
    let broken = false;
    for (let attempt = 0; attempt < 5 && !monitor; attempt++) {
      broken = false;
      const m = s.ctx.redis.duplicate({ monitor: true, lazyConnect: false });
      m.on('error', () => (broken = true));
      // Working once it shows a command of ours: a probe echoed on another connection until it does.
      const probe = `probe-${attempt}-${Math.random()}`;
      let shown = false;
      m.on('monitor', (_time: string, args: string[]) => void (args[1] === probe && (shown = true)));
      const works = await waitFor('MONITOR to show a command', async () => (await s.ctx.redis.echo(probe), shown || broken), 5_000).then(() => !broken, () => false);
      if (works && (m.status as string) === 'monitoring') monitor = m;
      else m.disconnect();
    }
    if (!monitor) throw new Error('MONITOR could not be opened');
    const seen: Array<{ source: string; args: string[] }> = [];
    monitor.on('monitor', (_time: string, args: string[], source: string) => seen.push({ source, args }));
    try {
      const res = await chat();
      expect(res.status).toBe(200);
      const id: string = res.headers['x-generation-id'] ?? res.body.id;
      const erased = () => seen.findIndex((c) => c.args[0]?.toLowerCase() === 'hdel' && c.args[2] === id);
      const after = (at: number) => seen.slice(at + 1).find((c) => c.source === seen[at]!.source);
      // The erasure, and the next command of that connection.
      await waitFor('the erasure and the command after it', () => erased() >= 0 && after(erased()) !== undefined, 5_000);
      const at = erased();
      // The next command of that connection is BullMQ's moveToFinished for the job (its keys name the generation).
      const next = after(at);
      expect(next?.args[0]?.toLowerCase()).toBe('evalsha');
      expect(next?.args.some((a) => a.endsWith(`:${id}`))).toBe(true);
      // And the promise itself went over another connection, the API's fail-fast one (before the reply).
      const promised = seen.findIndex((c) => c.args[0]?.toLowerCase() === 'hset' && c.args[2] === id);
      expect(promised).toBeGreaterThanOrEqual(0);
      expect(promised).toBeLessThan(at);
      expect(seen[promised]!.source).not.toBe(seen[at]!.source);
      expect(broken).toBe(false);
    } finally {
      monitor.disconnect();
    }
  });

  it('previous_response_id names the response just received', async () => {
    const release = holdCloses();
    const first = await request(s.app).post('/v1/responses').set(org.auth).send({ model: 'openai/gpt-4.1-mini', input: 'remember 7' });
    expect(first.status).toBe(200);
    expect(await s.ctx.settlements.read(org.organizationId, first.body.id)).not.toBeNull();
    const next = request(s.app).post('/v1/responses').set(org.auth).send({ model: 'openai/gpt-4.1-mini', input: 'and?', previous_response_id: first.body.id }).then((r) => r);
    release(); // the first's close commits as the second arrives: it waits for it, or reads it committed
    const second = await next;
    expect(second.status).toBe(200);
    const got = await request(s.app).get(`/v1/responses/${first.body.id}`).set(org.auth);
    expect(got.body.status).toBe('completed');
  });

  // A stream that answered ends as a synchronous answer does (docs/architecture.md "Endings and rules"; measured in
  // bench/rounds/32-streams-on-their-promise.md): its last event goes out on the promise, the close commits after it.
  it("a stream's last event goes out on its promise: reads after it see the charge it showed", async () => {
    const before = await orgMoney(s, org.organizationId);
    const release = holdCloses();
    const res = await streamed(s, org, '/v1/chat/completions', { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(res.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    const chunks = chatChunks(res.text);
    const id = chunks[0]!.id;
    const cost = money(String(chunks.find((c) => c.usage)?.usage?.cost_rub));
    expect(cost.greaterThan(0)).toBe(true);
    // Promised, replied, and its close submitted after the reply (a close that waited for the hold first would not be).
    expect(await s.ctx.settlements.read(org.organizationId, id)).not.toBeNull();
    await waitFor("the stream's close, submitted after its reply", () => closedAfterReply.has(id), 5_000);
    const reads = Promise.all([request(s.app).get('/v1/balance').set(org.auth), request(s.app).get(`/v1/history/generations/${id}`).set(org.auth)]);
    release();
    const [balance, detail] = await reads;
    expect(balance.body).toMatchObject({ amount: before.balance.minus(cost).toFixed(6), reservedAmount: '0.000000' });
    expect(detail.body).toMatchObject({ status: 'completed', clientCost: cost.toFixed(6) });
    const charges = await s.t.db.ledgerEntry.findMany({ where: { generationId: id, kind: { in: ['charge', 'release'] } } });
    expect(charges.map((e) => [e.kind, money(e.amount).negated().toFixed(6)])).toEqual([['charge', cost.toFixed(6)]]);
  });

  it('a close that fails after its reply is tried again by its run: charged once, the promise spent', async () => {
    failNextAfterReply = true;
    const res = await chat();
    expect(res.status).toBe(200);
    const id: string = res.headers['x-generation-id'] ?? res.body.id;
    const cost = money(res.body.usage.cost_rub);
    await waitFor('the promise kept by its run', async () => (await s.ctx.settlements.read(org.organizationId, id)) === null, 10_000);
    expect(failNextAfterReply).toBe(false); // the close did fail once
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id }, select: { status: true, clientCost: true } });
    expect(g.status).toBe('completed');
    expect(money(g.clientCost).toFixed(6)).toBe(cost.toFixed(6));
    const charges = await s.t.db.ledgerEntry.findMany({ where: { generationId: id, kind: { in: ['charge', 'release'] } } });
    expect(charges.map((e) => [e.kind, money(e.amount).negated().toFixed(6)])).toEqual([['charge', cost.toFixed(6)]]);
  });

  // PostgreSQL away or slow: the last event goes out on the promise with the cost; the commit lands once it can,
  // charged exactly that, once.
  it("a stream whose settlement cannot commit yet ends on its promise, with the cost it is then charged once", async () => {
    s.fake.setKnobs({ promptTokens: 1000, completionTokens: 500, streamChunks: 4, chunkDelayMs: 150 });
    const before = s.fake.requests.length;
    const reply = streamed(s, org, '/v1/chat/completions', { model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'slow commit' }], stream_options: { include_usage: true } });
    // Locked once the provider is called (its stream then takes 600 ms): a stream's record waits for its close, so the
    // record is no sign of it.
    const lock = await lockRowWhen(s, org.organizationId, async () => s.fake.requests.length > before);
    try {
      const res = await reply;
      expect(lock.held()).toBe(true);
      expect(res.status).toBe(200);
      expect(res.text.trimEnd().endsWith('data: [DONE]')).toBe(true);
      const chunks = chatChunks(res.text);
      const id = chunks[0]!.id;
      const cost = money(String(chunks.find((c) => c.usage)?.usage?.cost_rub));
      expect(cost.greaterThan(0)).toBe(true);
      expect(await s.ctx.settlements.read(org.organizationId, id)).not.toBeNull();
      expect((await s.t.db.generation.findFirst({ where: { id } }))?.status).not.toBe('completed');

      await lock.release();
      await waitUntil(async () => ((await s.ctx.settlements.read(org.organizationId, id)) === null ? true : undefined));
      const g = await s.t.db.generation.findFirstOrThrow({ where: { id }, select: { status: true, clientCost: true } });
      expect(g).toMatchObject({ status: 'completed' });
      expect(money(g.clientCost).toFixed(6)).toBe(cost.toFixed(6));
      const charges = await s.t.db.ledgerEntry.findMany({ where: { generationId: id, kind: { in: ['charge', 'release'] } } });
      expect(charges.map((e) => [e.kind, money(e.amount).negated().toFixed(6)])).toEqual([['charge', cost.toFixed(6)]]);
    } finally {
      await lock.release();
      s.fake.setKnobs({ promptTokens: 1000, completionTokens: 500 });
    }
  });
});

describe('promised settlements are kept by whoever comes next', () => {
  let s: TestStack;
  let org: StackOrg;
  const closes = closeHolds();
  afterEach(closes.letGo);
  beforeAll(async () => {
    // No workers: a request that gets past its reservation waits for nobody and times out (408) after 300 ms.
    s = await createTestStack({ noWorkers: true, env: { SYNC_WAIT_MS: '300' }, beforeClose: closes.wait });
    org = await s.seed({ balance: '10' });
  });
  afterAll(() => s.close());

  let n = 0;
  const gen = (organizationId: string): NewGeneration => ({
    id: `gen_promise_${++n}_${Date.now()}`,
    organizationId,
    apiKeyId: null,
    userId: null,
    model: 'openai/gpt-4.1-mini',
    unifiedModelId: 'openai/gpt-4.1-mini',
    requestType: 'chat',
    apiType: 'chat_completions',
    responseMode: 'sync',
    request: { messages: [] },
    bound: '1',
  });

  /** A reserved generation whose (dead) worker promised to charge 0.25 and replied. */
  async function promised() {
    const g = gen(org.organizationId);
    await s.ctx.generations.create(g);
    const row = closeRowOf(g.id, { status: 'completed', cost: '0.25', result: { cost: '0.25' } });
    await s.ctx.settlements.promise(org.organizationId, { row, replyTo: null, message: { type: 'done', payload: { cost: '0.25' } } });
    return g.id;
  }

  async function expectCharged(id: string) {
    const g = await s.t.db.generation.findFirstOrThrow({ where: { id } });
    expect(g.status).toBe('completed');
    expect(money(g.clientCost).toFixed(2)).toBe('0.25');
    expect(await s.ctx.settlements.read(org.organizationId, id)).toBeNull();
  }

  it("writes a close whose result is the reply's payload once, and reads it back whole", async () => {
    const g = gen(org.organizationId);
    const payload = { cost: '0.25', result: { output: 'x'.repeat(2000) } };
    const row = closeRowOf(g.id, { status: 'completed', cost: '0.25', result: payload });
    await s.ctx.settlements.promise(org.organizationId, { row, replyTo: null, message: { type: 'done', payload } });
    const stored = await s.ctx.redis.hget(`${s.ctx.config.queuePrefix}:settling:${org.organizationId}`, g.id);
    expect(stored!.split('x'.repeat(2000)).length).toBe(2);
    const back = await s.ctx.settlements.read(org.organizationId, g.id);
    expect(back?.row).toEqual(JSON.parse(JSON.stringify(row)));
    expect(back?.message).toEqual({ type: 'done', payload });
    await s.ctx.settlements.kept(org.organizationId, g.id);
  });

  it('the job run again after a stall commits the promise instead of calling the provider', async () => {
    const id = await promised();
    const job = { data: { generationId: id, organizationId: org.organizationId } as never, attemptsStarted: 2, stalledCounter: 1 };
    let called = 0;
    const run = claimedRuns(s.workerDeps, async () => void called++);
    // Its first run calls the provider (the processor), whatever the journal holds.
    await run({ ...job, attemptsStarted: 1, stalledCounter: 0 } as never, 'worker-token');
    expect(called).toBe(1);
    expect(await s.ctx.settlements.read(org.organizationId, id)).not.toBeNull();
    // A re-run keeps the promise and calls nothing.
    await run(job as never, 'worker-token');
    expect(called).toBe(1);
    await expectCharged(id);
  });

  it('the reaper commits the promise of a generation no job will finish', async () => {
    const id = await promised();
    const reap = stuckGenerationReaper(s.workerDeps, { everyMs: 60_000, minAgeMs: 0 });
    expect(await reap()).toEqual({ reaped: 0, leases: 0 });
    await expectCharged(id);
  });

  it('a cancel after the reply keeps the reply: the generation is charged, not cancelled', async () => {
    const id = await promised();
    await s.ctx.queues.text.add(QUEUES.text, { generationId: id, organizationId: org.organizationId } as never, { jobId: id });
    expect(await s.ctx.gateway.cancel(id, QUEUES.text)).toBe(false);
    await expectCharged(id);
  });

  // The window a cancel used to have: it found no promise, the worker then promised and replied, and the cancel's
  // commit won, so the client held an answer that was never charged. A cancel now holds the generation while it decides.
  describe("a cancel's hold and a worker's promise exclude each other", () => {
    const data = (id: string) => ({ generationId: id, organizationId: org.organizationId, replyTo: 'api-test', reserved: '1', mode: 'sync' });
    const replies = () => {
      const sent: Array<{ type: string; payload?: { cost: string }; statusAtSend?: string }> = [];
      return {
        sent,
        channel: (id: string) => ({
          send: async (e: GenerationEvent) => {
            const g = await s.t.db.generation.findFirstOrThrow({ where: { id } });
            sent.push({ ...(e as { type: string; payload?: { cost: string } }), statusAtSend: g.status });
          },
        }),
      };
    };

    it('while a cancel holds it, the worker commits before it replies; when the cancel commits first, the reply is cancelled and nothing is charged', async () => {
      const g = gen(org.organizationId);
      await s.ctx.generations.create(g);
      expect(await s.ctx.settlements.fenceForCancel(org.organizationId, g.id)).toBe(true);
      // The cancel commits its ending while it holds the generation...
      expect((await s.ctx.ledger.close(closeRowOf(g.id, { status: 'cancelled' }))).applied).toBe(true);
      // ...and the worker's answer arrives: it cannot promise, so it commits first, loses, and replies `cancelled`.
      const r = replies();
      await endGeneration(s.workerDeps, r.channel(g.id), data(g.id), { kind: 'answer', finish: { status: 'completed', cost: '0.25', result: { cost: '0.25' } }, payload: { cost: '0.25' } });
      expect(r.sent.map((e) => e.type)).toEqual(['cancelled']);
      await s.ctx.settlements.releaseCancel(org.organizationId, g.id);
      const after = await s.t.db.generation.findFirstOrThrow({ where: { id: g.id } });
      expect(after.status).toBe('cancelled');
      expect(money(after.clientCost).isZero()).toBe(true);
      expect(await s.ctx.settlements.read(org.organizationId, g.id)).toBeNull();
    });

    it('while a cancel holds it and the worker commits first, its reply shows the charge and the cancel loses', async () => {
      const g = gen(org.organizationId);
      await s.ctx.generations.create(g);
      expect(await s.ctx.settlements.fenceForCancel(org.organizationId, g.id)).toBe(true);
      const r = replies();
      await endGeneration(s.workerDeps, r.channel(g.id), data(g.id), { kind: 'answer', finish: { status: 'completed', cost: '0.25', result: { cost: '0.25' } }, payload: { cost: '0.25' } });
      // Committed before the reply went out: the reply never runs ahead of its charge while a cancel decides.
      expect(r.sent).toEqual([expect.objectContaining({ type: 'done', statusAtSend: 'completed' })]);
      expect((await s.ctx.ledger.close(closeRowOf(g.id, { status: 'cancelled' }))).applied).toBe(false);
      await s.ctx.settlements.releaseCancel(org.organizationId, g.id);
      await expectCharged(g.id);
    });

    it('a promise already made refuses the hold (the cancel keeps the promise); a released hold, or a stale one, refuses nothing; reads do not wait for a hold', async () => {
      const id = await promised();
      expect(await s.ctx.settlements.fenceForCancel(org.organizationId, id)).toBe(false);
      expect(await s.ctx.settlements.keep(org.organizationId, id, s.ctx.ledger)).toBe(true);
      await expectCharged(id);

      const g = gen(org.organizationId);
      const row = closeRowOf(g.id, { status: 'completed', cost: '0.25' });
      const promise = () => s.ctx.settlements.promise(org.organizationId, { row, replyTo: null, message: { type: 'done', payload: { cost: '0.25' } } });
      expect(await s.ctx.settlements.fenceForCancel(org.organizationId, g.id)).toBe(true);
      expect(await s.ctx.settlements.read(org.organizationId, g.id)).toBeNull();
      // A wait for the hold would outlast the test: it ends at once (nothing promised) or at its first look.
      expect(await s.ctx.settlements.waitSettled(org.organizationId, { generationIds: [g.id], timeoutMs: 10 * 60_000 })).toBe(false);
      await s.ctx.settlements.waitSettled(org.organizationId, { timeoutMs: 10 * 60_000 });
      await expect(promise()).rejects.toBeInstanceOf(PromiseRefused);
      await s.ctx.settlements.releaseCancel(org.organizationId, g.id);
      await promise();
      // Releasing a hold leaves a promise made since in place.
      await s.ctx.settlements.releaseCancel(org.organizationId, g.id);
      expect(await s.ctx.settlements.read(org.organizationId, g.id)).not.toBeNull();
      await s.ctx.settlements.kept(org.organizationId, g.id);

      // A hold its cancel never released (the process died) stops refusing after CANCEL_FENCE_MS.
      await s.ctx.redis.hset(`${s.ctx.config.queuePrefix}:settling:${org.organizationId}`, g.id, `{"cancel":${Date.now() - CANCEL_FENCE_MS - 1}}`);
      await promise();
      expect(await s.ctx.settlements.read(org.organizationId, g.id)).not.toBeNull();
      await s.ctx.settlements.kept(org.organizationId, g.id);
    });
  });

  it('a promise left behind for a generation that has ended is erased once a wait for it runs out', async () => {
    const id = await promised();
    await s.ctx.ledger.close(closeRowOf(id, { status: 'completed', cost: '0.25' }));
    expect(await s.ctx.settlements.waitSettled(org.organizationId, { timeoutMs: 30 })).toBe(true);
    expect(await s.ctx.settlements.read(org.organizationId, id)).toBeNull();
    expect(await s.ctx.settlements.waitSettled(org.organizationId)).toBe(false);
  });

  it('a wait for promises while PostgreSQL is away ends as soon as PostgreSQL is found away (the read then answers 503)', async () => {
    const id = await promised();
    const asked: string[][] = [];
    const away = new SettlementJournal(s.ctx.redis, s.ctx.config.queuePrefix, async (ids) => {
      asked.push(ids);
      throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    });
    // Were it to wait the whole time, the test would time out.
    expect(await away.waitSettled(org.organizationId, { timeoutMs: 10 * 60_000 })).toBe(true);
    expect(asked).toEqual([[id]]);
    // The promise stands, for whoever keeps it once PostgreSQL is back.
    expect(await s.ctx.settlements.read(org.organizationId, id)).not.toBeNull();
    await s.ctx.ledger.close(closeRowOf(id, { status: 'completed', cost: '0.25' }));
    await s.ctx.settlements.kept(org.organizationId, id);
  });

  // Nothing answered within SYNC_WAIT_MS and the cancel cannot commit (its close held from before the request, as by a
  // PostgreSQL that does not answer): the stream still ends, with a final event, within STOP_GRACE_MS.
  it('a stream whose ending cannot commit still ends with a final event', async () => {
    const letGo = closes.hold();
    let id: string;
    try {
      const res = await streamed(s, org, '/v1/responses', { model: 'openai/gpt-4.1-mini', input: 'nobody answers' });
      expect(res.text).toMatch(/event: response\.failed\ndata: .*"code":"SERVICE_UNAVAILABLE"/);
      id = /"id":"(resp_[^"]+)"/.exec(res.text)![1]!;
    } finally {
      letGo();
    }
    // The cancel commits once its close is let go: uncharged, nothing left reserved.
    await waitUntil(async () => ((await s.t.db.generation.findFirst({ where: { id } }))?.status === 'cancelled' ? true : undefined));
    expect(await s.t.db.ledgerEntry.count({ where: { generationId: id, kind: 'charge' } })).toBe(0);
    expect((await orgMoney(s, org.organizationId)).reserved.isZero()).toBe(true);
  });

  it('a reservation refused for money while settlements are promised is tried again once they are committed', async () => {
    const poor = await s.seed({ balance: '0' });
    const planted = closeRowOf('gen_elsewhere', { status: 'completed', cost: '0' });
    await s.ctx.settlements.promise(poor.organizationId, { row: planted, replyTo: null, message: { type: 'cancelled' } });
    // The promise stands, the balance is 0: a plain reservation is refused.
    await expect(s.ctx.generations.create(gen(poor.organizationId))).rejects.toMatchObject({ status: 402 });
    // What the promised commit would free arrives with it, once the request, refused, waits for the promise.
    const waits = jest.spyOn(s.ctx.settlements, 'waitSettled');
    const sent = request(s.app).post('/v1/chat/completions').set(poor.auth).send({ model: 'openai/gpt-4.1-mini', messages: [{ role: 'user', content: 'hi' }] });
    const res = await Promise.all([
      sent,
      waitFor('the refused request to wait for the promise', () => waits.mock.calls.some(([org]) => org === poor.organizationId)).then(async () => {
        await s.t.db.organization.update({ where: { id: poor.organizationId }, data: { balance: '5' } });
        await s.ctx.settlements.kept(poor.organizationId, 'gen_elsewhere');
      }),
    ]).then(([r]) => r);
    waits.mockRestore();
    // Refused, waited for the promise, reserved on the second try; then no worker answered.
    expect(res.status).toBe(408);
    expect(await s.t.db.generation.count({ where: { organizationId: poor.organizationId } })).toBe(1);
  });
});
