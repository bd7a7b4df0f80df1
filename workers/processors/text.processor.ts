import type { Job } from 'bullmq';
import type { SystemoneJobData, TextJobData } from '../../shared/queue/job-catalog';
import { TextExecutor } from '../services/text-executor';
import { isSystemoneJob, SystemoneExecutor } from '../services/systemone-executor';
import type { WorkerDeps } from '../worker-deps';

export function textProcessor(deps: WorkerDeps) {
  const executor = new TextExecutor(deps);
  const systemone = new SystemoneExecutor(deps);
  return (job: Job<TextJobData | SystemoneJobData>) => {
    const timing = { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() };
    return isSystemoneJob(job.data) ? systemone.run(job.data, timing) : executor.run(job.data, timing);
  };
}
