"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.StreamAccumulator = void 0;
/** Builds the final TextResult out of a stream's canonical events (what the client saw, exactly). */
class StreamAccumulator {
    produced = false;
    firstTokenAt;
    text = '';
    reasoning = '';
    calls = [];
    usage;
    finishReason;
    modelVersion;
    push(ev) {
        switch (ev.type) {
            case 'text_delta':
                this.mark();
                this.text += ev.text;
                break;
            case 'reasoning_delta':
                this.mark();
                this.reasoning += ev.text;
                break;
            case 'tool_call_start':
                this.mark();
                this.calls[ev.index] = { callId: ev.callId, name: ev.name, args: '' };
                break;
            case 'tool_call_delta':
                if (this.calls[ev.index])
                    this.calls[ev.index].args += ev.argumentsDelta;
                break;
            case 'usage':
                this.usage = ev.usage;
                break;
            case 'finish':
                this.finishReason = ev.finishReason;
                this.modelVersion = ev.modelVersion ?? this.modelVersion;
                break;
            default:
                break;
        }
    }
    /** Output so far in estimated tokens (about 4 characters a token), for the runaway-stream guard. */
    outputTokens() {
        return Math.ceil(this.outputChars() / 4);
    }
    outputChars() {
        return this.text.length + this.reasoning.length + this.calls.reduce((n, c) => n + (c?.args.length ?? 0), 0);
    }
    mark() {
        this.produced = true;
        this.firstTokenAt ??= Date.now();
    }
    /** The result so far; without the provider's usage, tokens are estimated (about 4 characters a token). */
    result(inputEstimate) {
        const output = [];
        if (this.reasoning)
            output.push({ type: 'reasoning', id: 'rs_0', summary: [{ type: 'summary_text', text: this.reasoning }] });
        if (this.text || this.calls.length === 0)
            output.push({ type: 'message', id: 'msg_0', role: 'assistant', content: [{ type: 'output_text', text: this.text }] });
        this.calls.filter(Boolean).forEach((c, i) => output.push({ type: 'function_call', id: `fc_${i}`, call_id: c.callId, name: c.name, arguments: c.args }));
        const outputChars = this.outputChars();
        return {
            output,
            finishReason: this.finishReason ?? (this.calls.length ? 'tool_calls' : 'error'),
            usage: this.usage ?? { inputTokens: inputEstimate, outputTokens: Math.ceil(outputChars / 4) },
            modelVersion: this.modelVersion,
        };
    }
}
exports.StreamAccumulator = StreamAccumulator;
