"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.GEMINI_ERROR_KINDS = exports.GEMINI_FINISH_REASONS = void 0;
exports.geminiFinishReason = geminiFinishReason;
exports.extractGeminiError = extractGeminiError;
exports.geminiUsage = geminiUsage;
exports.geminiLogprobs = geminiLogprobs;
exports.geminiCallId = geminiCallId;
exports.parseGenerateContent = parseGenerateContent;
exports.parseBatchEmbed = parseBatchEmbed;
const mapper_utils_1 = require("../mapper-utils");
/** https://ai.google.dev/api/generate-content#FinishReason */
exports.GEMINI_FINISH_REASONS = new Map([
    ['STOP', 'stop'],
    ['FINISH_REASON_UNSPECIFIED', 'stop'],
    ['MAX_TOKENS', 'length'],
    ['SAFETY', 'content_filter'],
    ['RECITATION', 'content_filter'],
    ['LANGUAGE', 'content_filter'],
    ['BLOCKLIST', 'content_filter'],
    ['PROHIBITED_CONTENT', 'content_filter'],
    ['SPII', 'content_filter'],
    ['IMAGE_SAFETY', 'content_filter'],
    ['OTHER', 'error'],
    ['MALFORMED_FUNCTION_CALL', 'error'],
    ['UNEXPECTED_TOOL_CALL', 'error'],
    ['TOO_MANY_TOOL_CALLS', 'error'],
]);
/** Gemini says STOP after function calls too; ours says tool_calls when the answer asks for them. */
function geminiFinishReason(value, hasFunctionCalls) {
    const mapped = (typeof value === 'string' && exports.GEMINI_FINISH_REASONS.get(value)) || 'stop';
    return mapped === 'stop' && hasFunctionCalls ? 'tool_calls' : mapped;
}
/** Google RPC status names in `error.status`. https://ai.google.dev/gemini-api/docs/troubleshooting#error-codes */
exports.GEMINI_ERROR_KINDS = new Map([
    ['INVALID_ARGUMENT', 'bad_request'],
    ['FAILED_PRECONDITION', 'bad_request'],
    ['NOT_FOUND', 'bad_request'],
    ['UNAUTHENTICATED', 'unauthorized'],
    ['PERMISSION_DENIED', 'unauthorized'],
    ['RESOURCE_EXHAUSTED', 'rate_limited'],
    ['INTERNAL', 'provider_error'],
    ['UNAVAILABLE', 'provider_error'],
    ['DEADLINE_EXCEEDED', 'upstream_timeout'],
]);
/** `{"error": {"code", "message", "status"}}`; error replies may be wrapped in a one-element array. */
function extractGeminiError(body) {
    const b = Array.isArray(body) ? body[0] : body;
    const e = (0, mapper_utils_1.rec)((0, mapper_utils_1.rec)(b).error);
    const message = (0, mapper_utils_1.str)(e.message);
    const status = (0, mapper_utils_1.str)(e.status);
    const reason = status ? exports.GEMINI_ERROR_KINDS.get(status) : undefined;
    return { ...(message !== undefined && { message }), ...(reason !== undefined && { reason }) };
}
/**
 * https://ai.google.dev/api/generate-content#UsageMetadata — `promptTokenCount` already includes cached tokens;
 * `candidatesTokenCount` excludes thinking, which ours counts as output (OpenAI's convention).
 */
