import type { Processor } from 'bullmq';
import { AppError } from '../../shared/errors/app-error';
import { claimedAtEnqueue } from '../../shared/queue/claims';
import { runOf } from '../../shared/queue/claims';
import type { GenerationJobBase } from '../../shared/queue/job-catalog';
import type { WorkerDeps } from '../worker-deps';
import { endGeneration, keepPromised } from '../../shared/billing/ending';

/**
 * The processor of a text or embeddings queue. Every job first keeps a promise an earlier run of it made (a re-run
 * after a stall: its reply went out, its settlement is committed now, and no provider is called again). A job drawn
 * from a lease (`drawn`: docs/architecture.md "Submitting") runs only in the run its own process claimed it for, which
 * takes its record from the lane; any other run (its process died, or stood still past the job's lock) is an orphan:
 * its client is gone, so the generation ends failed, uncharged, with no provider call. So is a later run of a reserved
 * job claimed at enqueue for a client without an Idempotency-Key (`clientOnly`): its answer could reach only that
 * client, who waited in the process that claimed it; a keyed job is re-run, and the key's repeat gets its answer.
 */
export function claimedRuns(deps: WorkerDeps, processor: Processor): Processor {
  // Two parameters, as the processors it wraps: BullMQ then makes no AbortController of its own beside the one
  // JobStops keeps for the job (shared/queue/generation-bus.ts).
  return async (job, token) => {
    const data = job.data as GenerationJobBase;
    const run = runOf(job, token);
    // A re-run keeps what its earlier run promised, if anything: its generation may not even be recorded yet (a promise
    // made from a lease carries its record), and no provider is called again.
    if (!run.first && (await keepPromised(deps, data))) return;
    if (!data.drawn) {
      // A re-run (not the claim's run, and not its first start) of a client-only job asks whether a claim started it.
      if (data.clientOnly && !run.first && !run.claimed && (await claimedAtEnqueue(deps.redis, job))) return endOrphaned(deps, data);
      return processor(job, token);
    }
    const record = deps.lane.take(data.generationId);
    if (!record) return endOrphaned(deps, data);
    try {
      return await processor(job, token);
    } finally {
      deps.lane.drop(data.generationId, record);
    }
  };
}

async function endOrphaned(deps: WorkerDeps, data: GenerationJobBase): Promise<void> {
  if (await keepPromised(deps, data)) return;
  const error = new AppError('SERVICE_UNAVAILABLE', 'The process that accepted this request stopped before it answered: repeat the request').toStored();
  // Nothing told when it had ended before that process stopped.
  const logged = async (s: { applied: boolean }) => {
    if (s.applied) deps.logger.warn('a job claimed for a client without an Idempotency-Key ran outside the run its process claimed it for (that process stopped): ended, uncharged', { generationId: data.generationId, trace_id: data.traceId, drawn: data.drawn === true });
  };
  await endGeneration(deps, null, { generationId: data.generationId, organizationId: data.organizationId, replyTo: data.replyTo }, { kind: 'end', finish: { status: 'failed', error }, committed: logged });
}
