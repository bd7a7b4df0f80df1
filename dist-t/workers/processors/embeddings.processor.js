"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.embeddingsProcessor = embeddingsProcessor;
const embeddings_executor_1 = require("../services/embeddings-executor");
function embeddingsProcessor(deps) {
    const executor = new embeddings_executor_1.EmbeddingsExecutor(deps);
    // Three parameters: BullMQ then passes the job's AbortSignal (cancel and timeout; worker-pool.ts).
    return (job, _token, signal) => executor.run(job.data, { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() }, signal);
}
