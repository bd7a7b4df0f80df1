import { randomBytes } from 'node:crypto';
import { Queue } from 'bullmq';
import { createRedis, deleteKeys, whenReady } from '../../shared/queue/redis';
import { QUEUES } from '../../shared/queue/queue-names';
import { MAINTENANCE_JOBS } from '../../workers/processors/maintenance.processor';
import { keepMaintenanceScheduled } from '../../workers/schedules';
import { TEST_REDIS_URL } from '../helpers/test-env';
import { waitUntil } from '../helpers/until';

// A Redis that comes back without its data loses the maintenance schedulers (the reaper of stuck generations and
// expired leases among them): each worker process installs them again (workers/schedules.ts). The shared test Redis is
// never flushed: deleting this file's prefix is the wipe.

describe('keepMaintenanceScheduled: the reaper survives a Redis that lost its data', () => {
  const prefix = `{t-${randomBytes(5).toString('hex')}}`;
  const config = { queuePrefix: prefix, reaper: { everyMs: 60_000, minAgeMs: 120_000 } };
  const redis = createRedis(TEST_REDIS_URL, { name: 'test-schedules' });
  const inspect = new Queue(QUEUES.maintenance, { connection: redis, prefix });
  const warnings: string[] = [];
  const logger = { warn: (m: string) => void warnings.push(m) };
  const installed = async () => (await Promise.all(Object.values(MAINTENANCE_JOBS).map((id) => inspect.getJobScheduler(id)))).every((s) => s !== undefined);
  const wipe = () => deleteKeys(redis, `${prefix}*`);

  beforeAll(() => whenReady(redis));
  afterAll(async () => {
    await wipe();
    await inspect.close();
    redis.disconnect();
  });

  it('installs both at start; a check while they are there changes nothing', async () => {
    const s = await keepMaintenanceScheduled(redis, config, logger);
    try {
      expect(await installed()).toBe(true);
      const next = (await inspect.getJobScheduler(MAINTENANCE_JOBS.reapStuckGenerations))!.next;
      expect(await s.check()).toBe(0);
      expect((await inspect.getJobScheduler(MAINTENANCE_JOBS.reapStuckGenerations))!.next).toBe(next);
    } finally {
      await s.close();
      await wipe();
    }
  });

  it('wiped, they are installed again by the periodic check, with no reconnect', async () => {
    const s = await keepMaintenanceScheduled(redis, config, logger, 200);
    try {
      await wipe();
      expect(await installed()).toBe(false);
      await waitUntil(async () => ((await installed()) ? true : undefined), 3000);
      expect(warnings.some((w) => w.includes('installed again'))).toBe(true);
    } finally {
      await s.close();
      await wipe();
    }
  });

  it('wiped, they are installed again as soon as the connection is ready after a reconnect', async () => {
    const own = createRedis(TEST_REDIS_URL, { name: 'test-schedules-reconnect' });
    await whenReady(own);
    // The periodic check is an hour away: only the reconnect can bring them back within the test.
    const s = await keepMaintenanceScheduled(own, config, logger, 3_600_000);
    try {
      await wipe();
      expect(await installed()).toBe(false);
      own.disconnect(true); // drops the connection and reconnects, as after a Redis restart
      await waitUntil(async () => ((await installed()) ? true : undefined), 5000);
    } finally {
      await s.close();
      own.disconnect();
    }
  });
});
