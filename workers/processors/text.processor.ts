import type { Job } from 'bullmq';
import type { SystemoneJobData, TextJobData } from '../../shared/queue/job-catalog';
import { TextExecutor } from '../services/text-executor';
import { isSystemoneJob, SystemoneExecutor } from '../services/systemone-executor';
import type { WorkerDeps } from '../worker-deps';

export function textProcessor(deps: WorkerDeps) {
  const executor = new TextExecutor(deps);
  const systemone = new SystemoneExecutor(deps);
  // Three parameters: BullMQ then passes the job's AbortSignal (cancel, timeout, client gone; worker-pool.ts).
  return (job: Job<TextJobData | SystemoneJobData>, _token?: string, signal?: AbortSignal) => {
    const timing = { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() };
    return isSystemoneJob(job.data) ? systemone.run(job.data, timing, signal) : executor.run(job.data, timing, signal);
  };
}
