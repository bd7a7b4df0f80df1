import type { Job } from 'bullmq';
import type { MediaJobData } from '../../shared/queue/job-catalog';
import { MediaExecutor } from '../services/media-executor';
import type { WorkerDeps } from '../worker-deps';

/** Queue `image`: image generations (OpenAI images at once, hosted image models as step jobs). */
export function imageProcessor(deps: WorkerDeps) {
  const executor = new MediaExecutor(deps, deps.config.media);
  return (job: Job<MediaJobData>, token?: string) => executor.run(job, token);
}
