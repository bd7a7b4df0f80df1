"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.textProcessor = textProcessor;
const text_executor_1 = require("../services/text-executor");
const typed_questions_executor_1 = require("../services/typed-questions-executor");
function textProcessor(deps) {
    const executor = new text_executor_1.TextExecutor(deps);
    const typedQuestions = new typed_questions_executor_1.TypedQuestionsExecutor(deps);
    // Three parameters: BullMQ then passes the job's AbortSignal (cancel, timeout, client gone; worker-pool.ts).
    return (job, _token, signal) => {
        const timing = { enqueuedAt: job.timestamp, startedAt: job.processedOn ?? Date.now() };
        return (0, typed_questions_executor_1.isTypedQuestionsJob)(job.data) ? typedQuestions.run(job.data, timing, signal) : executor.run(job.data, timing, signal);
    };
}
