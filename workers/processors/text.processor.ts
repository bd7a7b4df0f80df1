import type { Job } from 'bullmq';
import type { TextJobData } from '../../shared/queue/job-catalog';
import { TextExecutor } from '../services/text-executor';
import type { WorkerDeps } from '../worker-deps';

export function textProcessor(deps: WorkerDeps) {
  const executor = new TextExecutor(deps);
  return (job: Job<TextJobData>) => executor.run(job.data, { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() });
}
