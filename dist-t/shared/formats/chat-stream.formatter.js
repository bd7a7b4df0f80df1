"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.CHAT_STREAM_DONE = void 0;
exports.createChatStreamFormatter = createChatStreamFormatter;
exports.encodeChatSse = encodeChatSse;
const chat_response_mapper_1 = require("./chat-response.mapper");
exports.CHAT_STREAM_DONE = '[DONE]';
function createChatStreamFormatter(base) {
    let started = false;
    let ended = false;
    let finishReason;
    let sawToolCall = false;
    const chunk = (delta, finish = null) => {
        const c = {
            id: base.id,
            object: 'chat.completion.chunk',
            created: base.created,
            model: base.model,
            choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
        };
        if (base.includeUsage)
            c.usage = null;
        return c;
    };
    function start() {
        if (started || ended)
            return [];
        started = true;
        return [chunk({ role: 'assistant', content: '', refusal: null })];
    }
    function push(event) {
        if (ended)
            return [];
        const out = start();
        switch (event.type) {
            case 'text_delta':
                if (event.text !== '')
                    out.push(chunk({ content: event.text }));
                break;
            case 'reasoning_delta':
                if (event.text !== '')
                    out.push(chunk({ reasoning: event.text }));
                break;
            case 'tool_call_start':
                sawToolCall = true;
                out.push(chunk({
                    tool_calls: [{ index: event.index, id: event.callId, type: 'function', function: { name: event.name, arguments: '' } }],
                }));
                break;
            case 'tool_call_delta':
                if (event.argumentsDelta !== '') {
                    out.push(chunk({ tool_calls: [{ index: event.index, function: { arguments: event.argumentsDelta } }] }));
                }
                break;
            case 'finish':
                finishReason = event.finishReason;
                break;
            case 'usage':
            case 'error':
                break;
        }
        return out;
    }
    function complete(final) {
        if (ended)
            return [];
        const out = start();
        ended = true;
        const reason = final.finishReason ?? finishReason ?? (sawToolCall ? 'tool_calls' : 'stop');
        out.push(chunk({}, (0, chat_response_mapper_1.chatFinishReason)(reason)));
        const switchyard = { ...final.switchyard };
        if (final.warnings && final.warnings.length > 0)
            switchyard.warnings = [...final.warnings];
        if (base.includeUsage) {
            out.push({
                id: base.id,
                object: 'chat.completion.chunk',
                created: base.created,
                model: base.model,
                choices: [],
                usage: final.usage,
                switchyard,
            });
        }
        else if (Object.keys(switchyard).length > 0) {
            out[out.length - 1].switchyard = switchyard;
        }
        return out;
    }
    function fail(error, usage) {
        if (ended)
            return [];
        ended = true;
        const out = [];
        if (usage && base.includeUsage)
            out.push({ id: base.id, object: 'chat.completion.chunk', created: base.created, model: base.model, choices: [], usage });
        out.push({ error: { code: error.code, message: error.message, ...(error.metadata && { metadata: error.metadata }) } });
        return out;
    }
    return { start, push, complete, fail };
}
/** One chunk (or the `[DONE]` marker) on the wire. */
function encodeChatSse(chunk) {
    return `data: ${typeof chunk === 'string' ? chunk : JSON.stringify(chunk)}\n\n`;
}
