import { randomBytes } from 'node:crypto';
import { Queue, Worker, type Job } from 'bullmq';
import { claimedAtEnqueue } from '../../shared/queue/claims';
import { addJob, LocalClaimers, type Claim, type Claimer, type ClaimTicket } from '../../shared/queue/claims';
import type Redis from 'ioredis';
import { createRedis, whenReady } from '../../shared/queue/redis';
import { ClaimingWorker } from '../../workers/claiming-worker';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { pause, waitFor } from '../helpers/until';

/** Claim at enqueue (shared/queue/claims.ts, workers/claiming-worker.ts) on real Redis and BullMQ. */
describe('claim at enqueue (real Redis)', () => {
  const prefix = `{tc-${randomBytes(4).toString('hex')}}`;
  const redis = createRedis(TEST_REDIS_URL, { patient: true });
  const closers: Array<() => Promise<unknown>> = [];
  let n = 0;
  beforeAll(() => whenReady(redis));
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  /** The workers of this test's process (its lane's claimers). */
  const claimers = new LocalClaimers();
  /** A claim of a free slot of this process's workers for the queue, as the gateway makes one; none when no slot is free. */
  const claim = (q: Queue, extra: Partial<Claim> = {}): Claim | undefined => {
    const ticket = claimers.hold(q.qualifiedName);
    return ticket ? { ticket, ...extra } : undefined;
  };
  const until = (check: () => Promise<boolean> | boolean, ms = 5000) => waitFor('the condition', check, ms);
  /** How many of the queue's workers wait in their blocking fetch (BZPOPMIN), as Redis lists its clients. */
  const blockedFetches = async (q: Queue) => (await q.getWorkers()).filter((w) => w.cmd === 'bzpopmin').length;

  function newQueue(): Queue {
    const q = new Queue(`q${n++}`, { connection: redis, prefix });
    closers.push(() => q.close());
    return q;
  }
  function worker<W extends Worker>(w: W): W {
    closers.push(() => w.close(true));
    return w;
  }
  /** A connection of its own for one worker (closed after the worker). */
  function conn(): Redis {
    const c = redis.duplicate();
    closers.unshift(async () => c.disconnect());
    return c;
  }
  /** Counts a worker's fetches (BullMQ's moveToActive): each is a wake-up for a job. */
  const countFetches = (w: Worker) => jest.spyOn(w as unknown as { moveToActive(): Promise<unknown> }, 'moveToActive');
  const keep = { removeOnComplete: false, removeOnFail: false };

  /** A claimer that takes every job and never runs it: a process that died right after its claim. */
  function deadClaimer(q: Queue): { tickets: ClaimTicket[]; started: string[]; released: number } {
    const seen = { tickets: [] as ClaimTicket[], started: [] as string[], released: 0 };
    const claimer: Claimer = {
      hold() {
        const t: ClaimTicket = { token: `dead:${seen.tickets.length}`, lockDuration: 400, start: (_raw, id) => void seen.started.push(id), release: () => void seen.released++ };
        seen.tickets.push(t);
        return t;
      },
    };
    const withdraw = claimers.offer(q.qualifiedName, claimer);
    closers.push(async () => withdraw());
    return seen;
  }

  it('hands a waiting job to the worker of this process in the same script: active, locked with its token, no marker left, no other worker woken', async () => {
    const q = newQueue();
    const ran: Array<{ token?: string; data: unknown; lock: string | null; wait: number; marker: string | null }> = [];
    const claiming = worker(
      new ClaimingWorker(
        q.name,
        async (job: Job, token?: string) => {
          ran.push({ token, data: job.data, lock: await redis.get(`${prefix}:${q.name}:${job.id}:lock`), wait: await q.getWaitingCount(), marker: await redis.zscore(`${prefix}:${q.name}:marker`, '0') });
          return 'answer';
        },
        { connection: conn(), prefix, concurrency: 2 },
      ).offerClaims(claimers),
    );
    // Another process's worker, blocked on the same queue: it must not be woken for the claimed job.
    const other = worker(new Worker(q.name, async () => undefined, { connection: conn(), prefix }));
    await until(() => claiming.isRunning() && other.isRunning());
    await until(async () => (await blockedFetches(q)) === 2);
    const fetches = [countFetches(claiming), countFetches(other)];

    expect(await addJob(q, { hello: 'world' }, { jobId: 'j1', ...keep }, claim(q))).toBe('claimed');
    await until(async () => (await q.getJobState('j1')) === 'completed');

    expect(ran).toEqual([{ token: expect.stringContaining(':claim:'), data: { hello: 'world' }, lock: ran[0]!.token, wait: 0, marker: null }]);
    const job = (await q.getJob('j1'))!;
    expect(job.returnvalue).toBe('answer');
    expect(job.attemptsStarted).toBe(1);
    expect(job.processedOn).toBeGreaterThan(0);
    const events = await redis.xrange(`${prefix}:${q.name}:events`, '-', '+');
    expect(events.map(([, f]) => f[1])).toEqual(['added', 'waiting', 'active', 'completed', 'drained']);
    // A window in which a woken worker would have fetched: both stayed blocked (BZPOPMIN returns only at its timeout,
    // seconds away), no fetch for this job.
    await pause(200);
    expect(await blockedFetches(q)).toBe(2);
    expect(fetches.map((f) => f.mock.calls.length)).toEqual([0, 0]);
  });

  it('leaves the job to the queue when the queue is paused, at its global concurrency, or an older job waits; the ticket is released', async () => {
    const q = newQueue();
    const dead = deadClaimer(q);
    await q.pause();
    expect(await addJob(q, {}, { jobId: 'p1', ...keep }, claim(q))).toBe('queued');
    expect(await q.getJobState('p1')).toBe('waiting');
    await q.resume();
    // p1 waits: a new job must not overtake it.
    expect(await addJob(q, {}, { jobId: 'p2', ...keep }, claim(q))).toBe('queued');
    expect(await q.getWaiting()).toHaveLength(2);
    expect(await redis.zscore(`${prefix}:${q.name}:marker`, '0')).not.toBeNull();
    await q.drain();
    await q.setGlobalConcurrency(1);
    expect(await addJob(q, {}, { jobId: 'g1', ...keep }, claim(q))).toBe('claimed');
    expect(await addJob(q, {}, { jobId: 'g2', ...keep }, claim(q))).toBe('queued');
    expect(await q.getJobState('g1')).toBe('active');
    expect(await q.getJobState('g2')).toBe('waiting');
    expect(dead.started).toEqual(['g1']);
    expect(dead.released).toBe(dead.tickets.length - 1);
  });

  it('asked for the claim only, adds nothing when BullMQ would not give the job now (paused, at its concurrency, an older job waits); the ticket is released', async () => {
    const q = newQueue();
    const dead = deadClaimer(q);
    await q.pause();
    expect(await addJob(q, {}, { jobId: 'o1', ...keep }, claim(q, { only: true }))).toBe('not-added');
    expect(await q.getJob('o1')).toBeUndefined();
    await q.resume();
    await q.add(q.name, {}, { jobId: 'older', ...keep });
    expect(await addJob(q, {}, { jobId: 'o2', ...keep }, claim(q, { only: true }))).toBe('not-added');
    expect(await q.getJob('o2')).toBeUndefined();
    await q.drain();
    await q.setGlobalConcurrency(1);
    expect(await addJob(q, {}, { jobId: 'o3', ...keep }, claim(q, { only: true }))).toBe('claimed');
    expect(await addJob(q, {}, { jobId: 'o4', ...keep }, claim(q, { only: true }))).toBe('not-added');
    expect(await q.getJob('o4')).toBeUndefined();
    expect(await q.getWaiting()).toHaveLength(0);
    expect(dead.started).toEqual(['o3']);
    expect(dead.released).toBe(dead.tickets.length - 1);
  });

  it('never claims a job that already exists under that id (the add changes nothing, as queue.add)', async () => {
    const q = newQueue();
    const dead = deadClaimer(q);
    await q.add(q.name, { first: true }, { jobId: 'd1', ...keep });
    expect(await addJob(q, { second: true }, { jobId: 'd1', ...keep }, claim(q))).toBe('queued');
    const job = (await q.getJob('d1'))!;
    expect(job.data).toEqual({ first: true });
    expect(job.processedOn).toBeFalsy();
    expect(await q.getJobState('d1')).toBe('waiting');
    expect(dead.started).toEqual([]);
  });

  it('a worker with no free slot takes no claim: the job waits and is fetched as usual', async () => {
    const q = newQueue();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const tokens: Record<string, string | undefined> = {};
    const w = worker(
      new ClaimingWorker(
        q.name,
        async (job: Job, token?: string) => {
          tokens[job.id!] = token;
          if (job.id === 'busy') await gate;
        },
        { connection: conn(), prefix, concurrency: 1 },
      ).offerClaims(claimers),
    );
    await until(() => w.isRunning());
    expect(await addJob(q, {}, { jobId: 'busy', ...keep }, claim(q))).toBe('claimed');
    await until(() => tokens.busy !== undefined);
    expect(await addJob(q, {}, { jobId: 'next', ...keep }, claim(q))).toBe('queued');
    release();
    await until(async () => (await q.getJobState('next')) === 'completed');
    expect(tokens.busy).toContain(':claim:');
    expect(tokens.next).not.toContain(':claim:');
  });

  it("'next-turn' starts a claimed job only after the caller has gone on (a stream's head first); true starts it before", async () => {
    const q = newQueue();
    const order: string[] = [];
    const w = worker(new ClaimingWorker(q.name, async (job: Job) => void order.push(`ran ${job.id}`), { connection: conn(), prefix, concurrency: 2 }).offerClaims(claimers));
    await until(() => w.isRunning());
    const added = (id: string, when: true | 'next-turn') => addJob(q, {}, { jobId: id, ...keep }, claim(q, { nextTurn: when === 'next-turn' })).then((r) => void order.push(`${r} ${id}`));
    await added('soon', true);
    await until(async () => (await q.getJobState('soon')) === 'completed');
    await added('later', 'next-turn');
    await until(async () => (await q.getJobState('later')) === 'completed');
    expect(order).toEqual(['ran soon', 'claimed soon', 'claimed later', 'ran later']);
    // A worker closed right after a claim whose start waits for the next turn still runs that job before it closes.
    await added('closing', 'next-turn');
    await w.close();
    expect(order.slice(-2)).toEqual(['claimed closing', 'ran closing']);
    expect(await q.getJobState('closing')).toBe('completed');
  });

  it('a claimed job whose process died is re-run by another worker once its lock lapses, once, and that run knows it was claimed', async () => {
    const q = newQueue();
    const dead = deadClaimer(q);
    expect(await addJob(q, { x: 1 }, { jobId: 's1', ...keep }, claim(q))).toBe('claimed');
    await q.pause();
    expect(await addJob(q, { x: 2 }, { jobId: 's2', ...keep }, claim(q))).toBe('queued');
    await q.resume();
    expect(dead.started).toEqual(['s1']);
    const runs: Array<{ id: string; started: number; claimed: boolean }> = [];
    worker(
      new Worker(q.name, async (job: Job) => void runs.push({ id: job.id!, started: job.attemptsStarted, claimed: await claimedAtEnqueue(redis, job) }), {
        connection: conn(),
        prefix,
        stalledInterval: 200,
        lockDuration: 400,
        maxStalledCount: 1,
      }),
    );
    await until(async () => (await q.getJobState('s1')) === 'completed' && (await q.getJobState('s2')) === 'completed', 8000);
    // The claim's mark (workers/services/drawn-jobs.ts ends such a re-run of a client-only job uncharged); a job that
    // waited in the queue has none.
    expect(runs.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      { id: 's1', started: 2, claimed: true },
      { id: 's2', started: 1, claimed: false },
    ]);
    expect((await q.getJob('s1'))!.attemptsStarted).toBe(2);
  });

  it('renews the lock of a claimed job that outlasts it (no other worker re-runs it), and close waits for it', async () => {
    const q = newQueue();
    const runs: string[] = [];
    const w = worker(
      new ClaimingWorker(
        q.name,
        async (job: Job, token?: string) => {
          runs.push(token!);
          // Outlasts its lock (400 ms) by its renewals (every 200 ms): six, past the lock and the other worker's stalled
          // checks (every 200 ms), which would re-run a job whose lock lapsed.
          const lock = `${prefix}:${q.name}:${job.id}:lock`;
          let [renewals, left] = [0, await redis.pttl(lock)];
          const renewed = async () => {
            const now = await redis.pttl(lock);
            if (now > left + 50) renewals++; // back up to ~400 ms
            left = now;
            return renewals === 6;
          };
          await waitFor('the lock renewed six times', renewed, 10_000, 10);
          return job.id;
        },
        { connection: conn(), prefix, lockDuration: 400, stalledInterval: 200, maxStalledCount: 1 },
      ).offerClaims(claimers),
    );
    const other: string[] = [];
    worker(new Worker(q.name, async (job: Job) => void other.push(job.id!), { connection: conn(), prefix, stalledInterval: 200, lockDuration: 400, maxStalledCount: 1 }));
    await until(() => w.isRunning());
    expect(await addJob(q, {}, { jobId: 'long', ...keep }, claim(q))).toBe('claimed');
    await until(() => runs.length === 1);
    await w.close();
    expect(await q.getJobState('long')).toBe('completed');
    expect(runs).toHaveLength(1);
    expect(other).toEqual([]);
    // Closed: it offers nothing any more.
    expect(await addJob(q, {}, { jobId: 'after', ...keep }, claim(q))).toBe('queued');
  });
});
