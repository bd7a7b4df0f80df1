import type { Processor } from 'bullmq';
import { AppError } from '../../shared/errors/app-error';
import { GenerationPublisher } from '../../shared/queue/generation-bus';
import type { GenerationJobBase } from '../../shared/queue/job-catalog';
import type { Grant } from '../../shared/queue/grants';
import { RUNNING } from '../../shared/services/generation.service';
import type { WorkerDeps } from '../worker-deps';
import { keptEarlierPromise } from './attempt-loop';

/**
 * The processor of a queue of AT_ONCE_QUEUES (shared/queue/job-catalog.ts), for jobs enqueued while their reservation committed (`awaitsGrant`:
 * shared/queue/grants.ts): nothing runs before the outcome is known. Granted: the job runs with the amount reserved
 * (and the job as built for it). Refused, or its generation already ended: there is nothing to run. Orphaned (the API
 * process that reserved it died before telling the outcome): a promise its run made is kept, else the generation
 * ends failed and its reservation is released. Nothing reserved within the wait: nothing will run. Every job of those
 * queues, awaiting a grant or not, first keeps a promise an earlier run of it made (a re-run after a stall).
 */
export function afterGrant(deps: WorkerDeps, processor: Processor): Processor {
  // Two parameters, as the processors it wraps: BullMQ then makes no AbortSignal per job (shared/queue/cancel-channel.ts JobStops).
  return async (job, token) => {
    const data = job.data as GenerationJobBase;
    // A re-run after a stall whose first run promised its reply: kept before anything else, instead of calling the
    // provider again (its generation may not even be recorded yet: a promise made from a lease carries its record).
    if (await keptEarlierPromise(deps, job)) return;
    if (!data.awaitsGrant) return processor(job, token);
    const grant: Grant = await deps.grants.wait(data.generationId, async (id) => {
      const g = await deps.generations.state(id);
      return g ? (RUNNING.has(g.status) ? 'running' : 'ended') : null;
    });
    try {
      if ('granted' in grant) {
        const { awaitsGrant: _, ...rest } = data;
        job.data = grant.job ?? { ...rest, reserved: grant.granted };
        return await processor(job, token);
      }
      if ('orphaned' in grant) return await endOrphaned(deps, data);
      if ('timedOut' in grant) deps.logger.warn('no reservation arrived for a job enqueued with it: not run', { generationId: data.generationId, trace_id: data.traceId });
    } finally {
      deps.grants.forget(data.generationId, grant);
    }
  };
}

async function endOrphaned(deps: WorkerDeps, data: GenerationJobBase): Promise<void> {
  if (await deps.settlements.keep(data.organizationId, data.generationId, deps.generations)) return;
  deps.logger.warn('the API process that reserved this generation stopped before telling its worker: ended, uncharged', { generationId: data.generationId, trace_id: data.traceId });
  const error = new AppError('SERVICE_UNAVAILABLE', 'The process that accepted this request stopped before it ran: repeat the request').toStored();
  const outcome = await deps.generations.finish(data.generationId, { status: 'failed', error });
  if (outcome.applied) await new GenerationPublisher(deps.redis, data.replyTo, data.generationId).send({ type: 'failed', error });
}
