"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.TypedQuestionsExecutor = void 0;
exports.isTypedQuestionsJob = isTypedQuestionsJob;
const upstream_error_1 = require("../../shared/providers/upstream-error");
const pricing_1 = require("../../shared/billing/pricing");
const money_1 = require("../../shared/billing/money");
const format_utils_1 = require("../../shared/formats/format-utils");
const generation_bus_1 = require("../../shared/queue/generation-bus");
const typed_questions_mapper_1 = require("../../shared/formats/typed-questions.mapper");
const attempt_loop_1 = require("./attempt-loop");
function isTypedQuestionsJob(data) {
    return data.apiType === 'systemone' && Array.isArray(data.questions);
}
const noLogprobs = (message) => new upstream_error_1.UpstreamError({ reason: 'malformed_reply', message, fallback: true });
/**
 * Runs a typed-question job: every question concurrently, each trying the planned endpoints in order until one
 * returns log-probabilities that cover an allowed answer token (a reply without them is a failed attempt, so a
 * provider without log-probabilities is skipped). The generation settles once, with the summed cost, and
 * fails as a whole (charging nothing) when any question stays unanswered.
 */
class TypedQuestionsExecutor {
    deps;
    constructor(deps) {
        this.deps = deps;
    }
    /** `signal` aborts every question's upstream call when the generation is cancelled or timed out. */
    async run(data, timing, signal) {
        const pub = new generation_bus_1.GenerationPublisher(this.deps.redis, data.replyTo, data.generationId);
        const run = { queueTimeMs: Math.max(0, timing.startedAt - timing.enqueuedAt), startedAt: timing.startedAt };
        const { queueTimeMs } = run;
        const attempts = [];
        const outcomes = await Promise.all(data.questions.map((q) => this.answer(data, q, attempts, signal)));
        const generationTimeMs = Math.max(0, this.deps.clock().getTime() - timing.startedAt);
        // Cancelled or timed out: nobody receives the answers, the generation ends cancelled and uncharged.
        if (signal?.aborted)
            return (0, attempt_loop_1.endStopped)(this.deps, pub, data.generationId, attempts, run, data.traceId);
        const answered = outcomes.filter((o) => !('fatal' in o));
        if (answered.length < outcomes.length) {
            // The failure that ended a question's loop (a 400: the same input fails everywhere), if any did.
            const fatal = outcomes.map((o) => ('fatal' in o ? o.fatal : undefined)).find((f) => f !== undefined);
            return (0, attempt_loop_1.endFailed)(this.deps, pub, data.generationId, (0, attempt_loop_1.failureError)(this.deps, attempts, fatal), attempts, run);
        }
        const usage = { inputTokens: 0, outputTokens: 0 };
        let cost = money_1.ZERO;
        for (const a of answered) {
            usage.inputTokens += a.usage.inputTokens;
            usage.outputTokens += a.usage.outputTokens;
            cost = cost.plus(a.cost);
        }
        const main = mainEndpoint(answered, data.candidates);
        const answers = Object.fromEntries(data.questions.map((q, i) => [q.name, answered[i].answer]));
        const payload = {
            model: main.model,
            answers,
            usage,
            cost: cost.toFixed(10),
            provider: main.provider,
            endpoint: main.slug,
            answeredBy: Object.fromEntries(data.questions.map((q, i) => [q.name, answered[i].slug])),
            attempts,
        };
        const candidate = data.candidates.find((c) => c.slug === main.slug);
        const outcome = await this.deps.generations.finish(data.generationId, {
            status: 'completed',
            cost,
            result: payload,
            usage,
            model: candidate?.model,
            provider: main.provider,
            finalEndpointSlug: main.slug,
            routing: { attempts, answeredBy: payload.answeredBy },
            finishReason: 'stop',
            // Every upstream call: one per question plus the failed ones.
            attemptsCount: answered.length + attempts.length,
            latencyMs: queueTimeMs + generationTimeMs,
            queueTimeMs,
            generationTimeMs,
        });
        payload.cost = outcome.charged.toFixed(10); // what was charged is what the reply shows
        await pub.send(outcome.applied ? { type: 'done', payload } : { type: 'cancelled' });
    }
    /** One question through the attempt loop: the first endpoint whose log-probabilities give an answer. */
    async answer(data, q, attempts, signal) {
        const scheme = (0, typed_questions_mapper_1.schemeOf)(q.type, q.labels);
        const out = await (0, attempt_loop_1.runAttempts)(this.deps, data, {
            operation: 'text',
            signal,
            attempts,
            question: q.name,
            call: async (c) => {
                const text = c.adapter.text;
                const req = (0, format_utils_1.requestWithout)(q.request, c.resolved.endpoint.upstreamModel, c.candidate.dropParams);
                const spec = text.buildRequest(req, c.resolved.provider.apiKey ?? '', { defaultMaxOutputTokens: c.resolved.endpoint.maxOutputTokens });
                // Per-provider concurrency caps apply to each question's call (32 questions are 32 upstream calls).
                const result = text.parseResponse((await (0, attempt_loop_1.upstreamRequest)(this.deps, c, spec, c.signal)).json);
                if (!result.logprobs?.length)
                    throw noLogprobs('the reply carries no log-probabilities');
                const answer = (0, typed_questions_mapper_1.readAnswer)(scheme, result.logprobs);
                if (!answer)
                    throw noLogprobs(`none of the answer tokens (${scheme.tokens.join(', ')}) is among the top log-probabilities`);
                return {
                    answer,
                    usage: result.usage,
                    cost: (0, pricing_1.tokenCost)(c.resolved.endpoint.price, result.usage),
                    slug: c.candidate.slug,
                    provider: c.resolved.provider.id,
                    model: result.modelVersion ?? c.candidate.model,
                };
            },
        });
        if (out.kind === 'answered')
            return out.value;
        return { fatal: out.kind === 'failed' && out.last && !out.last.fallback ? out.last : undefined };
    }
}
exports.TypedQuestionsExecutor = TypedQuestionsExecutor;
/** The endpoint that answered the most questions; on a tie the earlier one in plan order. */
function mainEndpoint(answered, candidates) {
    const count = new Map();
    for (const a of answered)
        count.set(a.slug, (count.get(a.slug) ?? 0) + 1);
    const rank = (slug) => candidates.findIndex((c) => c.slug === slug);
    return answered.reduce((best, a) => {
        const d = (count.get(a.slug) ?? 0) - (count.get(best.slug) ?? 0);
        return d > 0 || (d === 0 && rank(a.slug) < rank(best.slug)) ? a : best;
    });
}
