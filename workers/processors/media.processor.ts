import type { Job } from 'bullmq';
import type { MediaJobData } from '../../shared/schemas/media.schema';
import { MediaExecutor, mediaExecutorOptions } from '../services/media-executor';
import type { CallbackService } from '../../shared/services/callbacks.service';
import type { WorkerDeps } from '../worker-deps';

/** Queue `media`: video, audio and upscale generations and media operations (step jobs). */
export function mediaProcessor(deps: WorkerDeps, callbacks: CallbackService, env: NodeJS.ProcessEnv = process.env) {
  const executor = new MediaExecutor(deps, mediaExecutorOptions(env), callbacks);
  return (job: Job<MediaJobData>, token?: string) => executor.run(job, token);
}
