import { DelayedError, type Job, type Processor } from 'bullmq';
import { runOf } from '../../shared/queue/claims';
import { classOfPriority, uncount } from '../../shared/queue/fairness';
import type { GenerationJobBase } from '../../shared/queue/job-catalog';
import { capMember, deferDelayMs, type OrgCaps } from '../../shared/queue/org-cap';
import type { WorkerDeps } from '../worker-deps';

/**
 * Where a generation job starts (docs/architecture.md "Fair queues"): a job that waited in its organization's fair
 * order (shared/queue/fairness.ts) is uncounted there on its first start, without holding the job up; a job of an
 * organization at its cap (shared/queue/org-cap.ts) is put back, before any provider is called or anything is
 * reserved or charged, and runs once one of that organization's jobs ends and hands it the slot, interactive work
 * before background work (its client, still waiting, then gets its answer as from any worker).
 */
export function fairStart(deps: WorkerDeps, caps: OrgCaps, processor: Processor, wake: (queueName: string, jobId: string) => Promise<unknown>): Processor {
  // Two parameters, as the processors it wraps: BullMQ then makes no AbortController of its own beside the one
  // JobStops keeps for the job (shared/queue/generation-bus.ts).
  return async (job: Job, token?: string) => {
    const data = job.data as Partial<GenerationJobBase>;
    const org = data.organizationId;
    // A claimed job never waited, so was never counted; a re-run (a step, a retry, a put-back) was uncounted before.
    const run = runOf(job, token);
    if (org && run.first && !run.claimed) {
      uncount(deps.redis, job.queueQualifiedName, org, job.opts.priority, true).catch((err: unknown) => deps.logger.warn('fair order not updated at a job start', { err, jobId: job.id }));
    }
    const cap = data.maxConcurrency;
    if (!org || !cap) return processor(job, token);
    const member = capMember(job.queueName, job.id!);
    const workClass = classOfPriority(job.opts.priority);
    if (!(await caps.admit(org, member, cap, workClass, job.timestamp))) {
      await job.moveToDelayed(Date.now() + deferDelayMs(job.attemptsStarted, workClass), token);
      // An ending may have handed this job its slot between the admission and the put-back, and its wake then found
      // the job not yet delayed: the job wakes itself, or it would wait out its delay while its slot lapses unused.
      if (await caps.holds(org, member).catch(() => false)) void wake(job.queueName, job.id!).catch(() => undefined);
      throw new DelayedError();
    }
    const renew = setInterval(() => void caps.renew(org, member).catch(() => undefined), Math.max(1000, caps.ttlMs / 3));
    try {
      return await processor(job, token);
    } finally {
      clearInterval(renew);
      const deferred = await caps.release(org, member, cap).catch(() => []);
      for (const p of deferred) {
        const [queueName, id] = p.split('\t');
        void wake(queueName!, id!).catch(() => undefined);
      }
    }
  };
}
