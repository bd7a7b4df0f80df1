import type { Job } from 'bullmq';
import type { MediaJobData } from '../../shared/schemas/media.schema';
import { MediaExecutor, mediaExecutorOptions } from '../services/media-executor';
import type { WorkerDeps } from '../worker-deps';

/** Queue `media`: video, audio and upscale generations and media operations (step jobs). */
export function mediaProcessor(deps: WorkerDeps, env: NodeJS.ProcessEnv = process.env) {
  const executor = new MediaExecutor(deps, mediaExecutorOptions(env));
  return (job: Job<MediaJobData>, token?: string) => executor.run(job, token);
}
