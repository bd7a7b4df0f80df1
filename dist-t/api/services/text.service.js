"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.TextService = void 0;
exports.textRouting = textRouting;
const app_error_1 = require("../../shared/errors/app-error");
const responses_schema_1 = require("../../shared/schemas/responses.schema");
const api_keys_1 = require("../../shared/auth/api-keys");
const provider_types_1 = require("../../shared/providers/provider.types");
const pricing_1 = require("../../shared/billing/pricing");
const queue_names_1 = require("../../shared/queue/queue-names");
const text_replies_1 = require("./text-replies");
/** The least output a text request may be shrunk to when the balance does not cover its full bound. */
const MIN_OUTPUT_TOKENS = 16;
/** The routing fields chat completions and responses share: model or models, provider preferences, stickiness, plugins. */
function textRouting(body) {
    return { model: body.model, models: body.models, provider: body.provider, stickiness: body.prompt_cache_key ?? body.session_id ?? undefined, plugins: body.plugins };
}
/**
 * Text generations up to the queue: route, bound the cost, reserve (shrinking max_output_tokens to what the
 * balance allows), record, enqueue (decisions.md sections 4-6).
 */
class TextService {
    d;
    constructor(d) {
        this.d = d;
    }
    async submit(s) {
        const route = await this.d.planner.plan({
            principal: s.principal,
            model: s.model,
            models: s.models,
            provider: s.provider,
            requestedParameters: s.requestedParameters,
            modelType: 'chat',
            requireCapabilities: s.requireCapabilities,
            stickiness: s.stickiness,
        });
        const request = { ...s.request };
        // A limit above what the model can produce is refused (not silently lowered): the catalog's maxOutputTokens of
        // the most generous candidate endpoint, or the ceiling for an endpoint that does not say.
        const modelLimit = Math.max(...route.endpoints.map((e) => e.maxOutputTokens ?? responses_schema_1.OUTPUT_TOKENS_CEILING));
        if (request.maxOutputTokens !== undefined && request.maxOutputTokens > modelLimit) {
            const field = s.outputLimitField ?? 'max_output_tokens';
            throw app_error_1.AppError.validation([{ path: `/${field}`, message: `must be <= ${modelLimit} (the model's output limit)` }], `${field} ${request.maxOutputTokens} is above the output limit of ${route.primary.id}: at most ${modelLimit}`);
        }
        if (route.spec.reasoningEffort)
            request.reasoning = { ...request.reasoning, effort: route.spec.reasoningEffort };
        const warnings = [...(s.warnings ?? []), ...route.plan.warnings];
        const inputTokens = (0, pricing_1.estimateInputTokens)(request);
        const outputFor = (max) => Math.min(request.maxOutputTokens ?? Number.MAX_SAFE_INTEGER, max ?? provider_types_1.DEFAULT_MAX_OUTPUT_TOKENS);
        const bound = (0, pricing_1.maxBound)(route.endpoints, (e) => (0, pricing_1.textBound)(e.price, inputTokens, outputFor(e.maxOutputTokens)));
        const minimum = (0, pricing_1.maxBound)(route.endpoints, (e) => (0, pricing_1.textBound)(e.price, inputTokens, Math.min(MIN_OUTPUT_TOKENS, outputFor(e.maxOutputTokens))));
        const submission = await this.d.gateway.order({
            queue: queue_names_1.QUEUES.text,
            id: s.id ?? (0, api_keys_1.newId)('gen'),
            caller: { principal: s.principal, traceId: s.traceId, idempotency: s.idempotency },
            requestType: 'chat',
            apiType: s.apiType,
            mode: s.mode,
            primary: route.primary,
            request: s.record,
            candidates: route.candidates,
            dropped: route.plan.dropped,
            warnings,
            previousResponseId: s.previousResponseId,
            bound,
            minimum,
            job: (granted) => {
                if (granted.lessThan(bound)) {
                    const fits = (0, pricing_1.outputTokensFor)(granted, route.endpoints, inputTokens);
                    request.maxOutputTokens = Math.max(1, Math.min(fits, outputFor()));
                    warnings.push(`max_output_tokens was lowered to ${request.maxOutputTokens} to fit the available balance`);
                }
                return { stickyKey: route.stickyKey, apiType: s.apiType, mode: s.mode, request, plugins: s.plugins?.length ? s.plugins : undefined, ...(s.store === false && { store: false }) };
            },
            forget: s.store === false,
        });
        return { submission, route, request, warnings };
    }
    /**
     * The reply of a synchronous text generation (408 past SYNC_WAIT_MS: text-replies.ts awaitText). A reply lost in a
     * Redis reconnect is read back from the record, unless `reread` is false (a `store: false` record keeps no text:
     * then a lost reply is a 408 rather than an empty answer).
     */
    reply(sub, opts = {}) {
        return (0, text_replies_1.awaitText)(this.d.gateway, sub, this.d.syncWaitMs, opts.reread === false ? async () => null : () => this.completed(sub.id));
    }
    /** Relays a streamed text generation as Server-Sent Events (text-replies.ts pumpStream). */
    stream(res, sub, head, h) {
        return (0, text_replies_1.pumpStream)(res, this.d.gateway, sub, this.d.syncWaitMs, head, h);
    }
    /** The stored answer of a completed text generation, for a waiter that missed the worker's message. */
    async completed(id) {
        const g = await this.d.db.generation.findUnique({ where: { id } });
        // The cost shown is the amount charged (the record's client cost), as in the worker's own message.
        return g?.status === 'completed' ? { ...g.result, cost: g.clientCost.toFixed(10) } : null;
    }
}
exports.TextService = TextService;
