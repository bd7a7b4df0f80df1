import type { Job } from 'bullmq';
import type { EmbeddingsJobData } from '../../shared/queue/job-catalog';
import { EmbeddingsExecutor } from '../services/embeddings-executor';
import { keptEarlierPromise } from '../services/attempt-loop';
import type { WorkerDeps } from '../worker-deps';

export function embeddingsProcessor(deps: WorkerDeps) {
  const executor = new EmbeddingsExecutor(deps);
  // Three parameters: BullMQ then passes the job's AbortSignal (cancel and timeout; worker-pool.ts).
  return async (job: Job<EmbeddingsJobData>, _token?: string, signal?: AbortSignal) => {
    if (await keptEarlierPromise(deps, job)) return;
    await executor.run(job.data, { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() }, signal);
  };
}
