"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.OPENAI_ERROR_KINDS = exports.OPENAI_FINISH_REASONS = void 0;
exports.openaiFinishReason = openaiFinishReason;
exports.extractOpenAIError = extractOpenAIError;
exports.openaiUsage = openaiUsage;
exports.openaiLogprobs = openaiLogprobs;
exports.reasoningText = reasoningText;
exports.parseChatCompletion = parseChatCompletion;
exports.parseEmbeddings = parseEmbeddings;
exports.parseImages = parseImages;
const mapper_utils_1 = require("../mapper-utils");
/** https://platform.openai.com/docs/api-reference/chat/object#chat/object-choices (`finish_reason`). */
exports.OPENAI_FINISH_REASONS = new Map([
    ['stop', 'stop'],
    ['length', 'length'],
    ['tool_calls', 'tool_calls'],
    ['function_call', 'tool_calls'], // deprecated functions API
    ['content_filter', 'content_filter'],
]);
function openaiFinishReason(value) {
    return (typeof value === 'string' && exports.OPENAI_FINISH_REASONS.get(value)) || 'stop';
}
/**
 * Error `type`/`code` values → our reasons; consulted for in-stream errors (a non-2xx status decides by itself).
 * https://platform.openai.com/docs/guides/error-codes/api-errors
 */
