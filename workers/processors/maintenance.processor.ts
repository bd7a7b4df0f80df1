import { UnrecoverableError, type Job, type Queue } from 'bullmq';
import { JOB_OPTIONS } from '../../shared/queue/job-catalog';
import { QUEUES } from '../../shared/queue/queue-names';
import type { WorkerDeps } from '../worker-deps';
import type { CallbackService } from '../../shared/services/callbacks.service';
import { BatchFiles } from '../../shared/services/batch-files.service';
import { REAP_STUCK_GENERATIONS, stuckGenerationReaper } from './reap-stuck-generations.processor';
import { batchResumer, RESUME_BATCHES } from './resume-batches.processor';
import { HistoryPartitions } from '../../shared/db/partitions';
import { forgetEndedSessions } from '../../shared/services/sessions.service';

/** Job names of the `maintenance` queue. Never rename one: schedulers in Redis refer to them. */
export const MAINTENANCE_JOBS = {
  deleteExpiredFiles: 'delete-expired-files',
  reapStuckGenerations: REAP_STUCK_GENERATIONS,
  resumeBatches: RESUME_BATCHES,
  keepPartitions: 'keep-partitions',
} as const;

/** How often expired files are swept (their records are hidden from the API as soon as they expire). */
export const DELETE_EXPIRED_FILES_EVERY_MS = 15 * 60_000;
/** How often the coming months' partitions are made and the months past retention dropped (shared/db/partitions.ts). */
export const KEEP_PARTITIONS_EVERY_MS = 60 * 60_000;

/** The `maintenance` queue's processor: one handler per job name. */
export function maintenanceProcessor(deps: Pick<WorkerDeps, 'files' | 'clock' | 'logger'> & Partial<WorkerDeps>, callbacks?: CallbackService) {
  // The reaper needs the database and the queues; a processor built with files only (tests) has no reaper.
  const reap = deps.db && deps.generations && deps.redis && deps.config ? stuckGenerationReaper(deps as WorkerDeps, deps.config.reaper, callbacks) : undefined;
  // The batch jobs a Redis that came back empty lost, added again from what PostgreSQL holds (docs/batches.md).
  const resume = deps.db && deps.redis && deps.config ? batchResumer(deps as WorkerDeps) : undefined;
  // Batch files past BATCH_FILE_RETENTION_DAYS (docs/batches.md), in the file storage media files use.
  const batchFiles = deps.db && deps.config ? new BatchFiles(deps.db, deps.files.store, deps.clock, deps.config.batches.fileRetentionDays) : undefined;
  // History's and the ledger's monthly partitions: made ahead, and generations' months past HISTORY_RETENTION_DAYS dropped.
  const partitions = deps.db && deps.config ? new HistoryPartitions(deps.db, deps.clock, deps.config.history) : undefined;
  const handlers: Record<string, (job: Job) => Promise<unknown>> = {
    ...(partitions && {
      [MAINTENANCE_JOBS.keepPartitions]: async () => {
        const kept = await partitions.keep();
        if (kept.created.length || kept.retired.length) deps.logger.info('kept the monthly partitions', { ...kept });
        return kept;
      },
    }),
    ...(reap && { [MAINTENANCE_JOBS.reapStuckGenerations]: reap }),
    ...(resume && { [MAINTENANCE_JOBS.resumeBatches]: resume }),
    [MAINTENANCE_JOBS.deleteExpiredFiles]: async () => {
      const deleted = await deps.files.deleteExpired(deps.clock());
      if (deleted > 0) deps.logger.info('deleted expired files', { deleted });
      // Expired batch files, and the objects of batch parts never committed (a run killed between its write and its commit).
      const batch = batchFiles && { batchFiles: await batchFiles.deleteExpired(deps.clock()), uncommittedParts: await batchFiles.deleteUncommittedParts(deps.clock()) };
      if (batch?.batchFiles) deps.logger.info('deleted expired batch files', { deleted: batch.batchFiles });
      if (batch?.uncommittedParts) deps.logger.info('deleted uncommitted batch parts', { deleted: batch.uncommittedParts });
      // The same sweep drops sessions and sign-in links that are over (docs/console.md)...
      const sessions = deps.db && (await forgetEndedSessions(deps.db, deps.clock()));
      if (sessions && (sessions.sessions || sessions.links)) deps.logger.info('deleted ended sessions and links', { ...sessions });
      // ...and Idempotency-Keys past their 24 hours (docs/idempotency.md).
      if (!deps.generations) return { deleted, ...batch, ...(sessions && { sessions }) };
      return { deleted, ...batch, ...(sessions && { sessions }), idempotencyKeys: await deps.generations.forgetExpiredIdempotencyKeys(deps.clock()) };
    },
  };
  return async (job: Job) => {
    const handler = handlers[job.name];
    if (!handler) throw new UnrecoverableError(`Unknown maintenance job ${job.name}`);
    return handler(job);
  };
}

/**
 * Installs the repeatable maintenance jobs (idempotent: upserting an existing scheduler only updates it).
 * Call once at worker start with the `maintenance` queue.
 */
export async function scheduleMaintenance(queue: Queue, opts: { everyMs?: number } = {}): Promise<void> {
  if (queue.name !== QUEUES.maintenance) throw new Error(`scheduleMaintenance needs the ${QUEUES.maintenance} queue, got ${queue.name}`);
  const { attempts, removeOnComplete, removeOnFail } = JOB_OPTIONS[QUEUES.maintenance];
  await queue.upsertJobScheduler(
    MAINTENANCE_JOBS.deleteExpiredFiles,
    { every: opts.everyMs ?? DELETE_EXPIRED_FILES_EVERY_MS },
    { name: MAINTENANCE_JOBS.deleteExpiredFiles, data: {}, opts: { attempts, removeOnComplete, removeOnFail } },
  );
  await queue.upsertJobScheduler(
    MAINTENANCE_JOBS.keepPartitions,
    { every: KEEP_PARTITIONS_EVERY_MS },
    { name: MAINTENANCE_JOBS.keepPartitions, data: {}, opts: { attempts, removeOnComplete, removeOnFail } },
  );
}
