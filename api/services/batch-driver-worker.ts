import { Worker } from 'bullmq';
import type Redis from 'ioredis';
import type { Logger } from '../../shared/logger';
import type { Config } from '../../shared/config/env';
import { QUEUES } from '../../shared/queue/queue-names';
import { DEFAULT_CONCURRENCY, type BatchJobData } from '../../shared/queue/job-catalog';
import type { BatchDriver } from './batch-driver';

/**
 * The BullMQ Worker of the `batches` queue: every API process runs one (the driver orders lines through the services
 * the routes use, which live in the API). A process that dies leaves its drivers' jobs to any other's stalled check.
 */
export function startBatchDriver(driver: BatchDriver, connection: Redis, config: Pick<Config, 'queuePrefix' | 'worker'>, logger: Logger): Worker {
  const w = new Worker<BatchJobData>(QUEUES.batches, (job, token) => driver.run(job, token), {
    connection,
    prefix: config.queuePrefix,
    concurrency: config.worker.concurrency.batches ?? DEFAULT_CONCURRENCY.batches,
    // A driver's job may be re-run after any number of stalls: its state is the batch's row, each commit guarded.
    maxStalledCount: 1_000,
    lockDuration: config.worker.lockDurationMs,
    stalledInterval: config.worker.stalledIntervalMs,
  });
  w.on('error', (err) => logger.error('batch driver error', { err }));
  return w;
}
