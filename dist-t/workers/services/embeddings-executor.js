"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.EmbeddingsExecutor = void 0;
const upstream_error_1 = require("../../shared/providers/upstream-error");
const pricing_1 = require("../../shared/billing/pricing");
const generation_bus_1 = require("../../shared/queue/generation-bus");
const attempt_loop_1 = require("./attempt-loop");
/** Runs an embeddings job through the attempt loop (attempt-loop.ts), as text does. */
class EmbeddingsExecutor {
    deps;
    constructor(deps) {
        this.deps = deps;
    }
    /** `signal` aborts the upstream call when the generation is cancelled or timed out (cancel-channel.ts). */
    async run(data, timing, signal) {
        const pub = new generation_bus_1.GenerationPublisher(this.deps.redis, data.replyTo, data.generationId);
        const run = { queueTimeMs: Math.max(0, timing.startedAt - timing.enqueuedAt), startedAt: timing.startedAt };
        const out = await (0, attempt_loop_1.runAttempts)(this.deps, data, {
            operation: 'embeddings',
            call: (c) => this.embed(data, c),
            signal,
        });
        if (out.kind === 'stopped')
            return (0, attempt_loop_1.endStopped)(this.deps, pub, data.generationId, out.attempts, run, data.traceId);
        if (out.kind === 'failed')
            return (0, attempt_loop_1.endFailed)(this.deps, pub, data.generationId, (0, attempt_loop_1.failureError)(this.deps, out.attempts, out.last), out.attempts, run);
        const result = out.value;
        const { candidate, resolved } = out.call;
        const { attempts } = out;
        const usage = { inputTokens: result.usage.inputTokens, outputTokens: 0 };
        const cost = (0, pricing_1.tokenCost)(resolved.endpoint.price, usage);
        const payload = { result, model: candidate.model, endpoint: candidate.slug, provider: resolved.provider.id, cost: cost.toFixed(10), attempts };
        const outcome = await this.deps.generations.finish(data.generationId, {
            status: 'completed',
            cost,
            usage,
            result: { model: candidate.model, endpoint: candidate.slug, count: result.vectors.length, dimensions: result.vectors[0]?.length ?? 0, ...(data.keepResult && { replay: payload }) },
            model: candidate.model,
            provider: resolved.provider.id,
            finalEndpointSlug: candidate.slug,
            routing: { attempts, answeredBy: candidate.slug },
            finishReason: 'stop',
            attemptsCount: attempts.length + 1,
            latencyMs: run.queueTimeMs + (out.finished - out.started),
            queueTimeMs: run.queueTimeMs,
            generationTimeMs: out.finished - run.startedAt,
        });
        payload.cost = outcome.charged.toFixed(10); // what was charged is what the reply shows
        await pub.send(outcome.applied ? { type: 'done', payload } : { type: 'cancelled' });
    }
    /** Calls one endpoint; a reply with another number of vectors than inputs is a malformed reply (fall back). */
    async embed(data, c) {
        const embeddings = c.adapter.embeddings;
        const req = { model: c.resolved.endpoint.upstreamModel, inputs: data.inputs, dimensions: data.dimensions, user: data.user };
        const reply = await (0, attempt_loop_1.upstreamRequest)(this.deps, c, embeddings.buildRequest(req, c.resolved.provider.apiKey ?? ''), c.signal);
        const result = embeddings.parseResponse(reply.json, req);
        if (result.vectors.length !== data.inputs.length) {
            throw (0, upstream_error_1.upstreamError)({ kind: 'malformed', message: `expected ${data.inputs.length} vectors, got ${result.vectors.length}`, raw: reply.text.slice(0, 2000) });
        }
        return result;
    }
}
exports.EmbeddingsExecutor = EmbeddingsExecutor;
