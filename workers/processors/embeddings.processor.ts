import type { Job } from 'bullmq';
import type { EmbeddingsJobData } from '../../shared/queue/job-catalog';
import { EmbeddingsExecutor } from '../services/embeddings-executor';
import type { WorkerDeps } from '../worker-deps';

export function embeddingsProcessor(deps: WorkerDeps) {
  const executor = new EmbeddingsExecutor(deps);
  // Three parameters: BullMQ then passes the job's AbortSignal (cancel and timeout; worker-pool.ts).
  return (job: Job<EmbeddingsJobData>, _token?: string, signal?: AbortSignal) =>
    executor.run(job.data, { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() }, signal);
}
