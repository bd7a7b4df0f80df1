import { Queue } from 'bullmq';
import type Redis from 'ioredis';
import type { Config } from '../shared/config/env';
import { QUEUES } from '../shared/queue/queue-names';
import { MAINTENANCE_JOBS, scheduleMaintenance } from './processors/maintenance.processor';
import { scheduleReaper } from './processors/reap-stuck-generations.processor';
import { scheduleBatchResumer } from './processors/resume-batches.processor';

/** The maintenance queue's schedulers, kept installed by every worker process. */
export interface MaintenanceSchedules {
  /** Installs any scheduler missing now; resolves to how many were missing (0 when all were there). */
  check(): Promise<number>;
  close(): Promise<void>;
}

/**
 * Installs the repeatable maintenance jobs (the reaper of stuck generations and expired leases, the sweep of expired
 * files, the resumer of batch jobs) and keeps them installed: they live in Redis, and a Redis that comes back without its data (restarted without
 * its append-only file, or flushed) would otherwise never run them again until a worker restarts. Each worker process
 * checks that they are there when its connection is ready again after a reconnect and every `everyMs` (the reaper's
 * period by default), and installs the missing ones. The check reads three keys; installing is idempotent, so several
 * processes doing it at once install each scheduler once. Resolves once they are installed at start (as before: a
 * worker that cannot install them does not start).
 */
export async function keepMaintenanceScheduled(
  redis: Redis,
  config: Pick<Config, 'queuePrefix' | 'reaper'>,
  logger: { warn(message: string, meta?: Record<string, unknown>): unknown },
  everyMs: number = config.reaper.everyMs,
): Promise<MaintenanceSchedules> {
  const queue = new Queue(QUEUES.maintenance, { connection: redis, prefix: config.queuePrefix });
  queue.on('error', () => undefined); // a Redis outage is reported by the connection's own users
  const ids = Object.values(MAINTENANCE_JOBS);
  const install = async () => {
    await scheduleMaintenance(queue);
    await scheduleReaper(queue, config.reaper);
    await scheduleBatchResumer(queue, config.reaper);
  };
  let running: Promise<number> | undefined;
  const check = (): Promise<number> =>
    (running ??= (async () => {
      try {
        const missing = (await Promise.all(ids.map((id) => queue.getJobScheduler(id)))).filter((s) => !s).length;
        if (missing > 0) {
          await install();
          logger.warn('maintenance schedulers missing in Redis (it came back without its data?): installed again', { missing });
        }
        return missing;
      } finally {
        running = undefined;
      }
    })());
  const verify = () => void check().catch((err: unknown) => logger.warn('maintenance schedulers not checked', { err }));

  await install();
  redis.on('ready', verify);
  const timer = setInterval(verify, everyMs);
  timer.unref();
  return {
    check,
    async close() {
      clearInterval(timer);
      redis.off('ready', verify);
      await running?.catch(() => undefined);
      await queue.close();
    },
  };
}