exports.OPENAI_ERROR_KINDS = new Map([
    ['invalid_request_error', 'bad_request'],
    ['context_length_exceeded', 'bad_request'],
    ['authentication_error', 'unauthorized'],
    ['invalid_api_key', 'unauthorized'],
    ['permission_error', 'unauthorized'],
    ['rate_limit_exceeded', 'rate_limited'],
    ['insufficient_quota', 'rate_limited'],
    ['server_error', 'provider_error'],
    ['api_error', 'provider_error'],
    ['timeout', 'upstream_timeout'],
]);
/** `{"error": {"message", "type", "code"}}` (some compatible servers send `{"error": "text"}` or `{"message"}`). */
function extractOpenAIError(body) {
    const b = (0, mapper_utils_1.rec)(body);
    if (typeof b.error === 'string')
        return { message: b.error };
    const e = (0, mapper_utils_1.rec)(b.error);
    const message = (0, mapper_utils_1.str)(e.message) ?? (0, mapper_utils_1.str)(b.message);
    const kind = [(0, mapper_utils_1.str)(e.code), (0, mapper_utils_1.str)(e.type)].map((k) => (k ? exports.OPENAI_ERROR_KINDS.get(k) : undefined)).find(Boolean);
    return { ...(message !== undefined && { message }), ...(kind !== undefined && { reason: kind }) };
}
function openaiUsage(u) {
    const usage = (0, mapper_utils_1.rec)(u);
    const prompt = (0, mapper_utils_1.rec)(usage.prompt_tokens_details);
    const completion = (0, mapper_utils_1.rec)(usage.completion_tokens_details);
    const result = { inputTokens: (0, mapper_utils_1.num)(usage.prompt_tokens) ?? 0, outputTokens: (0, mapper_utils_1.num)(usage.completion_tokens) ?? 0 };
    const cached = (0, mapper_utils_1.num)(prompt.cached_tokens);
    const reasoning = (0, mapper_utils_1.num)(completion.reasoning_tokens);
    const audioIn = (0, mapper_utils_1.num)(prompt.audio_tokens);
    const audioOut = (0, mapper_utils_1.num)(completion.audio_tokens);
    if (cached)
        result.cachedTokens = cached;
    if (reasoning)
        result.reasoningTokens = reasoning;
    if (audioIn)
        result.audioInputTokens = audioIn;
    if (audioOut)
        result.audioOutputTokens = audioOut;
    return result;
}
function openaiLogprobs(content) {
    return (0, mapper_utils_1.arr)(content).filter(mapper_utils_1.isRecord).map((t) => ({
        token: (0, mapper_utils_1.str)(t.token) ?? '',
        logprob: (0, mapper_utils_1.num)(t.logprob) ?? 0,
        top: (0, mapper_utils_1.arr)(t.top_logprobs)
            .filter(mapper_utils_1.isRecord)
            .map((a) => ({ token: (0, mapper_utils_1.str)(a.token) ?? '', logprob: (0, mapper_utils_1.num)(a.logprob) ?? 0 })),
    }));
}
/** Compatible servers (DeepSeek, vLLM, OpenRouter) put chain-of-thought in `reasoning_content` or `reasoning`. */
function reasoningText(message) {
    return (0, mapper_utils_1.str)(message.reasoning_content) ?? (0, mapper_utils_1.str)(message.reasoning);
}
/** https://platform.openai.com/docs/api-reference/chat/object */
function parseChatCompletion(json) {
    const body = (0, mapper_utils_1.rec)(json);
    const choice = (0, mapper_utils_1.arr)(body.choices)[0];
    if (!(0, mapper_utils_1.isRecord)(choice) || !(0, mapper_utils_1.isRecord)(choice.message))
        return (0, mapper_utils_1.malformed)('OpenAI chat completion without choices[0].message', json);
    const message = choice.message;
    const id = (0, mapper_utils_1.str)(body.id) ?? 'chatcmpl';
    const output = [];
    const reasoning = reasoningText(message);
    if (reasoning)
        output.push({ type: 'reasoning', id: `rs_${id}`, summary: [{ type: 'summary_text', text: reasoning }] });
    const text = (0, mapper_utils_1.str)(message.content) ?? (0, mapper_utils_1.str)(message.refusal);
    if (text)
        output.push({ type: 'message', id: `msg_${id}`, role: 'assistant', content: [{ type: 'output_text', text }] });
    for (const call of (0, mapper_utils_1.arr)(message.tool_calls)) {
        if (!(0, mapper_utils_1.isRecord)(call))
            continue;
        const fn = (0, mapper_utils_1.rec)(call.function);
        const callId = (0, mapper_utils_1.str)(call.id) ?? `call_${id}_${output.length}`;
        output.push({ type: 'function_call', id: `fc_${callId}`, call_id: callId, name: (0, mapper_utils_1.str)(fn.name) ?? '', arguments: (0, mapper_utils_1.str)(fn.arguments) ?? '' });
    }
    const result = { output, finishReason: openaiFinishReason(choice.finish_reason), usage: openaiUsage(body.usage) };
    const logprobs = (0, mapper_utils_1.rec)(choice.logprobs).content;
    if (Array.isArray(logprobs))
        result.logprobs = openaiLogprobs(logprobs);
    const model = (0, mapper_utils_1.str)(body.model);
    if (model)
        result.modelVersion = model;
    if ((0, mapper_utils_1.str)(body.id))
        result.upstreamId = id;
    return result;
}
/** https://platform.openai.com/docs/api-reference/embeddings/object */
function parseEmbeddings(json, req) {
    const body = (0, mapper_utils_1.rec)(json);
    const data = (0, mapper_utils_1.arr)(body.data).filter(mapper_utils_1.isRecord);
    if (data.length !== req.inputs.length)
        return (0, mapper_utils_1.malformed)(`OpenAI embeddings: ${data.length} vectors for ${req.inputs.length} inputs`, json);
    const ordered = [...data].sort((a, b) => ((0, mapper_utils_1.num)(a.index) ?? 0) - ((0, mapper_utils_1.num)(b.index) ?? 0));
    const vectors = ordered.map((d) => toVector(d.embedding, json));
    const usage = (0, mapper_utils_1.rec)(body.usage);
    const result = { vectors, usage: { inputTokens: (0, mapper_utils_1.num)(usage.prompt_tokens) ?? (0, mapper_utils_1.num)(usage.total_tokens) ?? 0 } };
    const model = (0, mapper_utils_1.str)(body.model);
    if (model)
        result.modelVersion = model;
    return result;
}
/** Some compatible servers ignore `encoding_format: "float"` and send base64 little-endian float32. */
function toVector(embedding, json) {
    if (Array.isArray(embedding) && embedding.every((x) => typeof x === 'number'))
        return embedding;
    if (typeof embedding === 'string') {
        const bytes = Buffer.from(embedding, 'base64');
        const vector = [];
        for (let i = 0; i + 4 <= bytes.length; i += 4)
            vector.push(bytes.readFloatLE(i));
        return vector;
    }
    return (0, mapper_utils_1.malformed)('OpenAI embeddings: embedding is neither a float array nor base64', json);
}
/** https://platform.openai.com/docs/api-reference/images/object */
function parseImages(json) {
    const body = (0, mapper_utils_1.rec)(json);
    if (!Array.isArray(body.data))
        return (0, mapper_utils_1.malformed)('OpenAI images reply without data[]', json);
    const images = body.data.filter(mapper_utils_1.isRecord).map((d) => {
        const b64 = (0, mapper_utils_1.str)(d.b64_json);
        const url = (0, mapper_utils_1.str)(d.url);
        const revisedPrompt = (0, mapper_utils_1.str)(d.revised_prompt);
        return { ...(b64 !== undefined && { b64 }), ...(url !== undefined && { url }), ...(revisedPrompt !== undefined && { revisedPrompt }) };
    });
    const result = { images };
    if ((0, mapper_utils_1.isRecord)(body.usage)) {
        const u = body.usage;
        const details = (0, mapper_utils_1.rec)(u.input_tokens_details);
        result.usage = { inputTokens: (0, mapper_utils_1.num)(u.input_tokens) ?? 0, outputTokens: (0, mapper_utils_1.num)(u.output_tokens) ?? 0 };
        const imageIn = (0, mapper_utils_1.num)(details.image_tokens);
        const textIn = (0, mapper_utils_1.num)(details.text_tokens);
        if (imageIn !== undefined)
            result.usage.imageInputTokens = imageIn;
        if (textIn !== undefined)
            result.usage.textInputTokens = textIn;
    }
    for (const key of ['output_format', 'size', 'quality', 'background']) {
        const value = (0, mapper_utils_1.str)(body[key]);
        if (value === undefined)
            continue;
        if (key === 'output_format')
            result.outputFormat = value;
        else
            result[key] = value;
    }
    return result;
}
