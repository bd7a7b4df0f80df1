import { UnrecoverableError, type Job } from 'bullmq';
import { mediaRecord } from '../../shared/formats/media.mapper';
import type { CallbackJobData } from '../../shared/queue/job-catalog';
import { callbackJobId, CallbackHostUnresolved, CallbackUrlError, postCallback } from '../../shared/services/callbacks.service';
import type { WorkerDeps } from '../worker-deps';
import { ATTR } from '../../shared/telemetry/tracing';
import { generationById } from '../../shared/db/generation-reads';

/**
 * Queue `callbacks`: POSTs the generation's media record, signed (shared/services/callbacks.service.ts): the same
 * body and `webhook-id` on every attempt, each attempt with its own `webhook-timestamp`.
 * A non-2xx reply or a network error throws, so BullMQ retries with exponential back-off (at most 8 attempts,
 * job catalog); a refused URL (private address, bad scheme) fails at once, a host that does not resolve is retried.
 */
export function callbackProcessor(deps: WorkerDeps) {
  return async (job: Job<CallbackJobData>): Promise<void> => {
    const { generationId, organizationId, url, status } = job.data;
    const [generation, org] = await Promise.all([
      generationById(deps.db, generationId, (where) => deps.db.generation.findFirst({ where })),
      deps.db.organization.findUnique({ where: { id: organizationId }, select: { callbackSecret: true } }),
    ]);
    if (!generation || !org) return;
    // Signed at the first attempt, whose time the job keeps: every retry sends the same signed body (its URLs expire
    // FILE_URL_TTL_SECONDS after the first attempt, docs/callbacks.md), however long the job waited in the queue.
    const signedAt = job.data.signedAt ?? Date.now();
    if (job.data.signedAt === undefined) await job.updateData({ ...job.data, signedAt });
    const body = JSON.stringify(mediaRecord(deps.files.withFreshUrls(generation, new Date(signedAt))));
    const span = deliverySpan(deps, job);
    let code: number;
    try {
      const delivery = { url, body, secret: org.callbackSecret, status, id: callbackJobId(generationId), sentAt: deps.clock() };
      code = await postCallback(delivery, { allowPrivate: deps.config.callbackAllowPrivate });
      span?.set({ 'http.response.status_code': code });
    } catch (e) {
      // A host that does not resolve now may resolve later: retried like a network error.
      const refused = (e instanceof CallbackUrlError && !(e instanceof CallbackHostUnresolved)) || (e as { code?: string }).code === 'ECALLBACKPRIVATE';
      span?.fail((e as Error).message, refused ? 'callback_refused' : 'callback_unreachable');
      span?.end();
      if (refused) throw new UnrecoverableError(`callback URL refused: ${(e as Error).message}`);
      throw e;
    }
    if (code < 200 || code >= 300) {
      const message = `callback receiver answered HTTP ${code}`;
      span?.fail(message, String(code));
      span?.end();
      throw new Error(message);
    }
    span?.end();
  };
}

/**
 * A delivery attempt as a client span of the generation's trace (tracing on, and the job carries its traceparent): the
 * receiver's host only (a callback URL's path or query may hold the customer's own secrets), the attempt's number.
 */
function deliverySpan(deps: WorkerDeps, job: Job<CallbackJobData>) {
  if (!deps.tracing || !job.data.traceparent) return undefined;
  let host: string | undefined;
  try {
    host = new URL(job.data.url).hostname;
  } catch {
    // a URL that does not parse is refused by postCallback; the span still records the attempt
  }
  return deps.tracing.start('switchyard.callback', job.data.traceparent, {
    kind: 'client',
    attributes: { 'http.request.method': 'POST', 'server.address': host, [ATTR.generationId]: job.data.generationId, 'switchyard.status': job.data.status, 'switchyard.attempt': job.attemptsMade + 1 },
  });
}
