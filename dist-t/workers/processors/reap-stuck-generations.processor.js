"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.REAP_STUCK_GENERATIONS = void 0;
exports.stuckGenerationReaper = stuckGenerationReaper;
exports.scheduleReaper = scheduleReaper;
const bullmq_1 = require("bullmq");
const app_error_1 = require("../../shared/errors/app-error");
const job_catalog_1 = require("../../shared/queue/job-catalog");
const queue_names_1 = require("../../shared/queue/queue-names");
/** Job name in the `maintenance` queue. Never rename it: the scheduler in Redis refers to it. */
exports.REAP_STUCK_GENERATIONS = 'reap-stuck-generations';
/** States in which a job will still run (and end its generation itself). */
const LIVE = new Set(['active', 'waiting', 'delayed', 'prioritized', 'waiting-children']);
/**
 * Fails and releases generations that nothing will ever end: still `pending`/`processing`, older than
 * `minAgeMs`, and without a live job (the job was lost with a Redis outage, failed on a database outage before
 * it could record the ending, or stalled more often than allowed). A generation whose job still runs is left
 * alone: media jobs have their own task timeout. Nothing is charged for a reaped generation.
 */
function stuckGenerationReaper(deps, opts = deps.config.reaper) {
    const queues = new Map();
    const queue = (name) => {
        let q = queues.get(name);
        if (!q)
            queues.set(name, (q = new bullmq_1.Queue(name, { connection: deps.redis, prefix: deps.config.queuePrefix })));
        return q;
    };
    return async () => {
        const before = new Date(deps.clock().getTime() - opts.minAgeMs);
        const stuck = await deps.db.generation.findMany({
            where: { status: { in: ['pending', 'processing'] }, createdAt: { lt: before } },
            select: { id: true, apiType: true, requestType: true, routing: true },
            orderBy: { createdAt: 'asc' },
            take: 500,
        });
        let reaped = 0;
        for (const g of stuck) {
            const state = await queue((0, job_catalog_1.queueOfGeneration)(g)).getJobState(g.id);
            if (LIVE.has(state))
                continue;
            const error = new app_error_1.AppError('SERVICE_UNAVAILABLE', 'The generation was interrupted before it could finish (nothing was charged): repeat the request').toStored();
            const r = await deps.generations.finish(g.id, { status: 'failed', error });
            if (r.applied) {
                reaped++;
                deps.metrics?.generationsReaped.inc();
                deps.logger.warn('reaped a generation no job will finish', { generationId: g.id, jobState: state });
            }
        }
        return { reaped };
    };
}
/** Installs the repeatable sweep (idempotent). Call at worker start with the `maintenance` queue. */
async function scheduleReaper(queue, opts) {
    const { attempts, removeOnComplete, removeOnFail } = job_catalog_1.JOB_OPTIONS[queue_names_1.QUEUES.maintenance];
    await queue.upsertJobScheduler(exports.REAP_STUCK_GENERATIONS, { every: opts.everyMs }, { name: exports.REAP_STUCK_GENERATIONS, data: {}, opts: { attempts, removeOnComplete, removeOnFail } });
}
