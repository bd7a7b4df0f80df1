"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.publicUsage = publicUsage;
exports.chatUsage = chatUsage;
exports.embeddingUsage = embeddingUsage;
const format_utils_1 = require("./format-utils");
function inputDetails(u) {
    return {
        cached_tokens: u.cachedTokens ?? 0,
        cache_write_tokens: u.cacheWriteTokens ?? 0,
        audio_tokens: u.audioInputTokens ?? 0,
        video_tokens: 0,
    };
}
function outputDetails(u) {
    return {
        reasoning_tokens: u.reasoningTokens ?? 0,
        audio_tokens: u.audioOutputTokens ?? 0,
        image_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
    };
}
function withExtras(usage, extras) {
    const out = usage;
    if (extras?.plugins !== undefined)
        out.plugins = extras.plugins;
    if (extras?.pluginPostProcessError !== undefined)
        out.plugin_post_process_error = extras.pluginPostProcessError;
    return out;
}
/** `inputTokens` already includes cached and cache-write tokens (the canonical convention). */
function publicUsage(u, cost, extras) {
    const input = inputDetails(u);
    const output = outputDetails(u);
    const total = (0, format_utils_1.moneyJson)(cost.totalRub);
    return withExtras({
        input_tokens: u.inputTokens,
        output_tokens: u.outputTokens,
        total_tokens: u.inputTokens + u.outputTokens,
        prompt_tokens: u.inputTokens,
        completion_tokens: u.outputTokens,
        input_tokens_details: input,
        prompt_tokens_details: { ...input },
        output_tokens_details: output,
        completion_tokens_details: { ...output },
        server_tool_use: { web_search_requests: 0 },
        server_tool_use_details: { web_search_requests: 0, tool_calls_requested: 0, tool_calls_executed: 0, steps: 0 },
        cost_rub: total,
        cost: total,
        cost_details: {
            inference_cost_rub: (0, format_utils_1.moneyJson)(cost.inferenceRub),
            server_tools_cost_rub: (0, format_utils_1.moneyJson)(cost.serverToolsRub ?? '0'),
        },
    }, extras);
}
/** `usage` of a chat completion (and of the last chunk of a stream with `include_usage`). */
function chatUsage(u, cost, extras) {
    const total = (0, format_utils_1.moneyJson)(cost.totalRub);
    return withExtras({
        prompt_tokens: u.inputTokens,
        completion_tokens: u.outputTokens,
        total_tokens: u.inputTokens + u.outputTokens,
        prompt_tokens_details: inputDetails(u),
        completion_tokens_details: outputDetails(u),
        cost_rub: total,
        cost: total,
    }, extras);
}
/** `usage` of an embedding list. */
function embeddingUsage(inputTokens, totalRub) {
    const total = (0, format_utils_1.moneyJson)(totalRub);
    return { prompt_tokens: inputTokens, total_tokens: inputTokens, cost_rub: total, cost: total };
}
