"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.DEFAULT_CONCURRENCY = exports.JOB_OPTIONS = void 0;
exports.queueOfGeneration = queueOfGeneration;
const queue_names_1 = require("./queue-names");
/**
 * The queue a generation's job lives in: the one it was submitted to (`routing.queue`, written at submission),
 * else worked out from its kind for records written before the queue was remembered.
 */
function queueOfGeneration(g) {
    const remembered = g.routing?.queue;
    if (remembered)
        return remembered;
    if (g.apiType === 'embeddings')
        return queue_names_1.QUEUES.embeddings;
    if (g.apiType === 'images')
        return queue_names_1.QUEUES.image;
    if (g.apiType === 'media')
        return g.requestType === 'image' ? queue_names_1.QUEUES.image : queue_names_1.QUEUES.media;
    return queue_names_1.QUEUES.text;
}
/** Jobs by queue: attempts, back-off and retention in one table (STYLE habit 6). */
exports.JOB_OPTIONS = {
    // Provider failures are handled inside the job (fallback to the next endpoint); a job re-runs only when its
    // worker died (stalled), and settlement is idempotent, so a re-run never charges twice.
    // A finished text or embeddings job is removed at once: its outcome is the generation's record in PostgreSQL,
    // nothing reads the job afterwards (the reaper treats a missing job like a finished one; its id is the
    // generation's, never added again), and keeping the last 1,000 cost BullMQ a ZADD, an HSET and the removal of
    // the oldest job (with all its keys) in every completion script — hot-path Redis work nobody read.
    [queue_names_1.QUEUES.text]: { attempts: 1, removeOnComplete: true, removeOnFail: { age: 24 * 3600 } },
    [queue_names_1.QUEUES.embeddings]: { attempts: 1, removeOnComplete: true, removeOnFail: { age: 24 * 3600 } },
    [queue_names_1.QUEUES.image]: { attempts: 3, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
    [queue_names_1.QUEUES.media]: { attempts: 3, backoff: { type: 'exponential', delay: 2000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
    [queue_names_1.QUEUES.callbacks]: { attempts: 8, backoff: { type: 'exponential', delay: 1000 }, removeOnComplete: { count: 1000 }, removeOnFail: { age: 7 * 24 * 3600 } },
    [queue_names_1.QUEUES.maintenance]: { attempts: 3, removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } },
};
/** Default concurrency per worker process and queue; override with WORKER_CONCURRENCY_<QUEUE>. */
exports.DEFAULT_CONCURRENCY = {
    text: 128,
    embeddings: 64,
    image: 16,
    media: 16,
    callbacks: 32,
    maintenance: 1,
};
