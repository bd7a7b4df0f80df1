"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CHAT_FINISH_REASONS = void 0;
exports.chatFinishReason = chatFinishReason;
exports.buildChatCompletion = buildChatCompletion;
const format_utils_1 = require("./format-utils");
/** Canonical → chat `finish_reason`. `error` is OpenRouter's value for an answer ended by an upstream error. */
exports.CHAT_FINISH_REASONS = new Map([
    ['stop', 'stop'],
    ['length', 'length'],
    ['tool_calls', 'tool_calls'],
    ['content_filter', 'content_filter'],
    ['error', 'error'],
]);
function chatFinishReason(reason) {
    return (reason && exports.CHAT_FINISH_REASONS.get(reason)) ?? 'stop';
}
function buildChatCompletion(a) {
    const texts = [];
    const reasoning = [];
    const toolCalls = [];
    for (const item of a.result.output) {
        if (item.type === 'message')
            texts.push(...item.content.map((c) => c.text));
        else if (item.type === 'reasoning')
            reasoning.push(...item.summary.map((s) => s.text));
        else
            toolCalls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } });
    }
    const message = {
        role: 'assistant',
        content: texts.length > 0 ? texts.join('') : null,
        refusal: null,
    };
    if (toolCalls.length > 0)
        message.tool_calls = toolCalls;
    if (reasoning.length > 0)
        message.reasoning = reasoning.join('');
    const logprobs = a.result.logprobs || a.logprobs ? { content: (0, format_utils_1.publicLogprobs)(a.result.logprobs ?? []), refusal: null } : null;
    const switchyard = { ...a.switchyard };
    if (a.warnings && a.warnings.length > 0)
        switchyard.warnings = [...a.warnings];
    return {
        id: a.id,
        object: 'chat.completion',
        created: a.created,
        model: a.model,
        choices: [{ index: 0, message, logprobs, finish_reason: chatFinishReason(a.result.finishReason) }],
        usage: a.usage,
        switchyard,
    };
}
