"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.openaiHeaders = openaiHeaders;
exports.buildChatCompletionRequest = buildChatCompletionRequest;
exports.toChatMessages = toChatMessages;
exports.buildEmbeddingRequest = buildEmbeddingRequest;
exports.buildImageRequest = buildImageRequest;
const mapper_utils_1 = require("../mapper-utils");
/** Our effort names → `reasoning_effort`; `max` has no OpenAI name, `high` is the most there is everywhere. */
const REASONING_EFFORT = new Map([
    ['minimal', 'minimal'],
    ['low', 'low'],
    ['medium', 'medium'],
    ['high', 'high'],
    ['max', 'high'],
]);
function openaiHeaders(apiKey, stream = false) {
    return {
        authorization: `Bearer ${apiKey}`,
        'content-type': 'application/json',
        accept: stream ? 'text/event-stream' : 'application/json',
    };
}
function buildChatCompletionRequest(req, apiKey) {
    const body = { model: req.model, messages: toChatMessages(req) };
    const tools = req.tools ?? [];
    if (tools.length > 0) {
        body.tools = tools.map((t) => ({
            type: 'function',
            function: {
                name: t.name,
                ...(t.description !== undefined && { description: t.description }),
                ...(t.parameters !== undefined && { parameters: t.parameters }),
                ...(t.strict !== undefined && { strict: t.strict }),
            },
        }));
        // OpenAI refuses `parallel_tool_calls` without `tools`.
        if (req.parallelToolCalls !== undefined)
            body.parallel_tool_calls = req.parallelToolCalls;
    }
    if (req.toolChoice !== undefined)
        body.tool_choice = toToolChoice(req.toolChoice);
    if (req.maxOutputTokens !== undefined)
        body.max_completion_tokens = req.maxOutputTokens;
    if (req.temperature !== undefined)
        body.temperature = req.temperature;
    if (req.topP !== undefined)
        body.top_p = req.topP;
    // topK: Chat Completions has no such parameter (OpenAI answers 400 to unknown ones); routing checks `supports`.
    if (req.presencePenalty !== undefined)
        body.presence_penalty = req.presencePenalty;
    if (req.frequencyPenalty !== undefined)
        body.frequency_penalty = req.frequencyPenalty;
    if (req.stop !== undefined && req.stop.length > 0)
        body.stop = req.stop;
    if (req.seed !== undefined)
        body.seed = req.seed;
    const effort = req.reasoning?.enabled === false ? undefined : req.reasoning?.effort;
    if (effort !== undefined)
        body.reasoning_effort = REASONING_EFFORT.get(effort) ?? effort;
    if (req.textFormat && req.textFormat.type !== 'text') {
        const f = req.textFormat;
        body.response_format =
            f.type === 'json_object'
                ? { type: 'json_object' }
                : {
                    type: 'json_schema',
                    json_schema: {
                        name: f.name,
                        schema: f.schema,
                        ...(f.strict !== undefined && { strict: f.strict }),
                        ...(f.description !== undefined && { description: f.description }),
                    },
                };
    }
    if (req.logprobs || (req.topLogprobs ?? 0) > 0) {
        body.logprobs = true;
        if (req.topLogprobs !== undefined)
            body.top_logprobs = req.topLogprobs;
    }
    if (req.user !== undefined)
        body.user = req.user;
    if (req.promptCacheKey !== undefined)
        body.prompt_cache_key = req.promptCacheKey;
    if (req.stream) {
        body.stream = true;
        body.stream_options = { include_usage: true };
    }
    return { method: 'POST', path: '/chat/completions', headers: openaiHeaders(apiKey, req.stream), body };
}
function toToolChoice(choice) {
    return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } };
}
/**
 * Instructions and system/developer messages become `system` messages (`developer` is OpenAI-only; OpenAI
 * treats `system` as `developer` for reasoning models). Function calls join the assistant message before them.
 */
function toChatMessages(req) {
    const messages = [];
    if (req.instructions)
        messages.push({ role: 'system', content: req.instructions });
    for (const item of req.input)
        appendItem(messages, item);
    return messages;
}
function appendItem(messages, item) {
    switch (item.type) {
        case 'message': {
            if (item.role === 'system' || item.role === 'developer') {
                messages.push({ role: 'system', content: textOf(item.content, '\n\n') });
            }
            else if (item.role === 'assistant') {
                messages.push({ role: 'assistant', content: textOf(item.content, '') });
            }
            else {
                messages.push({ role: 'user', content: userContent(item.content) });
            }
            return;
        }
        case 'function_call': {
            const call = { id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } };
            const last = messages[messages.length - 1];
            if (last?.role === 'assistant')
                (last.tool_calls ??= []).push(call);
            else
                messages.push({ role: 'assistant', content: null, tool_calls: [call] });
            return;
        }
        case 'function_call_output':
            messages.push({ role: 'tool', tool_call_id: item.call_id, content: item.output });
            return;
    }
}
function textOf(parts, separator) {
    return parts
        .map((p) => (p.type === 'input_text' || p.type === 'output_text' ? p.text : (0, mapper_utils_1.unsupported)(`OpenAI: ${p.type} is only allowed in user messages`)))
        .join(separator);
}
function userContent(parts) {
    const only = parts.length === 1 ? parts[0] : undefined;
    if (only && (only.type === 'input_text' || only.type === 'output_text'))
        return only.text;
    return parts.map((p) => {
        switch (p.type) {
            case 'input_text':
            case 'output_text':
                return { type: 'text', text: p.text };
            case 'input_image':
                return { type: 'image_url', image_url: { url: p.image_url, ...(p.detail !== undefined && { detail: p.detail }) } };
            case 'input_file':
                // Chat Completions takes files inline only (file_data), not by URL.
                if (p.file_data === undefined)
                    return (0, mapper_utils_1.unsupported)('OpenAI chat completions: files must be sent as file_data, not file_url');
                return { type: 'file', file: { file_data: p.file_data, ...(p.filename !== undefined && { filename: p.filename }) } };
        }
    });
}
/** https://platform.openai.com/docs/api-reference/embeddings/create — always float; the gateway encodes base64 itself. */
function buildEmbeddingRequest(req, apiKey) {
    // Text inputs, or token arrays (`number[][]`); the gateway never mixes the two in one request.
    const input = req.inputs.map((i) => (i.type === 'text' ? i.text : i.type === 'tokens' ? i.tokens : (0, mapper_utils_1.unsupported)('OpenAI embeddings take text or token inputs only')));
    const body = { model: req.model, input, encoding_format: 'float' };
    if (req.dimensions !== undefined)
        body.dimensions = req.dimensions;
    if (req.user !== undefined)
        body.user = req.user;
    return { method: 'POST', path: '/embeddings', headers: openaiHeaders(apiKey), body };
}
/** https://platform.openai.com/docs/api-reference/images/create */
function buildImageRequest(req, apiKey) {
    const body = { model: req.model, prompt: req.prompt };
    const optional = [
        ['n', req.n],
        ['size', req.size],
        ['quality', req.quality],
        ['style', req.style],
        ['background', req.background],
        ['output_format', req.outputFormat],
        ['output_compression', req.outputCompression],
        ['response_format', req.responseFormat],
        ['user', req.user],
    ];
    for (const [name, value] of optional)
        if (value !== undefined)
            body[name] = value;
    return { method: 'POST', path: '/images/generations', headers: openaiHeaders(apiKey), body };
}
