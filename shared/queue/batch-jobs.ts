import type { Queue } from 'bullmq';
import { JOB_OPTIONS, type BatchJobData, type UpstreamBatchJobData } from './job-catalog';
import { QUEUES } from './queue-names';

/**
 * Adds a batch's driver job (queue `batches`; docs/batches.md "How a batch runs"): its id is the batch's, so adding it
 * again while it exists does nothing.
 */
export function addBatchDriver(queue: Queue, b: { id: string; organizationId: string; traceId?: string | null }): Promise<unknown> {
  const data: BatchJobData = { batchId: b.id, organizationId: b.organizationId, traceId: b.traceId ?? undefined };
  return queue.add(QUEUES.batches, data, { ...JOB_OPTIONS.batches, jobId: b.id });
}

/** Adds the job of a chunk of parked batch lines (queue `upstream_batches`): its id is the chunk's, added once. */
export function addUpstreamBatchJob(queue: Queue, u: { id: string; batchId: string; organizationId: string }, traceId?: string | null): Promise<unknown> {
  const data: UpstreamBatchJobData = { upstreamBatchId: u.id, batchId: u.batchId, organizationId: u.organizationId, traceId: traceId ?? undefined };
  return queue.add('upstream-batch', data, { ...JOB_OPTIONS.upstream_batches, jobId: u.id });
}
