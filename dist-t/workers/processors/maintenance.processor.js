"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.DELETE_EXPIRED_FILES_EVERY_MS = exports.MAINTENANCE_JOBS = void 0;
exports.maintenanceProcessor = maintenanceProcessor;
exports.scheduleMaintenance = scheduleMaintenance;
const bullmq_1 = require("bullmq");
const job_catalog_1 = require("../../shared/queue/job-catalog");
const queue_names_1 = require("../../shared/queue/queue-names");
const reap_stuck_generations_processor_1 = require("./reap-stuck-generations.processor");
/** Job names of the `maintenance` queue. Never rename one: schedulers in Redis refer to them. */
exports.MAINTENANCE_JOBS = {
    deleteExpiredFiles: 'delete-expired-files',
    reapStuckGenerations: reap_stuck_generations_processor_1.REAP_STUCK_GENERATIONS,
};
/** How often expired files are swept (their records are hidden from the API as soon as they expire). */
exports.DELETE_EXPIRED_FILES_EVERY_MS = 15 * 60_000;
/** The `maintenance` queue's processor: one handler per job name. */
function maintenanceProcessor(deps) {
    // The reaper needs the database and the queues; a processor built with files only (tests) has no reaper.
    const reap = deps.db && deps.generations && deps.redis && deps.config ? (0, reap_stuck_generations_processor_1.stuckGenerationReaper)(deps) : undefined;
    const handlers = {
        ...(reap && { [exports.MAINTENANCE_JOBS.reapStuckGenerations]: reap }),
        [exports.MAINTENANCE_JOBS.deleteExpiredFiles]: async () => {
            const deleted = await deps.files.deleteExpired(deps.clock());
            if (deleted > 0)
                deps.logger.info('deleted expired files', { deleted });
            // The same sweep drops Idempotency-Keys past their 24 hours (docs/idempotency.md).
            if (!deps.generations)
                return { deleted };
            return { deleted, idempotencyKeys: await deps.generations.forgetExpiredIdempotencyKeys(deps.clock()) };
        },
    };
    return async (job) => {
        const handler = handlers[job.name];
        if (!handler)
            throw new bullmq_1.UnrecoverableError(`Unknown maintenance job ${job.name}`);
        return handler(job);
    };
}
/**
 * Installs the repeatable maintenance jobs (idempotent: upserting an existing scheduler only updates it).
 * Call once at worker start with the `maintenance` queue.
 */
async function scheduleMaintenance(queue, opts = {}) {
    if (queue.name !== queue_names_1.QUEUES.maintenance)
        throw new Error(`scheduleMaintenance needs the ${queue_names_1.QUEUES.maintenance} queue, got ${queue.name}`);
    const { attempts, removeOnComplete, removeOnFail } = job_catalog_1.JOB_OPTIONS[queue_names_1.QUEUES.maintenance];
    await queue.upsertJobScheduler(exports.MAINTENANCE_JOBS.deleteExpiredFiles, { every: opts.everyMs ?? exports.DELETE_EXPIRED_FILES_EVERY_MS }, { name: exports.MAINTENANCE_JOBS.deleteExpiredFiles, data: {}, opts: { attempts, removeOnComplete, removeOnFail } });
}
