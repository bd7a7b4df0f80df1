"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.EmbeddingsService = void 0;
const app_error_1 = require("../../shared/errors/app-error");
const registry_1 = require("../../shared/providers/registry");
const formats_1 = require("../../shared/formats");
const api_keys_1 = require("../../shared/auth/api-keys");
const pricing_1 = require("../../shared/billing/pricing");
const queue_names_1 = require("../../shared/queue/queue-names");
const text_replies_1 = require("./text-replies");
/**
 * Embeddings up to the reply (POST /v1/embeddings): route, keep the endpoints that can take the input (images,
 * token arrays, dimensions), bound the cost, reserve and enqueue through the gateway, wait for the vectors.
 */
class EmbeddingsService {
    d;
    constructor(d) {
        this.d = d;
    }
    /** The worker's reply for a validated body, and the generation's id. */
    async embed(c, body) {
        const canonical = (0, formats_1.embeddingsToCanonical)(body);
        const route = await this.d.planner.plan({ principal: c.principal, model: body.model, provider: body.provider, modelType: 'embedding' });
        // Images only for endpoints marked multimodal; dimensions only up to an endpoint's maximum.
        let endpoints = route.endpoints;
        if (canonical.hasImages)
            endpoints = endpoints.filter((e) => e.multimodal);
        if (!endpoints.length)
            throw app_error_1.AppError.fromReason('parameters_unsupported', `Model ${body.model} does not accept images`, { candidates: route.endpoints.map((e) => ({ endpoint: e.slug, provider: e.provider, reason: 'multimodal', detail: 'not multimodal' })) });
        if (canonical.hasTokens) {
            // Token ids belong to a provider's own tokenizer: only adapters that send them upstream may serve them.
            const takesTokens = (e) => {
                const provider = this.d.catalog.providers[e.provider];
                return provider !== undefined && (0, registry_1.adapterFor)(provider.kind)?.supports.embeddingTokens === true;
            };
            const fit = endpoints.filter(takesTokens);
            if (!fit.length) {
                throw app_error_1.AppError.fromReason('parameters_unsupported', `Model ${body.model} does not accept token arrays as input: send text`, {
                    candidates: endpoints.map((e) => ({ endpoint: e.slug, provider: e.provider, reason: 'token_input', detail: 'provider takes no token arrays' })),
                });
            }
            endpoints = fit;
        }
        if (canonical.dimensions !== undefined) {
            const fit = endpoints.filter((e) => e.maxDimensions === undefined || canonical.dimensions <= e.maxDimensions);
            if (!fit.length) {
                const max = Math.max(...endpoints.map((e) => e.maxDimensions ?? 0));
                throw app_error_1.AppError.validation([{ path: '/dimensions', message: `must be at most ${max} for ${body.model}` }]);
            }
            endpoints = fit;
        }
        const candidates = route.candidates.filter((c) => endpoints.some((e) => e.slug === c.slug));
        const tokens = canonical.inputs.reduce((n, i) => n + (0, formats_1.embeddingInputTokens)(i, pricing_1.estimateTokens), 0);
        const submission = await this.d.gateway.order({
            queue: queue_names_1.QUEUES.embeddings,
            id: (0, api_keys_1.newId)('gen'),
            caller: c,
            requestType: 'embedding',
            apiType: 'embeddings',
            mode: 'sync',
            primary: route.primary,
            request: { model: body.model, inputs: canonical.inputs.length, encoding_format: body.encoding_format ?? 'float', dimensions: body.dimensions },
            candidates,
            dropped: route.plan.dropped,
            warnings: [],
            bound: (0, pricing_1.maxBound)(endpoints, (e) => (0, pricing_1.tokenCost)(e.price, { inputTokens: tokens, outputTokens: 0 })),
            job: () => ({ inputs: canonical.inputs, dimensions: canonical.dimensions, user: canonical.user, keepResult: c.idempotency !== undefined }),
        });
        const done = await (0, text_replies_1.awaitText)(this.d.gateway, submission, this.d.syncWaitMs, async () => null);
        // A repeat with the same Idempotency-Key gets the record's result, where the first request's vectors were kept.
        return { id: submission.id, payload: 'replay' in done ? done.replay : done };
    }
}
exports.EmbeddingsService = EmbeddingsService;
