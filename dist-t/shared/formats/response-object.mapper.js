"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.outputTextPart = outputTextPart;
exports.publicOutputItem = publicOutputItem;
exports.outputTextOf = outputTextOf;
exports.incompleteReason = incompleteReason;
exports.buildResponseObject = buildResponseObject;
exports.responseEnvelope = responseEnvelope;
const format_utils_1 = require("./format-utils");
/** Finish reasons that make a finished response `incomplete`, with OpenAI's `incomplete_details.reason`. */
const INCOMPLETE_REASONS = new Map([
    ['length', 'max_output_tokens'],
    ['content_filter', 'content_filter'],
]);
function outputTextPart(text, logprobs) {
    return { type: 'output_text', text, annotations: [], logprobs: logprobs ? (0, format_utils_1.publicLogprobs)(logprobs) : [] };
}
/** One canonical output item in the public shape; `logprobs` go to the first text part of a message. */
function publicOutputItem(item, status, logprobs) {
    switch (item.type) {
        case 'message':
            return {
                type: 'message',
                id: item.id,
                status,
                role: 'assistant',
                content: item.content.map((c, i) => outputTextPart(c.text, i === 0 ? logprobs : undefined)),
            };
        case 'function_call':
            return { type: 'function_call', id: item.id, call_id: item.call_id, name: item.name, arguments: item.arguments, status };
        case 'reasoning':
            return { type: 'reasoning', id: item.id, summary: item.summary.map((s) => ({ type: 'summary_text', text: s.text })), status };
    }
}
/** What the OpenAI SDK computes as `response.output_text`: every output_text of every message, joined. */
function outputTextOf(output) {
    return output
        .filter((item) => item.type === 'message')
        .flatMap((item) => item.content.map((c) => c.text))
        .join('');
}
/** OpenAI's `incomplete_details.reason` when the answer was cut by the token limit or a content filter. */
function incompleteReason(result) {
    return result ? INCOMPLETE_REASONS.get(result.finishReason) : undefined;
}
/**
 * The caller picks `status` (OpenAI answers `incomplete` for a cut answer; `incompleteReason` tells when);
 * `incomplete_details` follows the result's finish reason whatever the status.
 */
function buildResponseObject(a) {
    const reason = incompleteReason(a.result);
    const messageStatus = a.status === 'incomplete' ? 'incomplete' : 'completed';
    let logprobsPlaced = false;
    const output = (a.result?.output ?? []).map((item) => {
        const give = item.type === 'message' && !logprobsPlaced ? a.result?.logprobs : undefined;
        if (item.type === 'message')
            logprobsPlaced = true;
        // Only the text can be cut short; calls and reasoning that made it into the result are whole.
        return publicOutputItem(item, item.type === 'message' ? messageStatus : 'completed', give);
    });
    return responseEnvelope(a, a.status, output, reason ? { reason } : null);
}
/** The object around a given output (the stream formatter builds its own output items). */
function responseEnvelope(a, status, output, incompleteDetails = null) {
    const r = a.request;
    const switchyard = { ...a.switchyard };
    if (a.warnings && a.warnings.length > 0)
        switchyard.warnings = [...a.warnings];
    return {
        id: a.id,
        object: 'response',
        created_at: a.createdAt,
        status,
        background: r.background ?? false,
        error: a.error ?? null,
        incomplete_details: incompleteDetails,
        instructions: r.instructions ?? null,
        max_output_tokens: r.max_output_tokens ?? null,
        max_tool_calls: r.max_tool_calls ?? null,
        model: a.model,
        output,
        output_text: outputTextOf(output),
        parallel_tool_calls: r.parallel_tool_calls ?? true,
        previous_response_id: r.previous_response_id ?? null,
        prompt_cache_key: r.prompt_cache_key ?? null,
        reasoning: { effort: null, summary: null, ...r.reasoning },
        safety_identifier: r.safety_identifier ?? null,
        store: r.store ?? true,
        temperature: r.temperature ?? null,
        text: { format: { type: 'text' }, verbosity: 'medium', ...r.text },
        tool_choice: r.tool_choice ?? 'auto',
        tools: r.tools ?? [],
        top_logprobs: r.top_logprobs ?? 0,
        top_p: r.top_p ?? null,
        truncation: r.truncation ?? 'disabled',
        usage: a.usage ?? null,
        user: r.user ?? null,
        metadata: r.metadata ?? {},
        completed_at: a.completedAt ?? null,
        switchyard,
    };
}
