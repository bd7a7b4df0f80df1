import type { Job } from 'bullmq';
import type { EmbeddingsJobData } from '../../shared/queue/job-catalog';
import { EmbeddingsExecutor } from '../services/embeddings-executor';
import type { WorkerDeps } from '../worker-deps';

export function embeddingsProcessor(deps: WorkerDeps) {
  const executor = new EmbeddingsExecutor(deps);
  // Two parameters: BullMQ then makes no AbortController of its own for the job; its stop signal is ours (cancel and
  // timeout: shared/queue/generation-bus.ts JobStops, aborted from worker-pool.ts).
  return async (job: Job<EmbeddingsJobData>) => {
    const signal = deps.stops.start(job.data.generationId);
    try {
      await executor.run(job.data, { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() }, signal, deps.locks.get(job.id!));
    } finally {
      deps.stops.end(job.data.generationId, signal);
    }
  };
}
