"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ANTHROPIC_ERROR_KINDS = exports.ANTHROPIC_STOP_REASONS = void 0;
exports.anthropicFinishReason = anthropicFinishReason;
exports.extractAnthropicError = extractAnthropicError;
exports.anthropicUsage = anthropicUsage;
exports.parseMessage = parseMessage;
const mapper_utils_1 = require("../mapper-utils");
/** https://docs.anthropic.com/en/api/handling-stop-reasons */
exports.ANTHROPIC_STOP_REASONS = new Map([
    ['end_turn', 'stop'],
    ['stop_sequence', 'stop'],
    ['pause_turn', 'stop'],
    ['max_tokens', 'length'],
    ['model_context_window_exceeded', 'length'],
    ['tool_use', 'tool_calls'],
    ['refusal', 'content_filter'],
]);
function anthropicFinishReason(value) {
    return (typeof value === 'string' && exports.ANTHROPIC_STOP_REASONS.get(value)) || 'stop';
}
/** https://docs.anthropic.com/en/api/errors — `error.type`; used for in-stream `error` events. */
exports.ANTHROPIC_ERROR_KINDS = new Map([
    ['invalid_request_error', 'bad_request'],
    ['request_too_large', 'bad_request'],
    ['not_found_error', 'bad_request'],
    ['authentication_error', 'unauthorized'],
    ['permission_error', 'unauthorized'],
    ['billing_error', 'unauthorized'],
    ['rate_limit_error', 'rate_limited'],
    ['api_error', 'provider_error'],
    ['overloaded_error', 'provider_error'],
    ['timeout_error', 'upstream_timeout'],
]);
/** `{"type": "error", "error": {"type", "message"}}` */
function extractAnthropicError(body) {
    const e = (0, mapper_utils_1.rec)((0, mapper_utils_1.rec)(body).error);
    const message = (0, mapper_utils_1.str)(e.message);
    const type = (0, mapper_utils_1.str)(e.type);
    const reason = type ? exports.ANTHROPIC_ERROR_KINDS.get(type) : undefined;
    return { ...(message !== undefined && { message }), ...(reason !== undefined && { reason }) };
}
/**
 * Anthropic's `input_tokens` excludes cache reads and writes; ours counts every input token (OpenAI's
 * convention), with `cachedTokens` and `cacheWriteTokens` as the parts of it billed differently.
 */
function anthropicUsage(u) {
    const usage = (0, mapper_utils_1.rec)(u);
    const plain = (0, mapper_utils_1.num)(usage.input_tokens) ?? 0;
    const read = (0, mapper_utils_1.num)(usage.cache_read_input_tokens) ?? 0;
    const write = (0, mapper_utils_1.num)(usage.cache_creation_input_tokens) ?? 0;
    const result = { inputTokens: plain + read + write, outputTokens: (0, mapper_utils_1.num)(usage.output_tokens) ?? 0 };
    if (read)
        result.cachedTokens = read;
    if (write)
        result.cacheWriteTokens = write;
    return result;
}
/** https://docs.anthropic.com/en/api/messages (response body) */
function parseMessage(json) {
    const body = (0, mapper_utils_1.rec)(json);
    if (!Array.isArray(body.content))
        return (0, mapper_utils_1.malformed)('Anthropic message without content[]', json);
    const id = (0, mapper_utils_1.str)(body.id) ?? 'msg';
    const output = [];
    const texts = [];
    const thinking = [];
    const calls = [];
    for (const block of body.content) {
        if (!(0, mapper_utils_1.isRecord)(block))
            continue;
        if (block.type === 'text')
            texts.push({ type: 'output_text', text: (0, mapper_utils_1.str)(block.text) ?? '' });
        else if (block.type === 'thinking')
            thinking.push((0, mapper_utils_1.str)(block.thinking) ?? '');
        else if (block.type === 'tool_use') {
            const callId = (0, mapper_utils_1.str)(block.id) ?? `toolu_${id}_${calls.length}`;
            calls.push({ type: 'function_call', id: `fc_${callId}`, call_id: callId, name: (0, mapper_utils_1.str)(block.name) ?? '', arguments: JSON.stringify(block.input ?? {}) });
        }
        // redacted_thinking and server tool blocks carry nothing we can show
    }
    if (thinking.length > 0)
        output.push({ type: 'reasoning', id: `rs_${id}`, summary: thinking.map((text) => ({ type: 'summary_text', text })) });
    if (texts.length > 0)
        output.push({ type: 'message', id: `msg_${id}`, role: 'assistant', content: texts });
    output.push(...calls);
    const result = { output, finishReason: anthropicFinishReason(body.stop_reason), usage: anthropicUsage(body.usage) };
    const model = (0, mapper_utils_1.str)(body.model);
    if (model)
        result.modelVersion = model;
    if ((0, mapper_utils_1.str)(body.id))
        result.upstreamId = id;
    return result;
}
