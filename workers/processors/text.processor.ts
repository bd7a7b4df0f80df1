import type { Job } from 'bullmq';
import type { TypedQuestionsJobData, TextJobData } from '../../shared/queue/job-catalog';
import { TextExecutor } from '../services/text-executor';
import { isTypedQuestionsJob, TypedQuestionsExecutor } from '../services/typed-questions-executor';
import type { WorkerDeps } from '../worker-deps';
import { keptEarlierPromise } from '../services/attempt-loop';

export function textProcessor(deps: WorkerDeps) {
  const executor = new TextExecutor(deps);
  const typedQuestions = new TypedQuestionsExecutor(deps);
  // Three parameters: BullMQ then passes the job's AbortSignal (cancel, timeout, client gone; worker-pool.ts).
  return async (job: Job<TextJobData | TypedQuestionsJobData>, _token?: string, signal?: AbortSignal) => {
    if (await keptEarlierPromise(deps, job)) return;
    const timing = { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() };
    return isTypedQuestionsJob(job.data) ? typedQuestions.run(job.data, timing, signal) : executor.run(job.data, timing, signal);
  };
}
