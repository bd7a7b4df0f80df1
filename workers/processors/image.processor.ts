import type { Job } from 'bullmq';
import type { MediaJobData } from '../../shared/queue/job-catalog';
import { MediaExecutor } from '../services/media-executor';
import type { CallbackService } from '../../shared/services/callbacks.service';
import type { WorkerDeps } from '../worker-deps';

/** Queue `image`: image generations (OpenAI images at once, hosted image models as step jobs). */
export function imageProcessor(deps: WorkerDeps, callbacks: CallbackService) {
  const executor = new MediaExecutor(deps, deps.config.media, callbacks);
  return (job: Job<MediaJobData>, token?: string) => executor.run(job, token);
}
