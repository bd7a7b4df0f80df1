import { Queue, Worker, type Processor, type WorkerOptions } from 'bullmq';
import type Redis from 'ioredis';
import { AT_ONCE_QUEUES, DEFAULT_CONCURRENCY } from '../shared/queue/job-catalog';
import { promoteIfDelayed } from '../shared/queue/promote';
import { ClaimingWorker } from './claiming-worker';
import { QUEUES, type QueueName } from '../shared/queue/queue-names';
import type { WorkerDeps } from './worker-deps';
import type { WorkerSettings } from '../shared/config/env';
import { listenForStops } from '../shared/queue/generation-bus';
import { instrumentWorker } from '../shared/metrics/metrics';
import { textProcessor } from './processors/text.processor';
import { embeddingsProcessor } from './processors/embeddings.processor';
import { maintenanceProcessor } from './processors/maintenance.processor';
import { imageProcessor } from './processors/image.processor';
import { mediaProcessor } from './processors/media.processor';
import { callbackProcessor } from './processors/callback.processor';
import { upstreamBatchProcessor } from './processors/upstream-batch.processor';
import { CallbackService } from '../shared/services/callbacks.service';
import { claimedRuns } from './services/drawn-jobs';
import { withQueueWaitSpan } from './services/job-spans';
import { fairStart } from './services/fair-start';
import { OrgCaps } from '../shared/queue/org-cap';
import { SlotShare, takeIntoHeadroom } from './services/default-share';

/** The generation queues: started in their organization's fair order, under its cap, with the default share's headroom. */
const SHARED_QUEUES: ReadonlySet<QueueName> = new Set([QUEUES.text, QUEUES.embeddings, QUEUES.image, QUEUES.media]);

/**
 * Queue → processor: the worker catalog. A generation job starts in its organization's fair order, under its cap
 * (fair-start.ts); a text or embeddings job drawn from a lease runs only where it was claimed (drawn-jobs.ts).
 */
function processors(deps: WorkerDeps, callbacks: CallbackService, fair: (p: Processor) => Processor, lines: Record<'text' | 'embeddings' | 'batches', Queue>): Partial<Record<QueueName, Processor>> {
  return {
    [QUEUES.text]: withQueueWaitSpan(deps.tracing, fair(claimedRuns(deps, textProcessor(deps) as Processor))),
    [QUEUES.embeddings]: withQueueWaitSpan(deps.tracing, fair(claimedRuns(deps, embeddingsProcessor(deps) as Processor))),
    [QUEUES.maintenance]: maintenanceProcessor(deps, callbacks) as Processor,
    [QUEUES.image]: withQueueWaitSpan(deps.tracing, fair(imageProcessor(deps, callbacks) as Processor)),
    [QUEUES.media]: withQueueWaitSpan(deps.tracing, fair(mediaProcessor(deps, callbacks) as Processor)),
    [QUEUES.callbacks]: callbackProcessor(deps) as Processor,
    [QUEUES.upstreamBatches]: upstreamBatchProcessor(deps, lines) as Processor,
  };
}

/** WORKER_CONCURRENCY_<QUEUE> (Config.worker), else the job catalog's default. */
export function concurrencyFor(queue: QueueName, settings: WorkerSettings): number {
  return settings.concurrency[queue] ?? DEFAULT_CONCURRENCY[queue];
}

/**
 * The most slots one BullMQ Worker gets. A Worker fetches jobs one at a time, each fetch a Redis round trip after
 * the previous one, so one Worker of 128 text slots picked jobs up slower than they arrived under load (11 ms
 * average wait in the queue at 32 concurrent requests); a queue's slots are spread over Workers of at most this
 * many, whose fetches run side by side (bench/rounds/02-second-round.md: +15-40 % throughput at concurrency 32).
 */
export const SLOTS_PER_WORKER = 32;

/** The concurrency of each BullMQ Worker a process runs for `queue`: its slots spread evenly, summing to them. */
export function workerSlots(queue: QueueName, settings: WorkerSettings): number[] {
  const total = concurrencyFor(queue, settings);
  const n = Math.ceil(total / SLOTS_PER_WORKER);
  return Array.from({ length: n }, (_, i) => Math.floor(total / n) + (i < total % n ? 1 : 0));
}

export interface WorkerPool {
  workers: Worker[];
  /** Resolves once the workers are ready and the stop channel (cancel, timeout, client gone) is subscribed. */
  ready(): Promise<void>;
  /** Stops taking jobs and waits for the active ones to finish (BullMQ hands unfinished ones back as stalled). */
  close(): Promise<void>;
}

