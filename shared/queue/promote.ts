import { Job } from 'bullmq';

/** A Queue or a Worker: what BullMQ's `Job.fromId` reads a job through. */
type JobSource = Parameters<typeof Job.fromId>[0];

/**
 * Moves job `id` from the delayed set to its place in the queue, if it waits there: a job waiting for its next step
 * is woken now (a batch's driver, a provider batch's chunk, a job put back at its organization's cap). Best effort:
 * a job gone or no longer delayed is left alone, and nothing throws (the job then runs at its own time).
 */
export async function promoteIfDelayed(source: JobSource, id: string): Promise<void> {
  const job = await Job.fromId(source, id).catch(() => undefined);
  if (job && (await job.isDelayed().catch(() => false))) await job.promote().catch(() => undefined);
}
