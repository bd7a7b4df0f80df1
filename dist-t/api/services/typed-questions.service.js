"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.TypedQuestionsService = void 0;
const typed_questions_mapper_1 = require("../../shared/formats/typed-questions.mapper");
const api_keys_1 = require("../../shared/auth/api-keys");
const pricing_1 = require("../../shared/billing/pricing");
const money_1 = require("../../shared/billing/money");
const queue_names_1 = require("../../shared/queue/queue-names");
const generation_gateway_1 = require("./generation-gateway");
const text_replies_1 = require("./text-replies");
/**
 * Answers come from token probabilities, so an endpoint must return log-probabilities and the alternatives at
 * the answer position. The catalog's `logprobs` covers `top_logprobs` (decisions.md section 1): an endpoint
 * listing `logprobs` serves typed questions.
 */
const REQUIRED_CAPABILITIES = ['logprobs'];
/** Sent with every question; an endpoint lacking one gets the call without it (with a warning on the record). */
const REQUESTED_PARAMETERS = ['temperature'];
/**
 * Typed questions over a state (POST /v1/systemone, decisions.md section 6), answered from top log-probabilities:
 * route to an endpoint with log-probabilities, bound every question's prompt, reserve and enqueue one job through
 * the gateway, wait for the answers.
 */
class TypedQuestionsService {
    d;
    constructor(d) {
        this.d = d;
    }
    async ask(c, body) {
        const route = await this.d.planner.plan({
            principal: c.principal,
            model: body.model,
            provider: body.provider,
            requestedParameters: REQUESTED_PARAMETERS,
            requireCapabilities: REQUIRED_CAPABILITIES,
            modelType: 'chat',
        });
        const questions = Object.entries(body.questions).map(([name, q]) => {
            const scheme = (0, typed_questions_mapper_1.answerScheme)(q);
            return { name, type: q.type, labels: scheme.labels, request: (0, typed_questions_mapper_1.questionRequest)(body.state, q, scheme) };
        });
        // One reservation for the whole request: every prompt, one output token each and a request fee each,
        // on the dearest candidate (a question may fall back to it).
        const promptTokens = questions.map((q) => (0, pricing_1.estimateInputTokens)(q.request));
        const bound = (0, pricing_1.maxBound)(route.endpoints, (e) => promptTokens.reduce((sum, tokens) => sum.plus((0, pricing_1.textBound)(e.price, tokens, 1)), money_1.ZERO));
        const submission = await this.d.gateway.order({
            queue: queue_names_1.QUEUES.text,
            id: (0, api_keys_1.newId)('gen'),
            caller: c,
            requestType: 'chat',
            apiType: 'systemone',
            mode: 'sync',
            ...(0, generation_gateway_1.routed)(route),
            request: body,
            recordWarnings: route.plan.warnings,
            bound,
            job: () => ({ apiType: 'systemone', mode: 'sync', questions }),
        });
        const payload = await (0, text_replies_1.awaitText)(this.d.gateway, submission, this.d.syncWaitMs, async () => {
            const g = await this.d.db.generation.findUnique({ where: { id: submission.id } });
            return g?.status === 'completed' ? g.result : null;
        });
        return { id: submission.id, payload };
    }
}
exports.TypedQuestionsService = TypedQuestionsService;
