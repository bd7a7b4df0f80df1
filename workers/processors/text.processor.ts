import type { Job } from 'bullmq';
import type { TypedQuestionsJobData, TextJobData } from '../../shared/queue/job-catalog';
import { TextExecutor } from '../services/text-executor';
import { TypedQuestionsExecutor } from '../services/typed-questions-executor';
import type { WorkerDeps } from '../worker-deps';
import { JobLost } from '../../shared/queue/job-lock';

export function textProcessor(deps: WorkerDeps) {
  const executor = new TextExecutor(deps);
  const typedQuestions = new TypedQuestionsExecutor(deps);
  // Two parameters: BullMQ then makes no AbortController of its own for the job; its stop signal is ours (cancel,
  // timeout, client gone: shared/queue/generation-bus.ts JobStops, aborted from worker-pool.ts).
  return async (job: Job<TextJobData | TypedQuestionsJobData>) => {
    const timing = { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() };
    const signal = deps.stops.start(job.data.generationId);
    // Its run sends nothing more once this process has lost the job (frozen past its lock: shared/queue/job-lock.ts).
    const lock = deps.locks.get(job.id!);
    try {
      // A typed-questions job (`/v1/systemone`) carries its questions; any other job of the queue is text.
      const data = job.data;
      return await (data.apiType === 'systemone' && Array.isArray((data as TypedQuestionsJobData).questions)
        ? typedQuestions.run(data as TypedQuestionsJobData, timing, signal, lock)
        : executor.run(data as TextJobData, timing, signal, lock));
    } catch (err) {
      if (err instanceof JobLost) deps.logger.warn('a job this process stood still past its lock is run elsewhere: its run here stopped, sending nothing more', { generationId: job.data.generationId, trace_id: job.data.traceId });
      throw err;
    } finally {
      deps.stops.end(job.data.generationId, signal);
    }
  };
}
