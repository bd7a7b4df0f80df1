import { UnrecoverableError, type Job } from 'bullmq';
import { mediaRecord } from '../../shared/formats/media.mapper';
import type { CallbackJobData } from '../../shared/schemas/media.schema';
import { CallbackUrlError, postCallback } from '../../shared/services/callbacks.service';
import type { WorkerDeps } from '../worker-deps';

/**
 * Queue `callbacks`: POSTs the generation's media record, signed (shared/services/callbacks.service.ts).
 * A non-2xx reply or a network error throws, so BullMQ retries with exponential back-off (at most 8 attempts,
 * job catalog); a refused URL (private address, bad scheme) fails at once.
 */
export function callbackProcessor(deps: WorkerDeps) {
  return async (job: Job<CallbackJobData>): Promise<void> => {
    const { generationId, organizationId, url, status } = job.data;
    const [generation, org] = await Promise.all([
      deps.db.generation.findUnique({ where: { id: generationId } }),
      deps.db.organization.findUnique({ where: { id: organizationId }, select: { callbackSecret: true } }),
    ]);
    if (!generation || !org) return;
    const body = JSON.stringify(mediaRecord(deps.files.withFreshUrls(generation)));
    let code: number;
    try {
      code = await postCallback({ url, body, secret: org.callbackSecret, status }, { allowPrivate: deps.config.callbackAllowPrivate });
    } catch (e) {
      const refused = e instanceof CallbackUrlError || (e as { code?: string }).code === 'ECALLBACKPRIVATE';
      if (refused) throw new UnrecoverableError(`callback URL refused: ${(e as Error).message}`);
      throw e;
    }
    if (code < 200 || code >= 300) throw new Error(`callback receiver answered HTTP ${code}`);
  };
}
