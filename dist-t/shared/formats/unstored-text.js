"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.withoutText = withoutText;
/**
 * A result without the conversation's text, for `store: false` responses: what billing and history need (usage,
 * finish reason, the shape of the output) stays; message text, call arguments, reasoning and log-probabilities go.
 */
function withoutText(result) {
    const { logprobs: _dropped, ...rest } = result;
    return {
        ...rest,
        output: result.output.map((o) => {
            if (o.type === 'message')
                return { ...o, content: o.content.map((c) => ({ ...c, text: '' })) };
            if (o.type === 'function_call')
                return { ...o, arguments: '' };
            return { ...o, summary: [] };
        }),
    };
}