function geminiUsage(u) {
    const usage = (0, mapper_utils_1.rec)(u);
    const thoughts = (0, mapper_utils_1.num)(usage.thoughtsTokenCount) ?? 0;
    const cached = (0, mapper_utils_1.num)(usage.cachedContentTokenCount) ?? 0;
    const result = {
        inputTokens: ((0, mapper_utils_1.num)(usage.promptTokenCount) ?? 0) + ((0, mapper_utils_1.num)(usage.toolUsePromptTokenCount) ?? 0),
        outputTokens: ((0, mapper_utils_1.num)(usage.candidatesTokenCount) ?? 0) + thoughts,
    };
    if (cached)
        result.cachedTokens = cached;
    if (thoughts)
        result.reasoningTokens = thoughts;
    return result;
}
/** https://ai.google.dev/api/generate-content#LogprobsResult — chosen token i pairs with topCandidates[i]. */
function geminiLogprobs(result) {
    const r = (0, mapper_utils_1.rec)(result);
    const top = (0, mapper_utils_1.arr)(r.topCandidates);
    return (0, mapper_utils_1.arr)(r.chosenCandidates)
        .filter(mapper_utils_1.isRecord)
        .map((chosen, i) => ({
        token: (0, mapper_utils_1.str)(chosen.token) ?? '',
        logprob: (0, mapper_utils_1.num)(chosen.logProbability) ?? 0,
        top: (0, mapper_utils_1.arr)((0, mapper_utils_1.rec)(top[i]).candidates)
            .filter(mapper_utils_1.isRecord)
            .map((c) => ({ token: (0, mapper_utils_1.str)(c.token) ?? '', logprob: (0, mapper_utils_1.num)(c.logProbability) ?? 0 })),
    }));
}
/** Ids for function calls: Gemini's own `id` when it sends one, else derived from the response id. */
function geminiCallId(call, responseId, ordinal) {
    return (0, mapper_utils_1.str)(call.id) ?? `call_${responseId}_${ordinal}`;
}
/** https://ai.google.dev/api/generate-content#generatecontentresponse */
function parseGenerateContent(json) {
    const body = (0, mapper_utils_1.rec)(json);
    const candidates = body.candidates;
    const id = (0, mapper_utils_1.str)(body.responseId) ?? 'gemini';
    const usage = geminiUsage(body.usageMetadata);
    const meta = {
        ...((0, mapper_utils_1.str)(body.modelVersion) !== undefined && { modelVersion: (0, mapper_utils_1.str)(body.modelVersion) }),
        ...((0, mapper_utils_1.str)(body.responseId) !== undefined && { upstreamId: id }),
    };
    if (!Array.isArray(candidates) || candidates.length === 0) {
        // A blocked prompt answers with promptFeedback and no candidates.
        if ((0, mapper_utils_1.isRecord)(body.promptFeedback))
            return { output: [], finishReason: 'content_filter', usage, ...meta };
        return (0, mapper_utils_1.malformed)('Gemini reply without candidates', json);
    }
    const candidate = (0, mapper_utils_1.rec)(candidates[0]);
    const output = [];
    const texts = [];
    const thoughts = [];
    const calls = [];
    for (const part of (0, mapper_utils_1.arr)((0, mapper_utils_1.rec)(candidate.content).parts)) {
        if (!(0, mapper_utils_1.isRecord)(part))
            continue;
        if ((0, mapper_utils_1.isRecord)(part.functionCall)) {
            const fc = part.functionCall;
            const callId = geminiCallId(fc, id, calls.length);
            calls.push({ type: 'function_call', id: `fc_${callId}`, call_id: callId, name: (0, mapper_utils_1.str)(fc.name) ?? '', arguments: JSON.stringify(fc.args ?? {}) });
        }
        else if (typeof part.text === 'string') {
            if (part.thought === true)
                thoughts.push(part.text);
            else
                texts.push({ type: 'output_text', text: part.text });
        }
    }
    if (thoughts.length > 0)
        output.push({ type: 'reasoning', id: `rs_${id}`, summary: thoughts.map((text) => ({ type: 'summary_text', text })) });
    if (texts.length > 0)
        output.push({ type: 'message', id: `msg_${id}`, role: 'assistant', content: texts });
    output.push(...calls);
    const result = { output, finishReason: geminiFinishReason(candidate.finishReason, calls.length > 0), usage, ...meta };
    if ((0, mapper_utils_1.isRecord)(candidate.logprobsResult))
        result.logprobs = geminiLogprobs(candidate.logprobsResult);
    return result;
}
/**
 * https://ai.google.dev/api/embeddings#batchembedcontentsresponse — it reports no token count, so unless a
 * `usageMetadata` is present we estimate one token per 4 characters of text input (for billing only).
 */
function parseBatchEmbed(json, req) {
    const body = (0, mapper_utils_1.rec)(json);
    const embeddings = (0, mapper_utils_1.arr)(body.embeddings);
    if (embeddings.length !== req.inputs.length)
        return (0, mapper_utils_1.malformed)(`Gemini embeddings: ${embeddings.length} vectors for ${req.inputs.length} inputs`, json);
    const vectors = embeddings.map((e) => {
        const values = (0, mapper_utils_1.rec)(e).values;
        return Array.isArray(values) && values.every((v) => typeof v === 'number') ? values : (0, mapper_utils_1.malformed)('Gemini embedding without values[]', json);
    });
    const reported = (0, mapper_utils_1.num)((0, mapper_utils_1.rec)(body.usageMetadata).promptTokenCount);
    return { vectors, usage: { inputTokens: reported ?? estimateTokens(req) } };
}
function estimateTokens(req) {
    let chars = 0;
    for (const input of req.inputs) {
        if (input.type === 'text')
            chars += input.text.length;
        else if (input.type === 'tokens')
            chars += input.tokens.length * 4;
        else
            for (const c of input.content)
                if (c.type === 'text')
                    chars += c.text.length;
    }
    return Math.ceil(chars / 4);
}
