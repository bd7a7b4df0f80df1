import { Queue } from 'bullmq';
import { addBatchDriver, addUpstreamBatchJob } from '../../shared/queue/batch-jobs';
import { JOB_OPTIONS } from '../../shared/queue/job-catalog';
import { QUEUES } from '../../shared/queue/queue-names';
import type { ReaperSettings } from '../../shared/config/env';
import { BATCH_NOT_ENDED } from '../../shared/services/batch-files.service';
import type { WorkerDeps } from '../worker-deps';

/** Job name in the `maintenance` queue. Never rename it: the scheduler in Redis refers to it. */
export const RESUME_BATCHES = 'resume-batches';

/** The statuses of a chunk of parked lines whose job has work left (`done`: its lines were ended). */
const CHUNK_NOT_DONE = ['new', 'submitting', 'running'];

/** Rows read at once. */
const PAGE = 500;

/** A job's states in which it has ended: a row that has not needs it run again. */
const ENDED = new Set(['completed', 'failed']);

/**
 * Re-creates the batch jobs that PostgreSQL says must exist (docs/batches.md "Crash safety"): the driver's job of every
 * batch that has not ended, and the job of every chunk of lines at a provider's batch API that is not done, where Redis
 * holds none that will run. A Redis that came back without its data (restarted without its append-only file, or
 * flushed) lost them, and nothing else adds them again: the batch never ended, its lines' money stayed reserved
 * (issue 38 item 1). A job that ended while its row has not (its attempts spent through an outage) is replaced too.
 * The lines' own jobs lost with it are the reaper's (failed 503, released), and the driver orders them again (a
 * transient failure). Adding is idempotent (a job's id is its row's), so every worker process may run this at once.
 * How many jobs it added.
 */
export function batchResumer(deps: Pick<WorkerDeps, 'db' | 'redis' | 'config' | 'logger'>) {
  const queue = (name: string) => new Queue(name, { connection: deps.redis, prefix: deps.config.queuePrefix });
  const drivers = queue(QUEUES.batches);
  const chunks = queue(QUEUES.upstreamBatches);

  /** Whether `id` needs its job added: none in Redis, or one that ended (removed first). */
  const missing = async (q: Queue, id: string): Promise<boolean> => {
    const state = await q.getJobState(id);
    if (state === 'unknown') return true;
    if (!ENDED.has(state)) return false;
    await q.remove(id);
    return true;
  };

  return async (): Promise<{ drivers: number; chunks: number }> => {
    const added = { drivers: 0, chunks: 0 };
    for (let after = ''; ; ) {
      const page = await deps.db.batch.findMany({ where: { status: { in: BATCH_NOT_ENDED }, id: { gt: after } }, orderBy: { id: 'asc' }, take: PAGE, select: { id: true, organizationId: true, traceId: true } });
      for (const b of page) {
        if (!(await missing(drivers, b.id))) continue;
        await addBatchDriver(drivers, b);
        added.drivers++;
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]!.id;
    }
    for (let after = ''; ; ) {
      const page = await deps.db.upstreamBatch.findMany({ where: { status: { in: CHUNK_NOT_DONE }, id: { gt: after } }, orderBy: { id: 'asc' }, take: PAGE, select: { id: true, batchId: true, organizationId: true } });
      for (const u of page) {
        if (!(await missing(chunks, u.id))) continue;
        await addUpstreamBatchJob(chunks, u);
        added.chunks++;
      }
      if (page.length < PAGE) break;
      after = page[page.length - 1]!.id;
    }
    if (added.drivers + added.chunks > 0) deps.logger.warn('batch jobs missing in Redis (it came back without its data?): added again', added);
    return added;
  };
}

/** Installs the repeatable job (idempotent), every REAPER_EVERY_MS as the reaper. */
export async function scheduleBatchResumer(queue: Queue, opts: ReaperSettings): Promise<void> {
  const { attempts, removeOnComplete, removeOnFail } = JOB_OPTIONS[QUEUES.maintenance];
  await queue.upsertJobScheduler(RESUME_BATCHES, { every: opts.everyMs }, { name: RESUME_BATCHES, data: {}, opts: { attempts, removeOnComplete, removeOnFail } });
}
