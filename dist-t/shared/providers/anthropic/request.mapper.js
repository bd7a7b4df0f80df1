"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ANTHROPIC_VERSION = void 0;
exports.anthropicHeaders = anthropicHeaders;
exports.buildMessagesRequest = buildMessagesRequest;
exports.toMessages = toMessages;
const provider_types_1 = require("../provider.types");
const mapper_utils_1 = require("../mapper-utils");
exports.ANTHROPIC_VERSION = '2023-06-01';
/** `max_tokens` is required by Anthropic; used when neither the request nor the caller's options give one. */
/** Anthropic's smallest thinking budget. https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking */
const MIN_THINKING_BUDGET = 1024;
/** Our effort names → `thinking.budget_tokens`. */
const THINKING_BUDGET = new Map([
    ['minimal', 1024],
    ['low', 2048],
    ['medium', 8192],
    ['high', 16384],
    ['max', 32000],
]);
function anthropicHeaders(apiKey, stream = false) {
    return {
        'x-api-key': apiKey,
        'anthropic-version': exports.ANTHROPIC_VERSION,
        'content-type': 'application/json',
        accept: stream ? 'text/event-stream' : 'application/json',
    };
}
function buildMessagesRequest(req, apiKey, options = {}) {
    const { system, messages } = toMessages(req);
    const thinkingBudget = thinkingBudgetOf(req);
    let maxTokens = req.maxOutputTokens ?? options.defaultMaxOutputTokens ?? provider_types_1.DEFAULT_MAX_OUTPUT_TOKENS;
    // budget_tokens must be below max_tokens: with no explicit limit, make room for the answer on top of the thinking.
    if (thinkingBudget !== undefined && req.maxOutputTokens === undefined && maxTokens <= thinkingBudget)
        maxTokens = thinkingBudget + maxTokens;
    const body = { model: req.model, max_tokens: maxTokens, messages };
    if (system)
        body.system = system;
    if (thinkingBudget !== undefined) {
        const budget = Math.min(thinkingBudget, maxTokens - 1);
        // A limit too small for the minimum budget: answer without thinking rather than be refused.
        if (budget >= MIN_THINKING_BUDGET)
            body.thinking = { type: 'enabled', budget_tokens: budget };
    }
    if (req.temperature !== undefined)
        body.temperature = req.temperature;
    if (req.topP !== undefined)
        body.top_p = req.topP;
    if (req.topK !== undefined)
        body.top_k = req.topK;
    if (req.stop !== undefined && req.stop.length > 0)
        body.stop_sequences = req.stop;
    const tools = req.tools ?? [];
    if (tools.length > 0) {
        body.tools = tools.map((t) => ({
            name: t.name,
            ...(t.description !== undefined && { description: t.description }),
            input_schema: t.parameters ?? { type: 'object', properties: {} },
        }));
    }
    const toolChoice = toToolChoice(req.toolChoice, tools.length > 0 ? req.parallelToolCalls : undefined);
    if (toolChoice)
        body.tool_choice = toolChoice;
    if (req.user !== undefined)
        body.metadata = { user_id: req.user };
    if (req.stream)
        body.stream = true;
    // Not mapped (no Messages API equivalent): seed, penalties, logprobs, textFormat, promptCacheKey.
    return { method: 'POST', path: '/messages', headers: anthropicHeaders(apiKey, req.stream), body };
}
function thinkingBudgetOf(req) {
    const r = req.reasoning;
    if (!r || r.enabled === false)
        return undefined;
    if (r.maxTokens !== undefined)
        return Math.max(MIN_THINKING_BUDGET, r.maxTokens);
    if (r.effort !== undefined)
        return THINKING_BUDGET.get(r.effort);
    return r.enabled ? THINKING_BUDGET.get('medium') : undefined;
}
/** https://docs.anthropic.com/en/docs/agents-and-tools/tool-use/implement-tool-use#controlling-claudes-output */
function toToolChoice(choice, parallel) {
    const noParallel = parallel === false ? { disable_parallel_tool_use: true } : {};
    if (choice === undefined)
        return parallel === false ? { type: 'auto', ...noParallel } : undefined;
    if (choice === 'none')
        return { type: 'none' };
    if (choice === 'auto')
        return { type: 'auto', ...noParallel };
    if (choice === 'required')
        return { type: 'any', ...noParallel };
    return { type: 'tool', name: choice.name, ...noParallel };
}
/**
 * System and developer messages are hoisted into `system` (Anthropic has no system role in `messages`).
 * Consecutive blocks of one role share a message: parallel tool results must sit in ONE user message right
 * after the assistant's tool_use message.
 */
function toMessages(req) {
    const system = req.instructions ? [req.instructions] : [];
    const messages = [];
    const push = (role, blocks) => {
        if (blocks.length === 0)
            return;
        const last = messages[messages.length - 1];
        if (last?.role === role)
            last.content.push(...blocks);
        else
            messages.push({ role, content: blocks });
    };
    for (const item of req.input) {
        switch (item.type) {
            case 'message':
                if (item.role === 'system' || item.role === 'developer')
                    system.push(item.content.map((p) => textPart(p)).join('\n\n'));
                else
                    push(item.role, item.content.map(toBlock));
                break;
            case 'function_call':
                push('assistant', [{ type: 'tool_use', id: item.call_id, name: item.name, input: (0, mapper_utils_1.parseJsonArguments)(item.arguments, `function_call ${item.call_id}`) }]);
                break;
            case 'function_call_output':
                push('user', [{ type: 'tool_result', tool_use_id: item.call_id, content: item.output }]);
                break;
        }
    }
    return { system: system.join('\n\n'), messages };
}
function textPart(p) {
    return p.type === 'input_text' || p.type === 'output_text' ? p.text : (0, mapper_utils_1.unsupported)(`Anthropic: ${p.type} is not allowed in a system message`);
}
function toBlock(p) {
    switch (p.type) {
        case 'input_text':
        case 'output_text':
            return { type: 'text', text: p.text };
        case 'input_image': {
            const data = (0, mapper_utils_1.parseDataUrl)(p.image_url);
            return { type: 'image', source: data ? { type: 'base64', media_type: data.mimeType, data: data.base64 } : { type: 'url', url: p.image_url } };
        }
        case 'input_file': {
            const title = p.filename !== undefined ? { title: p.filename } : {};
            if (p.file_data !== undefined) {
                // file_data is a data: URL in the Responses API; bare base64 is taken as PDF, the one type Anthropic documents.
                const data = (0, mapper_utils_1.parseDataUrl)(p.file_data) ?? { mimeType: 'application/pdf', base64: p.file_data };
                return { type: 'document', source: { type: 'base64', media_type: data.mimeType, data: data.base64 }, ...title };
            }
            if (p.file_url !== undefined)
                return { type: 'document', source: { type: 'url', url: p.file_url }, ...title };
            return (0, mapper_utils_1.unsupported)('Anthropic: input_file needs file_data or file_url');
        }
    }
}
