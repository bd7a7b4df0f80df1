import { randomBytes } from 'node:crypto';
import { Queue, type Job } from 'bullmq';
import { JobLock, JobLocks } from '../../shared/queue/job-lock';
import { createRedis, whenReady } from '../../shared/queue/redis';
import { ClaimingWorker } from '../../workers/claiming-worker';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { waitFor, waitUntil } from '../helpers/until';

/**
 * What a process knows of its jobs' locks (shared/queue/job-lock.ts), on real Redis and BullMQ: the Worker's renewals
 * keep it sure without asking Redis; past its lock it asks once, and a lock that lapsed or went to another run is lost.
 */
describe('a job lock (real Redis)', () => {
  const prefix = `{tl-${randomBytes(4).toString('hex')}}`;
  const redis = createRedis(TEST_REDIS_URL, { patient: true });
  const closers: Array<() => Promise<unknown>> = [];
  beforeAll(() => whenReady(redis));
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it("stays sure while the Worker renews it (its renewals reported by ClaimingWorker), and is lost once another run's token holds it", async () => {
    const q = new Queue('locked', { connection: redis, prefix });
    closers.push(() => q.close());
    const conn = redis.duplicate();
    closers.push(async () => conn.disconnect());
    const locks = new JobLocks();
    let release!: () => void;
    const running = new Promise<void>((r) => (release = r));
    let seen: { job: Job; token: string } | undefined;
    const w = new ClaimingWorker(q.name, async (job: Job, token?: string) => {
      seen = { job, token: token! };
      await running;
    }, { connection: conn, prefix, lockDuration: 2_000 }).trackLocks(locks);
    closers.push(async () => {
      release();
      await w.close(true);
    });
    await q.add('x', {}, { jobId: 'j1' });
    await waitUntil(async () => seen);
    const lock = locks.get('j1')!;
    expect(lock).toBeDefined();
    // Two lock durations on (four renewals, its key's expiry moving back up) it is still sure at each, with no question
    // asked: the renewals reached it. (A 400 ms lock lapsed between renewals beside busy processes.)
    const key = `${prefix}:${q.name}:j1:lock`;
    let left = await redis.pttl(key);
    for (let i = 0; i < 4; i++) {
      await waitFor('a renewal', async () => {
        const now = await redis.pttl(key);
        const renewed = now > left + 50;
        left = now;
        return renewed;
      }, 5_000, 10);
      expect(lock.surely()).toBe(true);
    }
    // Another run holds the job now (as after a stalled check): the next renewal is refused, and the job is lost.
    await redis.set(`${prefix}:${q.name}:j1:lock`, 'another-run', 'PX', 10_000);
    await waitUntil(async () => (lock.surely() ? undefined : true));
    expect(await lock.held()).toBe(false);
    release();
    await waitUntil(async () => (locks.get('j1') ? undefined : true));
  });

  it('past its time it asks Redis once: still its own, it is sure again; lapsed, it is lost', async () => {
    const key = `${prefix}:q:j2:lock`;
    const job = { extendLock: (token: string, ms: number) => redis.eval(`if redis.call("GET", KEYS[1]) == ARGV[1] then redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2]) return 1 end return 0`, 1, key, token, ms) as Promise<number> };
    await redis.set(key, 'mine', 'PX', 5_000);
    // Taken a lock duration ago and never renewed since: not sure any more.
    const lock = new JobLock(job, 'mine', 300, Date.now() - 300);
    expect(lock.surely()).toBe(false);
    expect(await lock.held()).toBe(true);
    expect(lock.surely()).toBe(true);

    const lapsed = new JobLock(job, 'mine', 300, Date.now() - 300);
    await redis.del(key);
    expect(await lapsed.held()).toBe(false);
    expect(await lapsed.held()).toBe(false);
  });
});
