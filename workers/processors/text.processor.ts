import type { Job } from 'bullmq';
import type { TypedQuestionsJobData, TextJobData } from '../../shared/queue/job-catalog';
import { TextExecutor } from '../services/text-executor';
import { isTypedQuestionsJob, TypedQuestionsExecutor } from '../services/typed-questions-executor';
import type { WorkerDeps } from '../worker-deps';

export function textProcessor(deps: WorkerDeps) {
  const executor = new TextExecutor(deps);
  const typedQuestions = new TypedQuestionsExecutor(deps);
  // Two parameters: BullMQ then makes no AbortSignal for the job; its stop signal is ours (cancel, timeout, client
  // gone: shared/queue/cancel-channel.ts JobStops, aborted from worker-pool.ts).
  return async (job: Job<TextJobData | TypedQuestionsJobData>) => {
    const timing = { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() };
    const signal = deps.stops.start(job.data.generationId);
    try {
      return await (isTypedQuestionsJob(job.data) ? typedQuestions.run(job.data, timing, signal) : executor.run(job.data, timing, signal));
    } finally {
      deps.stops.end(job.data.generationId, signal);
    }
  };
}
