import { Queue, Worker, type Processor } from 'bullmq';
import type Redis from 'ioredis';
import { DEFAULT_CONCURRENCY } from '../shared/queue/job-catalog';
import { QUEUES, type QueueName } from '../shared/queue/queue-names';
import type { WorkerDeps } from './worker-deps';
import { listenForStops } from '../shared/queue/cancel-channel';
import { instrumentWorker } from '../shared/metrics/metrics';
import { textProcessor } from './processors/text.processor';
import { embeddingsProcessor } from './processors/embeddings.processor';
import { maintenanceProcessor } from './processors/maintenance.processor';
import { imageProcessor } from './processors/image.processor';
import { mediaProcessor } from './processors/media.processor';
import { callbackProcessor } from './processors/callback.processor';
import { CallbackService } from '../shared/services/callbacks.service';
import { mediaExecutorOptions } from './services/media-executor';

/** Queue → processor: the worker catalog. */
function processors(deps: WorkerDeps, callbacks: CallbackService, env: NodeJS.ProcessEnv = process.env): Partial<Record<QueueName, Processor>> {
  return {
    [QUEUES.text]: textProcessor(deps) as Processor,
    [QUEUES.embeddings]: embeddingsProcessor(deps) as Processor,
    [QUEUES.maintenance]: maintenanceProcessor(deps) as Processor,
    [QUEUES.image]: imageProcessor(deps, callbacks, env) as Processor,
    [QUEUES.media]: mediaProcessor(deps, callbacks, env) as Processor,
    [QUEUES.callbacks]: callbackProcessor(deps) as Processor,
  };
}

export function concurrencyFor(queue: QueueName, env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env[`WORKER_CONCURRENCY_${queue.toUpperCase()}`]);
  return Number.isInteger(v) && v > 0 ? v : DEFAULT_CONCURRENCY[queue];
}

/** Stalled-job timing (how soon a dead worker's jobs run again): WORKER_STALLED_INTERVAL_MS, WORKER_LOCK_DURATION_MS. */
function msFromEnv(name: string, fallback: number, env: NodeJS.ProcessEnv = process.env): number {
  const v = Number(env[name]);
  return Number.isInteger(v) && v > 0 ? v : fallback;
}

export interface WorkerPool {
  workers: Worker[];
  /** Resolves once the workers are ready and the stop channel (cancel, timeout, client gone) is subscribed. */
  ready(): Promise<void>;
  /** Stops taking jobs and waits for the active ones to finish (BullMQ hands unfinished ones back as stalled). */
  close(): Promise<void>;
}

/** One BullMQ Worker per queue this process serves. */
export function startWorkerPool(deps: WorkerDeps, connection: Redis, opts: { queues?: QueueName[]; env?: NodeJS.ProcessEnv } = {}): WorkerPool {
  // Finished media generations with a `callBackUrl` are queued here (one queue for the pool, closed with it).
  const callbacksQueue = new Queue(QUEUES.callbacks, { connection: deps.redis, prefix: deps.config.queuePrefix });
  const callbacks = new CallbackService(callbacksQueue, { backoffMs: mediaExecutorOptions(opts.env).callbackBackoffMs });
  const table = processors(deps, callbacks, opts.env);
  const queues = (opts.queues ?? (Object.keys(table) as QueueName[])).filter((q) => table[q]);
  const workers = queues.map((q) => {
    const w = new Worker(q, table[q]!, {
      connection,
      prefix: deps.config.queuePrefix,
      concurrency: concurrencyFor(q, opts.env),
      // Jobs are removed on completion by their own options (job catalog); a stalled job is re-run once.
      maxStalledCount: 1,
      stalledInterval: msFromEnv('WORKER_STALLED_INTERVAL_MS', 15_000, opts.env),
      lockDuration: msFromEnv('WORKER_LOCK_DURATION_MS', 30_000, opts.env),
    });
    instrumentWorker(w, deps.metrics);
    w.on('error', (err) => deps.logger.error('worker error', { queue: q, err }));
    w.on('failed', (job, err) => deps.logger.error('job failed', { queue: q, jobId: job?.id, err }));
    return w;
  });
  // Cancel, timeout and client-gone messages reach every worker process; the one holding the job aborts its
  // signal (BullMQ passes it to the processor), which aborts the upstream HTTP call.
  const stops = connection.duplicate();
  const subscribed = listenForStops(stops, deps.config.queuePrefix, (id, reason) => {
    for (const w of workers) w.cancelJob(id, reason);
  }).catch((err: unknown) => deps.logger.error('stop channel not subscribed', { err }));
  return {
    workers,
    async ready() {
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await subscribed;
    },
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      await callbacksQueue.close();
      stops.disconnect();
    },
  };
}
