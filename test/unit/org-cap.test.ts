import { randomBytes } from 'node:crypto';
import { DelayedError, Queue, Worker, type Job, type Processor } from 'bullmq';
import { addJob } from '../../shared/queue/claims';
import type { WorkClass } from '../../shared/queue/fairness';
import { OrgCaps, deferDelayMs } from '../../shared/queue/org-cap';
import { promoteIfDelayed } from '../../shared/queue/promote';
import { createRedis, whenReady } from '../../shared/queue/redis';
import { createLogger } from '../../shared/logger';
import { fairStart } from '../../workers/services/fair-start';
import type { WorkerDeps } from '../../workers/worker-deps';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { waitUntil } from '../helpers/until';

/**
 * An organization's cap (shared/queue/org-cap.ts, workers/services/fair-start.ts) on real Redis and BullMQ: inside the
 * cap, interactive work still starts before background work. Each job runs until the test lets it end, so the order is
 * read from events, not from the clock.
 */
describe('an organization at its cap (real Redis)', () => {
  const prefix = `{tc-${randomBytes(4).toString('hex')}}`;
  const redis = createRedis(TEST_REDIS_URL, { patient: true });
  const closers: Array<() => Promise<unknown>> = [];
  const deps = { redis, logger: createLogger({ level: 'error' }) } as unknown as WorkerDeps;
  /** The jobs running, by name: each ends when the test calls its function. */
  const running = new Map<string, () => void>();
  beforeAll(() => whenReady(redis));
  afterAll(async () => {
    for (const end of running.values()) end();
    for (const c of closers.reverse()) await c().catch(() => undefined);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  it('defers interactive work ahead of background work, and never lets an interactive put-back wait 10 s', () => {
    expect([1, 2, 3, 4, 5, 6, 7, 8].map((n) => deferDelayMs(n, 'interactive'))).toEqual([250, 500, 1000, 1000, 1000, 1000, 1000, 1000]);
    expect(deferDelayMs(8, 'background')).toBe(10_000);
  });

  it('deferred jobs of a class are handed slots oldest made first, whatever order they reached the cap in', async () => {
    const caps = new OrgCaps(redis, prefix, 30_000);
    const made = Date.now() - 1000;
    expect(await caps.admit('C', 'q\trunning', 1, 'background', made)).toBe(true);
    // A worker fetched both together; the younger one reached its admission first.
    expect(await caps.admit('C', 'q\tyounger', 1, 'background', made + 2)).toBe(false);
    expect(await caps.admit('C', 'q\tolder', 1, 'background', made + 1)).toBe(false);
    expect(await caps.release('C', 'q\trunning', 1)).toEqual(['q\tolder']);
    expect(await caps.release('C', 'q\tolder', 1)).toEqual(['q\tyounger']);
  });

  it('a capped organization: its interactive calls start at the next free slots, ahead of its own background batch', async () => {
    const q = new Queue('capped', { connection: redis, prefix });
    closers.push(() => q.close());
    const conn = redis.duplicate();
    closers.push(async () => conn.disconnect());
    const caps = new OrgCaps(conn, prefix, 30_000);

    // Each job runs until the test ends it; `started` is the order the jobs passed the cap in.
    const started: string[] = [];
    let active = 0;
    let most = 0;
    const processor: Processor = (job: Job) => {
      started.push(job.data.name as string);
      most = Math.max(most, ++active);
      return new Promise<void>((resolve) => running.set(job.data.name as string, () => (active--, resolve())));
    };
    let worker: Worker | undefined;
    const wake = (_queue: string, id: string) => promoteIfDelayed(worker!, id);
    worker = new Worker(q.name, fairStart(deps, caps, processor, wake), { connection: conn, prefix, concurrency: 16 });
    closers.push(() => worker!.close(true));

    let ids = 0;
    const add = (name: string, workClass: WorkClass) =>
      addJob(q, { organizationId: 'A', name, maxConcurrency: 2 }, { jobId: `j${ids++}` }, undefined, { organizationId: 'A', workClass });
    const deferred = () => q.getDelayedCount();

    // A background batch of 8 slow calls: 2 run, 6 are put back.
    for (let i = 0; i < 8; i++) await add(`batch-${i}`, 'background');
    await waitUntil(async () => (started.length === 2 && (await deferred()) === 6 ? true : undefined));
    // Then the same organization's synchronous and streamed calls: put back too, the cap being reached.
    await add('sync', 'interactive');
    await add('stream', 'interactive');
    await waitUntil(async () => ((await deferred()) === 8 ? true : undefined));

    // One batch call ends: its slot goes to the first interactive call, whatever was put back before it.
    running.get(started[0]!)!();
    await waitUntil(async () => (started.length === 3 ? true : undefined));
    expect(started[2]).toBe('sync');
    running.get(started[1]!)!();
    await waitUntil(async () => (started.length === 4 ? true : undefined));
    expect(started[3]).toBe('stream');

    // Then the batch goes on, in its own order, still 2 at a time.
    for (let next = 4; next < 10; next++) {
      running.get(started[next - 2]!)!();
      await waitUntil(async () => (started.length === next + 1 ? true : undefined));
    }
    expect(started.slice(4)).toEqual(['batch-2', 'batch-3', 'batch-4', 'batch-5', 'batch-6', 'batch-7']);
    expect(most).toBe(2);
    for (const end of running.values()) end();
  });

  it('a job handed its slot while it is being put back wakes itself (the ending\'s wake found it not yet delayed)', async () => {
    const q = new Queue('handed', { connection: redis, prefix });
    closers.push(() => q.close());
    const conn = redis.duplicate();
    closers.push(async () => conn.disconnect());
    // The race, made to happen: the job is refused (the cap is full), then, before it is put back, the running job
    // ends, hands it the slot and tries to wake it, which does nothing, the job being active still.
    const wakes: string[] = [];
    class EndingMeanwhile extends OrgCaps {
      override async admit(org: string, member: string, cap: number, workClass: WorkClass, madeAt: number): Promise<boolean> {
        const admitted = await super.admit(org, member, cap, workClass, madeAt);
        const handed = await this.release(org, 'handed\tfirst', cap);
        expect(handed).toEqual([member]);
        await promoteIfDelayed(q, member.split('\t')[1]!);
        return admitted;
      }
    }
    const caps = new EndingMeanwhile(conn, prefix, 30_000);
    expect(await new OrgCaps(conn, prefix, 30_000).admit('B', 'handed\tfirst', 1, 'background', Date.now())).toBe(true);
    const worker = new Worker(q.name, null, { connection: conn, prefix });
    closers.push(() => worker.close(true));
    await q.add('x', { organizationId: 'B', maxConcurrency: 1 }, { jobId: 'second' });
    const job = (await worker.getNextJob('t1'))!;
    const processor = fairStart(deps, caps, () => Promise.resolve(), async (queueName, id) => void wakes.push(`${queueName}/${id}`));
    await expect(processor(job, 't1')).rejects.toThrow(DelayedError);
    await waitUntil(async () => (wakes.length ? true : undefined));
    expect(wakes).toEqual(['handed/second']);
  });
});