/** The BullMQ Workers of each queue this process serves (workerSlots). */
export function startWorkerPool(deps: WorkerDeps, connection: Redis, opts: { queues?: QueueName[] } = {}): WorkerPool {
  // Finished media generations with a `callBackUrl` are queued here (one queue for the pool, closed with it).
  const callbacksQueue = new Queue(QUEUES.callbacks, { connection: deps.redis, prefix: deps.config.queuePrefix });
  const callbacks = new CallbackService(callbacksQueue, { backoffMs: deps.config.media.callbackBackoffMs });
  // A batch line that falls back from its provider's batch API is enqueued on its ordinary queue (closed with the pool).
  // A chunk that ends wakes its batch's driver (its job on the `batches` queue, run by the API processes).
  const lineQueues = {
    text: new Queue(QUEUES.text, { connection: deps.redis, prefix: deps.config.queuePrefix }),
    embeddings: new Queue(QUEUES.embeddings, { connection: deps.redis, prefix: deps.config.queuePrefix }),
    batches: new Queue(QUEUES.batches, { connection: deps.redis, prefix: deps.config.queuePrefix }),
  };
  const caps = new OrgCaps(deps.redis, deps.config.queuePrefix, deps.config.worker.lockDurationMs);
  // A job put back at its organization's cap is woken (moved from delayed to its place in the queue) by a worker of its queue.
  const wake = async (queueName: string, id: string) => {
    const w = workers.find((x) => x.name === queueName);
    if (w) await promoteIfDelayed(w, id);
  };
  const table = processors(deps, callbacks, (p) => fairStart(deps, caps, p, wake), lineQueues);
  const queues = (opts.queues ?? (Object.keys(table) as QueueName[])).filter((q) => table[q]);
  const shares = new Map(queues.filter((q) => SHARED_QUEUES.has(q)).map((q) => [q, new SlotShare(concurrencyFor(q, deps.config.worker), deps.config.worker.shareHeadroom)]));
  const workers = queues.flatMap((q) => workerSlots(q, deps.config.worker).map((slots) => [q, slots] as const)).map(([q, slots]) => {
    const options: WorkerOptions = {
      connection,
      prefix: deps.config.queuePrefix,
      concurrency: slots,
      // Jobs are removed on completion by their own options (job catalog); a stalled job is re-run once. A provider batch's
      // job any number of times: its state is its row, each step guarded (upstream-batch-runner.ts).
      maxStalledCount: q === QUEUES.upstreamBatches ? 1_000 : 1,
      stalledInterval: deps.config.worker.stalledIntervalMs,
      lockDuration: deps.config.worker.lockDurationMs,
    };
    // A waiting client's job for these queues may be claimed by a worker of its own process (shared/queue/claims.ts);
    // a generation queue's Workers run the jobs given its headroom (services/default-share.ts).
    const share = shares.get(q);
    const w = share || AT_ONCE_QUEUES.has(q) ? new ClaimingWorker(q, table[q]!, options) : new Worker(q, table[q]!, options);
    if (w instanceof ClaimingWorker) w.trackLocks(deps.locks);
    if (w instanceof ClaimingWorker && share) w.shareWith(share);
    if (w instanceof ClaimingWorker && AT_ONCE_QUEUES.has(q)) w.offerClaims(deps.lane.claimers);
    instrumentWorker(w, deps.metrics);
    w.on('error', (err) => deps.logger.error('worker error', { queue: q, err }));
    w.on('failed', (job, err) => deps.logger.error('job failed', { queue: q, jobId: job?.id, err }));
    return w;
  });
  // Cancel, timeout and client-gone messages reach every worker process; the one running the job aborts its stop
  // signal (deps.stops: the text and embeddings processors take theirs there), which aborts the upstream HTTP call.
  const stops = connection.duplicate();
  const subscribed = listenForStops(stops, deps.config.queuePrefix, (id, reason) => {
    if (deps.stops.abort(id, reason)) return;
    for (const w of workers) w.cancelJob(id, reason);
  }).catch((err: unknown) => deps.logger.error('stop channel not subscribed', { err }));
  const stopTaking = [...shares].filter(([, share]) => share.headroom > 0).map(([q, share]) =>
    takeIntoHeadroom({ share, workers: workers.filter((w): w is ClaimingWorker => w.name === q && w instanceof ClaimingWorker), redis: deps.redis, logger: deps.logger }),
  );
  return {
    workers,
    async ready() {
      await Promise.all(workers.map((w) => w.waitUntilReady()));
      await subscribed;
    },
    async close() {
      for (const stop of stopTaking) stop();
      await Promise.all(workers.map((w) => w.close()));
      await deps.stats.flush();
      await callbacksQueue.close();
      await Promise.all(Object.values(lineQueues).map((q) => q.close()));
      stops.disconnect();
    },
  };
}
