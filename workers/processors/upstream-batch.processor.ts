import type { Job, Queue } from 'bullmq';
import type { UpstreamBatchJobData } from '../../shared/queue/job-catalog';
import { UpstreamBatches } from '../../shared/services/upstream-batches.service';
import { UpstreamBatchRunner } from '../services/upstream-batch-runner';
import type { WorkerDeps } from '../worker-deps';

/**
 * Queue `upstream_batches`: a chunk of batch lines at its provider's own batch API (step jobs: submit, poll, settle;
 * docs/batches.md "Provider batch APIs"). A line that falls back is enqueued on `queues` (its ordinary job); a chunk that
 * ends wakes its batch's driver on `queues.batches`.
 */
export function upstreamBatchProcessor(deps: WorkerDeps, queues: Record<'text' | 'embeddings' | 'batches', Queue>) {
  const runner = new UpstreamBatchRunner(deps, new UpstreamBatches(deps.db, deps.clock), queues);
  return (job: Job<UpstreamBatchJobData>, token?: string) => runner.run(job, token);
}
