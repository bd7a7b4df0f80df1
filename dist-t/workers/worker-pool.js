"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.concurrencyFor = concurrencyFor;
exports.startWorkerPool = startWorkerPool;
const bullmq_1 = require("bullmq");
const job_catalog_1 = require("../shared/queue/job-catalog");
const queue_names_1 = require("../shared/queue/queue-names");
const cancel_channel_1 = require("../shared/queue/cancel-channel");
const metrics_1 = require("../shared/metrics/metrics");
const text_processor_1 = require("./processors/text.processor");
const embeddings_processor_1 = require("./processors/embeddings.processor");
const maintenance_processor_1 = require("./processors/maintenance.processor");
const image_processor_1 = require("./processors/image.processor");
const media_processor_1 = require("./processors/media.processor");
const callback_processor_1 = require("./processors/callback.processor");
const callbacks_service_1 = require("../shared/services/callbacks.service");
/** Queue → processor: the worker catalog. */
function processors(deps, callbacks) {
    return {
        [queue_names_1.QUEUES.text]: (0, text_processor_1.textProcessor)(deps),
        [queue_names_1.QUEUES.embeddings]: (0, embeddings_processor_1.embeddingsProcessor)(deps),
        [queue_names_1.QUEUES.maintenance]: (0, maintenance_processor_1.maintenanceProcessor)(deps),
        [queue_names_1.QUEUES.image]: (0, image_processor_1.imageProcessor)(deps, callbacks),
        [queue_names_1.QUEUES.media]: (0, media_processor_1.mediaProcessor)(deps, callbacks),
        [queue_names_1.QUEUES.callbacks]: (0, callback_processor_1.callbackProcessor)(deps),
    };
}
/** WORKER_CONCURRENCY_<QUEUE> (Config.worker), else the job catalog's default. */
function concurrencyFor(queue, settings) {
    return settings.concurrency[queue] ?? job_catalog_1.DEFAULT_CONCURRENCY[queue];
}
/** One BullMQ Worker per queue this process serves. */
function startWorkerPool(deps, connection, opts = {}) {
    // Finished media generations with a `callBackUrl` are queued here (one queue for the pool, closed with it).
    const callbacksQueue = new bullmq_1.Queue(queue_names_1.QUEUES.callbacks, { connection: deps.redis, prefix: deps.config.queuePrefix });
    const callbacks = new callbacks_service_1.CallbackService(callbacksQueue, { backoffMs: deps.config.media.callbackBackoffMs });
    const table = processors(deps, callbacks);
    const queues = (opts.queues ?? Object.keys(table)).filter((q) => table[q]);
    const workers = queues.flatMap((q) => Array.from({length: q==='text' ? Number(process.env.TEXT_WORKERS||1) : 1}, () => q)).map((q) => {
        const w = new bullmq_1.Worker(q, table[q], {
            connection,
            prefix: deps.config.queuePrefix,
            concurrency: q==='text' ? Math.ceil(concurrencyFor(q, deps.config.worker)/Number(process.env.TEXT_WORKERS||1)) : concurrencyFor(q, deps.config.worker),
            // Jobs are removed on completion by their own options (job catalog); a stalled job is re-run once.
            maxStalledCount: 1,
            stalledInterval: deps.config.worker.stalledIntervalMs,
            lockDuration: deps.config.worker.lockDurationMs,
        });
        (0, metrics_1.instrumentWorker)(w, deps.metrics);
        w.on('error', (err) => deps.logger.error('worker error', { queue: q, err }));
        w.on('failed', (job, err) => deps.logger.error('job failed', { queue: q, jobId: job?.id, err }));
        return w;
    });
    // Cancel, timeout and client-gone messages reach every worker process; the one holding the job aborts its
    // signal (BullMQ passes it to the processor), which aborts the upstream HTTP call.
    const stops = connection.duplicate();
    const subscribed = (0, cancel_channel_1.listenForStops)(stops, deps.config.queuePrefix, (id, reason) => {
        for (const w of workers)
            w.cancelJob(id, reason);
    }).catch((err) => deps.logger.error('stop channel not subscribed', { err }));
    return {
        workers,
        async ready() {
            await Promise.all(workers.map((w) => w.waitUntilReady()));
            await subscribed;
        },
        async close() {
            await Promise.all(workers.map((w) => w.close()));
            await deps.stats.flush();
            await callbacksQueue.close();
            stops.disconnect();
        },
    };
}
