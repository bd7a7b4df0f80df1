import { randomBytes } from 'node:crypto';
import { Queue, Worker, type Job, type Processor } from 'bullmq';
import { addJob } from '../../shared/queue/claims';
import { fairPriority, waitingByClass, type FairGroup, type WorkClass } from '../../shared/queue/fairness';
import { queueClient } from '../../shared/queue/claims';
import { OrgCaps } from '../../shared/queue/org-cap';
import { createRedis, whenReady } from '../../shared/queue/redis';
import { createLogger } from '../../shared/logger';
import { fairStart } from '../../workers/services/fair-start';
import type { WorkerDeps } from '../../workers/worker-deps';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { waitFor } from '../helpers/until';

/** Fair queues (shared/queue/fairness.ts, workers/services/fair-start.ts) on real Redis and BullMQ. */
describe('fair queues (real Redis)', () => {
  const prefix = `{tf-${randomBytes(4).toString('hex')}}`;
  const redis = createRedis(TEST_REDIS_URL, { patient: true });
  const closers: Array<() => Promise<unknown>> = [];
  const deps = { redis, logger: createLogger({ level: 'error' }) } as unknown as WorkerDeps;
  let n = 0;
  beforeAll(() => whenReady(redis));
  afterAll(async () => {
    for (const c of closers.reverse()) await c().catch(() => undefined);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });

  const group = (organizationId: string, workClass: WorkClass): FairGroup => ({ organizationId, workClass });

  function newQueue(): Queue {
    const q = new Queue(`q${n++}`, { connection: redis, prefix });
    closers.push(() => q.close());
    return q;
  }
  let ids = 0;
  const add = (q: Queue, org: string, c: WorkClass) => addJob(q, { organizationId: org, c }, { jobId: `j${ids++}` }, undefined, group(org, c));

  /**
   * One worker of `concurrency` slots through fairStart; the order jobs start in, as `<org>:<class>`. Every job was
   * enqueued before, so their priorities are set: the uncounts at their starts (not awaited) change no order here.
   */
  function runWorker(q: Queue, concurrency: number, until: number): Promise<string[]> {
    const started: string[] = [];
    const conn = redis.duplicate();
    const caps = new OrgCaps(conn, prefix, 30_000);
    closers.push(async () => conn.disconnect());
    return new Promise((resolve) => {
      const processor: Processor = async (job: Job) => {
        started.push(`${job.data.organizationId}:${job.data.c}`);
        if (started.length === until) resolve(started);
      };
      const w = new Worker(q.name, fairStart(deps, caps, processor, async () => undefined), { connection: conn, prefix, concurrency });
      closers.push(() => w.close(true));
    });
  }

  it("another organization's background job starts within the next few starts, not behind a backlog of 300", async () => {
    const q = newQueue();
    for (let i = 0; i < 300; i++) await add(q, 'A', 'background');
    await add(q, 'B', 'background');
    const started = await runWorker(q, 1, 5);
    expect(started.slice(0, 3)).toContain('B:background');
  });

  it("an interactive job starts before every background job, and an interactive backlog of 200 delays another organization's by about one job", async () => {
    const q = newQueue();
    for (let i = 0; i < 100; i++) await add(q, 'A', 'background');
    for (let i = 0; i < 200; i++) await add(q, 'A', 'interactive');
    await add(q, 'B', 'interactive');
    expect(await waitingByClass(await queueClient(q), q)).toEqual({ interactive: 201, background: 100 });
    const started = await runWorker(q, 1, 301);
    expect(started.indexOf('B:interactive')).toBeLessThanOrEqual(2);
    expect(started.slice(0, 201).every((s) => s.endsWith(':interactive'))).toBe(true);
  });

  it("round robin: with three organizations' backlogs, the k-th job of each starts before the (k+1)-th of any, each organization's in the order they came", async () => {
    const q = newQueue();
    for (let i = 0; i < 30; i++) await add(q, 'A', 'background');
    for (let i = 0; i < 10; i++) await add(q, 'B', 'background');
    for (let i = 0; i < 5; i++) await add(q, 'C', 'background');
    const started = await runWorker(q, 1, 45);
    expect(started.slice(0, 15).sort()).toEqual([...Array(5).fill('A:background'), ...Array(5).fill('B:background'), ...Array(5).fill('C:background')]);
  });

  it('an organization with interactive jobs waiting gets a priority for its next one (it is neither claimed nor put ahead of the others)', async () => {
    const q = newQueue();
    for (let i = 0; i < 20; i++) await add(q, 'A', 'interactive');
    expect(await fairPriority(await queueClient(q), q, group('A', 'interactive'))).toBeGreaterThan(0);
    await q.obliterate({ force: true }).catch(() => undefined);
  });

  it('uncounts each job at its first start: after a backlog drains under a live background backlog, the next job gets no priority', async () => {
    const q = newQueue();
    for (let i = 0; i < 20; i++) await add(q, 'A', 'interactive');
    for (let i = 0; i < 500; i++) await add(q, 'B', 'background');
    await runWorker(q, 1, 20);
    // The last uncount is not awaited by the job: A's count goes back to 0.
    await waitFor("A's jobs uncounted", async () => (await redis.hget(`${q.qualifiedName}:fair:interactive:A`, 'n')) === '0');
    // B's background jobs still wait, so no new epoch made A's count void.
    expect(await fairPriority(await queueClient(q), q, group('A', 'interactive'))).toBe(0);
  });
});
